"""NCCL in the serving image (tests_network/test_collective.py) beyond the pair's scenarios: the healthy
4-ring and 8-switch pass, a fault fails its own check on them naming the rank, an interrupted run leaves
no container on any node (selftests/e2e/test_read_only.py proves every command it sends is its own)."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from selftests.e2e.bad_day import interrupt, pgrep, wait_for
from selftests.e2e.runner import run_suite, start_suite

CHECKS = ("test_collective_ranks_join", "test_collective_values_exact", "test_collective_transport",
          "test_collective_bandwidth")  # fmt: skip
ONLY = ("-m", "network", "-k", "collective")


def _verdicts(run) -> dict[str, str]:
    return {tid.split("::")[-1]: case["outcome"] for tid, case in run.junit.items() if "test_collective.py" in tid}


@pytest.mark.parametrize("base", ["healthy-ring4", "healthy-switch8"])
def test_a_healthy_ring_and_switch_pass_with_every_rank(base, tmp_path):
    run = run_suite(tmp_path, "--sim", f"before-start@{base}", *ONLY, timeout=300)
    assert run.rc == 0, run.out
    assert _verdicts(run) == dict.fromkeys(CHECKS, "passed"), run.out
    nodes = 4 if base.endswith("4") else 8
    facts = next(r for r in run.summary["checks"] if r["check"] == "test_collective_transport")["facts"]
    assert len([k for k in facts if k.startswith("nccl_network_")]) == nodes, facts
    assert set(v for k, v in facts.items() if k.startswith("nccl_network_")) == {"IB"}


@pytest.mark.parametrize(
    ("ref", "check", "node"),
    [
        ("collective-bootstrap-blocked@healthy-ring4", "test_collective_ranks_join", "thinkstationpgx-32"),
        ("collective-wrong-result@healthy-switch8", "test_collective_values_exact", "thinkstationpgx-32"),
    ],
)
def test_a_fault_on_the_ring_and_switch_fails_its_own_check_naming_the_rank(ref, check, node, tmp_path):
    run = run_suite(tmp_path, "--sim", ref, *ONLY, timeout=300)
    failed = {t.split("::")[-1] for t in run.failed()}
    assert failed == {check}, run.out
    message = next(row["message"] for tid, row in run.junit.items() if tid.endswith(check))
    assert f"rank 1 on {node}" in message, message


def test_an_interrupted_collective_leaves_no_container_on_any_node(tmp_path):
    """SIGTERM while rank 1's NCCL hangs: the run ends interrupted, says what it removed, and no rank's
    container (a process of its own session in the sim, as a container outlives its docker CLI) is left."""
    proc = start_suite(tmp_path, "--sim", "collective-hang", *ONLY)
    pids = lambda: sorted(Path(f"/run/gb10sim/{proc.pid}").glob("*/containers/*.pid"))  # noqa: E731
    wait_for(lambda: len(pids()) == 2, "both ranks' containers", proc, timeout=120)
    time.sleep(0.5)
    ended = interrupt(proc, tmp_path, signal.SIGTERM)
    assert ended.run.rc == 2, ended.run.out
    assert "the collective in the serving image was cut short; removed: gb10check-collective-" in ended.run.out
    assert re.search(r"removed: .*-r0 on thinkstationpgx-30.*-r1 on thinkstationpgx-32", ended.run.out), ended.run.out
    assert not pgrep("--name gb10check-collective-"), subprocess.run(
        ["pgrep", "-af", "gb10check-collective-"], capture_output=True, text=True
    ).stdout
