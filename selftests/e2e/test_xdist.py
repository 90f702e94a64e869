"""`pytest -n 2` gives what a serial run gives: verdicts, JUnit, summary rows, hints, troubleshooting.

The simulated cluster comes up once (in the controller; the workers inherit its network
namespace), each worker takes each node's snapshot at most once, and the rows, hints and
transports the workers saw reach the controller's reports.
"""

from __future__ import annotations

import re

import pytest

from selftests.e2e.runner import SuiteRun, run_suite, sim_leftovers

pytestmark = pytest.mark.sim
_SECONDS = re.compile(r"\d+(\.\d+)? m?s\b")  # durations and round trips: measured, not verdicts
# what a passing comparison found is a measurement (Gb/s, tokens/s, a counter): a value of the run
_NUMBER = re.compile(r"\d+(\.\d+)?")
_TOKEN = re.compile(r"gb10check-bw\.\w+\.")  # each bandwidth run's own file names


def _sent(run: SuiteRun, node: str) -> set[str]:
    return {_TOKEN.sub("gb10check-bw.T.", c) for c in run.summary["transports"][node]["sent"]}


def _rows(run: SuiteRun) -> dict[str, tuple]:
    assert run.summary is not None, run.out
    return {
        r["test"]: (
            r["verdict"],
            r["node"],
            tuple(r["hints"]),
            tuple(
                (m["what"], m["expected"], (_NUMBER if m["ok"] else _SECONDS).sub("N", m["found"]), m["ok"])
                for m in r["evidence"]
            ),
        )
        for r in run.summary["checks"]
    }


def _troubleshooting(run: SuiteRun) -> set[str]:
    if "= troubleshooting =" not in run.out:
        return set()
    section = run.section("troubleshooting")
    return set(re.findall(r"^\[([a-z0-9-]+)\] ", section, re.MULTILINE))


@pytest.mark.parametrize("scenario", ["healthy", "driver-mismatch", "node-down"])
def test_two_workers_report_what_a_serial_run_reports(tmp_path, scenario):
    serial = run_suite(tmp_path / "serial", "--sim", scenario)
    parallel = run_suite(tmp_path / "parallel", "--sim", scenario, "-n", "2")
    assert parallel.rc == serial.rc, parallel.out
    assert parallel.outcomes() == serial.outcomes()
    assert parallel.failed() == serial.failed()
    assert {t: c["message"][:60] for t, c in parallel.junit.items()} == {
        t: c["message"][:60] for t, c in serial.junit.items()
    }
    assert _rows(parallel) == _rows(serial)
    assert _troubleshooting(parallel) == _troubleshooting(serial)
    if scenario != "healthy":
        assert _troubleshooting(serial), serial.out
    for node, t in parallel.summary["transports"].items():
        if scenario == "node-down" and node == "thinkstationpgx-32":
            continue
        assert 1 <= t["connections"] <= 2, (node, t)  # at most one snapshot session per worker
        assert _sent(parallel, node) == _sent(serial, node)
    assert sim_leftovers(parallel.pid) == []
