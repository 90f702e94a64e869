"""The run as a node_exporter textfile-collector file (`--prometheus=FILE`): prometheus-client's
exposition format, written as every output is (gb10check/atomic.py: a new file renamed over FILE,
so the collector never reads half a file and a symlink at FILE is replaced, not written through).
Built from the run's summary (the JSON of gb10check/reporting/report.py), so what Prometheus
sees is what the reports say.

    gb10check_check_passed{check, node, hint}   1 passed, 0 failed (skipped checks are left out)
    gb10check_figure{figure, check, node, peer, rail}  what a check measured (Gb/s, tokens/s, seconds,
                                                 GiB); a pair's figure names both ends and the rail
    gb10check_checks{verdict}                    how many checks had each verdict
    gb10check_node_up{node}                      0 when the node could not be reached over SSH
    gb10check_regressions, gb10check_recoveries  against the previous run (--history)
    gb10check_run_timestamp_seconds, gb10check_run_duration_seconds, gb10check_run_interrupted
"""

from __future__ import annotations

import calendar
import time
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, generate_latest
from prometheus_client.openmetrics.exposition import ALLOWUTF8

from gb10check import atomic
from gb10check.safe_text.neutralise import neutralise, neutralise_tree

__all__ = ["UNREACHABLE", "registry_of", "write"]

UNREACHABLE = "node-unreachable"


def registry_of(summary: dict[str, Any], nodes: list[str]) -> CollectorRegistry:
    # a label is one line of text whatever a node printed: its control characters shown, never written raw
    summary, nodes = neutralise_tree(summary), [neutralise(n) for n in nodes]  # type: ignore[assignment]
    registry = CollectorRegistry()
    passed = Gauge(
        "gb10check_check_passed",
        "1 when the check passed, 0 when it failed (skipped checks are not exported)",
        ["check", "node", "hint"],
        registry=registry,
    )
    figure = Gauge(
        "gb10check_figure",
        "what a check measured: Gb/s, tokens/s, seconds, GiB (the unit is in the figure's name)",
        ["figure", "check", "node", "peer", "rail"],
        registry=registry,
    )
    counts = Gauge("gb10check_checks", "checks of the run by verdict", ["verdict"], registry=registry)
    up = Gauge("gb10check_node_up", "0 when the suite could not reach the node over SSH", ["node"], registry=registry)
    for row in summary.get("checks", []):
        node, verdict = row.get("node") or "", row["verdict"]
        if verdict in ("passed", "failed", "error"):
            ids = ",".join(row.get("hints") or [])
            passed.labels(row["check"], node, ids).set(1 if verdict == "passed" else 0)
        ends = row.get("nodes") or []
        peer = ends[1] if len(ends) > 1 else ""
        for name, value in (row.get("figures") or {}).items():
            figure.labels(name, row["check"], node, peer, row.get("rail") or "").set(value)
    for verdict, n in (summary.get("counts") or {}).items():
        counts.labels(verdict).set(n)
    unreachable = {r.get("node") for r in summary.get("checks", []) if UNREACHABLE in (r.get("hints") or [])}
    for node in nodes:
        up.labels(node).set(0 if node in unreachable else 1)
    history = summary.get("history") or {}
    Gauge("gb10check_regressions", "checks that passed in the previous run and fail now", registry=registry).set(
        len(history.get("regressions", []))
    )
    Gauge("gb10check_recoveries", "checks that failed in the previous run and pass now", registry=registry).set(
        len(history.get("recoveries", []))
    )
    started = time.strptime(summary["started"], "%Y-%m-%dT%H:%M:%S%z") if summary.get("started") else None
    stamp = calendar.timegm(started) - (started.tm_gmtoff or 0) if started else time.time()
    Gauge("gb10check_run_timestamp_seconds", "when the run started (Unix time)", registry=registry).set(stamp)
    Gauge("gb10check_run_duration_seconds", "how long the run took", registry=registry).set(summary.get("duration", 0))
    Gauge("gb10check_run_interrupted", "1 when a signal cut the run short", registry=registry).set(
        1 if summary.get("interrupted") else 0
    )
    return registry


def write(path: Path, summary: dict[str, Any], nodes: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write(path, generate_latest(registry_of(summary, nodes), ALLOWUTF8))  # as write_to_textfile escapes
