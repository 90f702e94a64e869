"""gb10check's pytest plugin, one module per concern (see fixtures/)."""

pytest_plugins = ["fixtures.cluster", "fixtures.hints", "fixtures.reports"]
