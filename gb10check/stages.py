"""The stages an operator runs (`gb10check STAGE`): each one's pytest marker (None: every check) and when
it is run. The command line, its shell completion and report.html's "what to run" all read them here."""

from __future__ import annotations

__all__ = ["STAGES"]

STAGES = {
    "preflight": ("preflight", "before `docker compose up`: drivers, firewall, memory, images, weights, compose"),
    "network": ("network", "after cabling / netplan: links, RDMA ports, GIDs, reachability, bandwidth"),
    "service": ("service", "after startup: the API on rank 0"),
    "smoke": ("smoke", "after a reboot: the fast subset"),
    "all": (None, "every check"),
    "nightly": (None, "every check, for a scheduled job: add --history=DIR and --prometheus=FILE"),
}
