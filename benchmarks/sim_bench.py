"""What the benchmarks that bring up the simulated cluster share: their command line and the check that
the sim can run here."""

from __future__ import annotations

import argparse
import os
import sys
import time

from sim.cluster import why_not_available


def arguments(doc: str | None, runs: int, sim: str) -> argparse.ArgumentParser:
    """--runs and --sim (scenarios, comma-separated), with the benchmark's docstring as its help."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=runs)
    parser.add_argument("--sim", default=sim, help="scenarios, comma-separated")
    return parser


def can_run(name: str) -> bool:
    """Whether the sim runs here (root, the tools); if not, says why on stderr."""
    reason = why_not_available()
    if reason:
        print(f"{name}: {reason}", file=sys.stderr)
    return not reason


def dated(what: str = "") -> str:
    """The first line of a benchmark's output: the date and the machine's cores."""
    return f"{time.strftime('%Y-%m-%d')}: {os.cpu_count()} cores" + (f"; {what}" if what else "")
