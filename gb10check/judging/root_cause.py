"""Root cause first: the order in which a run's hints (and so its failures) are shown, the same in the
terminal, summary.md and report.html.

A node that cannot be reached explains every check about it; a host's or the fabric's fault (preflight,
network) explains the service's, never the reverse; the API that does not answer (down, or timing out)
explains the API checks that follow it, and is itself explained by what the service's diagnosis found (a
log line, a container that exited: listed before it on the same rows), by a start that has not reached
serving yet, and by an engine that is stuck
(its counter frozen while requests wait), which a rank that stopped (its timeout in the logs) explains.
Within a tier, the order the run met them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gb10check.errors import NodeUnreachable, ServiceError

__all__ = [
    "API_DOWN",
    "BAD",
    "ENGINE_STATE",
    "FOLLOWS",
    "NODE_DOWN",
    "STAGE_FILES",
    "TRENDS_FILE",
    "compared",
    "failures_in_order",
    "finding_of",
    "hint_order",
    "stage_of",
]

BAD = ("failed", "error", "interrupted")
TRENDS_FILE = "gb10check/trends"  # fixtures/history.py's trend checks
STAGE_FILES = (("tests_preflight/", "preflight"), ("tests_network/", "network"), ("tests_service/", "service"),
               (TRENDS_FILE, "trends"))  # fmt: skip
NODE_DOWN = NodeUnreachable.hint_ids
API_DOWN = (*ServiceError.hint_ids, "service-timeout")
ENGINE_STATE = ("engine-stuck", "rank-wedged")  # a rank that stopped (its timeout in the logs) stalls the engine
# a hint that follows from another of the same stage when both are in a run: shown after it
FOLLOWS = {
    "gpu-not-in-container": ("driver-version-mismatch", "driver-reboot-pending", "docker-daemon-down"),
    "driver-reboot-pending": ("driver-version-mismatch",),
    # a node whose old module is still loaded differs from the others because of it
    "driver-differs": ("driver-version-mismatch", "driver-reboot-pending"),
    "bw-connect-failed": ("cable-crossed",),  # perftest's TCP exchange over a cable that reaches another node
    "engine-stuck": ("rank-wedged",),
    # a figure below the rail's minimum over a port that negotiated less than the rail's rate
    "bw-low": ("link-rate-low", "switch-port-rate-low"),
    # a node's .env with another node's NODE_RANK: its compose resolves that rank, and two nodes claim it
    "distributed-args-wrong": ("env-mismatch",),
    "node-rank-repeated": ("env-mismatch", "distributed-args-wrong"),
    # a control plane over a crossed rail; a GID shifted by both halves on one subnet, or one device's alone
    "master-unreachable": ("cable-crossed",),
    "gid-index-mismatch": ("halves-one-subnet", "gid-index-per-device"),
}


def stage_of(test: str) -> str:
    """The stage a check belongs to, from its test id (the folder it lives in); `run` for none."""
    return next((stage for prefix, stage in STAGE_FILES if test.startswith(prefix)), "run")


def hint_order(troubleshooting: Iterable[str], checks: Sequence[Mapping[str, Any]]) -> list[str]:
    """The hints of the run's failures, root cause first: a node down; the hints of the preflight and network
    stages; what the API's failure follows from (the diagnosis listed before the API's own hint on its rows,
    a stuck engine); the API down; the API checks' own; the trends. `checks` are summary rows (`test`,
    `verdict`, `hints`), in the order the run met them."""
    met: list[str] = list(troubleshooting)
    rows = [r for r in checks if r["verdict"] in BAD]
    for row in rows:
        met += [h for h in row.get("hints") or [] if h not in met]
    explains_api: set[str] = {*ENGINE_STATE, "startup-incomplete"}  # a start not yet serving: no API either
    stage_first: dict[str, str] = {}
    for row in rows:
        ids = list(row.get("hints") or [])
        down = [i for i, h in enumerate(ids) if h in API_DOWN]
        if down:
            explains_api |= {h for h in ids[: down[0]] if h not in API_DOWN}
        for h in ids:
            stage_first.setdefault(h, stage_of(row["test"]))

    def tier(hint: str) -> int:
        stage = stage_first.get(hint, "run")
        if hint in NODE_DOWN:
            return 0
        if stage in ("preflight", "network", "run"):
            return 1
        if hint in explains_api:
            return 2
        if hint in API_DOWN:
            return 3
        return 4 if stage == "service" else 5

    def depth(hint: str) -> int:  # how many hints of this run it follows from, one after the other
        return max((1 + depth(cause) for cause in FOLLOWS.get(hint, ()) if cause in met), default=0)

    return sorted(met, key=lambda h: (tier(h), depth(h), met.index(h)))


def finding_of(row: Mapping[str, Any]) -> str:
    """What a failed check found: its last failed comparison's `found`, else its message's first line (a
    check that found nothing to compare: a node that cannot be asked)."""
    failed = [e for e in row.get("evidence") or [] if not e.get("ok", True)]
    if failed:
        return str(failed[-1].get("found", ""))
    message = str(row.get("message") or "").strip()
    return message.split("\n", 1)[0]


def compared(row: Mapping[str, Any]) -> bool:
    """Whether a check compared anything before it failed (a node that cannot be asked leaves none)."""
    return bool(row.get("evidence"))


def failures_in_order(checks: Sequence[Mapping[str, Any]], order: Sequence[str]) -> list[Mapping[str, Any]]:
    """The failed rows, each under its first hint in `order` (root cause first); within a hint the error
    itself before the findings it explains (a node that cannot be asked: its checks compared nothing;
    rank 0's dark ports that follow from it did), but an error that only borrows the hint (an API request
    that timed out, explained by a rank's log) after the checks that found it, a check about one node
    before one between nodes (a port found down before the pings over it), then a finding of its own
    before one many checks repeat (wrong-model: the served name that differs before the eleven requests
    that got a 404 for it), else the run's order; a failure without a hint last."""
    rank = {h: i for i, h in enumerate(order)}
    failed = [r for r in checks if r["verdict"] in BAD]
    repeated = Counter(finding_of(r) for r in failed)

    def key(row: Mapping[str, Any]) -> tuple[int, bool, bool, bool, int]:
        first = min((rank[h] for h in row.get("hints") or [] if h in rank), default=len(rank))
        # an error listed under another check's finding (an API request that timed out, explained by a rank's
        # log): after the checks that found it; under a node down, the error is the finding and comes first
        borrowed = not compared(row) and (first == len(rank) or order[first] not in NODE_DOWN)
        return first, borrowed, compared(row), len(row.get("nodes") or []) > 1, repeated[finding_of(row)]

    return sorted(failed, key=key)
