"""The bandwidth test on the sim: figures per link and aggregate in the summary, the functional run
apart from the performance thresholds, and nothing of perftest left on either node afterwards."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from selftests.e2e.runner import run_scenario, run_suite, sim_leftovers

pytestmark = pytest.mark.sim

BW = "tests_network/test_bandwidth.py::"
PAIR = "thinkstationpgx-30-thinkstationpgx-32"
LOG = re.compile(r"/tmp/gb10check-bw\.\w+\.\d+")


def _nothing_left(run) -> None:
    """This run's (other self-tests may run beside it): no process under its sim folder (perftest
    servers and clients included), and none of the log and pid files its servers wrote."""
    assert sim_leftovers(run.pid) == []
    pattern = f"/run/gb10sim/{run.pid}/.*ib_write_bw"
    assert subprocess.run(["pgrep", "-f", pattern], capture_output=True).returncode == 1
    logs = {m for c in run.summary["transports"]["thinkstationpgx-32"]["sent"] for m in LOG.findall(c)}
    assert logs and [p for log in logs for p in (log, log + ".pid") if Path(p).exists()] == []


def test_figures_per_link_and_aggregate(tmp_path):
    run = run_suite(tmp_path, "--sim", "-m", "network", "-k", "rdma_bandwidth or rdma_write")
    assert run.rc == 0 and run.summary is not None, run.out
    found = {c["check"]: c["evidence"][-1]["found"] for c in run.summary["checks"]}
    assert found == {
        f"test_rdma_write_runs[{PAIR}-enp1s0f0np0]": "109.00 Gb/s",
        f"test_rdma_write_runs[{PAIR}-enP2p1s0f0np0]": "109.00 Gb/s",
        f"test_rdma_bandwidth[{PAIR}-enp1s0f0np0]": "109.00 Gb/s",
        f"test_rdma_bandwidth[{PAIR}-enP2p1s0f0np0]": "109.00 Gb/s",
        f"test_rdma_bandwidth_all_rails_at_once[{PAIR}]": "218.00 Gb/s (enp1s0f0np0 109.00, enP2p1s0f0np0 109.00)",
    }
    assert "bandwidth 1s per run, min enp1s0f0np0 90, enP2p1s0f0np0 90 Gb/s" in run.out  # the header
    _nothing_left(run)


def test_a_slow_link_is_a_performance_failure_only(tmp_path):
    """link2-slow without the performance marker: the functional run passes, the thresholds are not run."""
    run = run_suite(tmp_path, "--sim=link2-slow", "-m", "network and not performance")
    assert run.rc == 0, run.out
    assert f"{BW}test_rdma_write_runs[{PAIR}-enP2p1s0f0np0]" in run.junit
    assert not [t for t in run.junit if "test_rdma_bandwidth" in t or "test_rdma_port_rate" in t]
    _nothing_left(run)


def test_a_running_container_skips_the_run_unless_asked(tmp_path):
    # before start, but rank 1's container runs; the inventory keeps the default (no bandwidth while serving)
    body = (
        'base = "healthy"\n[deployment]\nrunning = false\n[nodes.thinkstationpgx-32.docker.container]\n'
        'name = "vllm-qwen38"\n[inventory.thresholds]\nbandwidth_while_serving = false\n'
    )
    run = run_scenario(tmp_path, body, "-m", "network", "-k", "rdma_write")
    assert run.rc == 0 and set(run.skipped()) == {
        f"{BW}test_rdma_write_runs[{PAIR}-enp1s0f0np0]",
        f"{BW}test_rdma_write_runs[{PAIR}-enP2p1s0f0np0]",
    }, run.out
    assert all("container runs on thinkstationpgx-32" in r for r in run.skipped().values())
    (tmp_path / "asked").mkdir()
    asked = run_scenario(tmp_path / "asked", body, "-m", "network", "-k", "rdma_write", "--bandwidth")
    assert asked.rc == 0 and asked.skipped() == {} and len(asked.junit) == 2, asked.out
    _nothing_left(asked)
