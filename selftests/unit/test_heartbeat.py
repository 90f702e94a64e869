"""Piped into a file or a CI log, a run is never silent for more than about 5 s: a line says what runs,
on which node, for how long, on a line of its own (pytest's dots before it are ended)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fixtures import heartbeat, interrupt

ROOT = Path(heartbeat.__file__).resolve().parent.parent


@pytest.mark.slow
def test_a_piped_run_says_what_runs_every_few_seconds(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    pytester.makeconftest("pytest_plugins = ['fixtures.interrupt', 'fixtures.heartbeat']")
    pytester.makepyfile(
        test_waits="""
        import time, pytest

        def test_quick():
            pass

        @pytest.mark.parametrize("pair", ["spark-01-spark-02"])
        def test_waits(pair):
            print("captured, not shown")
            time.sleep(heartbeat_seconds)
        """.replace("heartbeat_seconds", str(heartbeat.EVERY + 1.5))
    )
    result = pytester.runpytest_subprocess("-q")  # its stdout is a pipe, as in a CI log
    assert result.ret == 0
    beats = [line for line in result.outlines if line.startswith("gb10check: ")]
    assert beats, result.outlines
    assert all(re.fullmatch(r"gb10check: \d+ s in: test_waits\[spark-01-spark-02\], for \d+ s", b) for b in beats)
    assert "captured, not shown" not in result.stdout.str()
    assert result.outlines[0].startswith(".") and not result.outlines[0].startswith(".gb10check")


def test_the_line_names_the_nodes_of_a_check_and_the_stage_between_checks(monkeypatch):
    class Config:
        stash = pytest.Stash()

    beat = heartbeat.Heartbeat(Config(), 1)  # type: ignore[arg-type]
    monkeypatch.setattr(beat, "_nodes", lambda: ["spark-01", "spark-02", "spark-03"])
    beat.started = 100.0
    beat.running = {"t.py::test_bw[spark-01-spark-02-enp1s0f0np0]": 110.0, "t.py::test_other": 112.0}
    assert beat.line(130.0) == (
        "gb10check: 30 s in: test_bw[spark-01-spark-02-enp1s0f0np0] on spark-01, spark-02, for 20 s"
        " (and 1 more running)"
    )
    beat.running = {}
    monkeypatch.setattr(interrupt.STATE, "stage", f"{interrupt.AFTER}t.py::test_bw[x]")
    assert beat.line(131.0) == "gb10check: 31 s in: between checks, after test_bw[x]"
    monkeypatch.setattr(interrupt.STATE, "stage", "start-up")
    assert beat.line(101.0).startswith("gb10check: 1 s in: starting: the inventory")
    monkeypatch.setattr(interrupt.STATE, "stage", "collection\x1b[2J")
    assert "\x1b" not in beat.line(101.0)
