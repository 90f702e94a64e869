"""gb10check's pytest plugin, one module per concern (see fixtures/)."""

pytest_plugins = [
    "fixtures.interrupt",
    "fixtures.cluster",
    "fixtures.owners",
    "fixtures.hints",
    "fixtures.reports",
    "fixtures.history",
    "fixtures.terminal",
    "fixtures.heartbeat",
]
