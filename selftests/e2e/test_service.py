"""The service stage against the simulated cluster, as an operator who just ran `docker compose up`
meets it: what the reports record on a healthy run, the startup wait and its memory watchdog (the
one opt-in action that changes a node), and the API down with the logs saying why."""

from __future__ import annotations

import re

import pytest

from selftests.e2e.runner import run_suite, sim_leftovers

pytestmark = pytest.mark.sim

R0, R1 = "thinkstationpgx-30", "thinkstationpgx-32"
STOP = "docker stop -t 30 vllm-qwen38"


def _rows(run):
    return {row["check"]: row for row in run.summary["checks"]}


def test_a_healthy_service_run_records_what_it_measured(tmp_path):
    run = run_suite(tmp_path, "--sim", "-m", "service")
    assert run.rc == 0, run.out
    rows = _rows(run)
    decode = rows[f"test_decode_speed[{R0}]"]["figures"]
    assert set(decode) == {"ttft_s", "tpot_s", "decode_tokens_per_s"} and decode["decode_tokens_per_s"] >= 200
    assert 0 < decode["ttft_s"] < 1 and 0 < decode["tpot_s"] < 0.05
    assert rows[f"test_reasoning_when_thinking[{R0}]"]["facts"] == {"reasoning_field": "reasoning"}
    assert rows[f"test_health_and_version[{R0}]"]["facts"] == {"vllm_version": "0.1.dev20073+g8e685d198"}
    md = (tmp_path / "reports" / "summary.md").read_text()
    for line in (
        "| decode_tokens_per_s |",
        "| ttft_s |",
        "| tpot_s |",
        "| reasoning_field | reasoning |",
        "| vllm_version | 0.1.dev20073+g8e685d198 |",
        "| nccl_transport | NET/IB rocep1s0f0, roceP2p1s0f0 |",
    ):
        assert line in md, line
    # JUnit consumers get the figures too
    props = run.junit[f"tests_service/test_decode_speed.py::test_decode_speed[{R0}]"]["properties"]
    assert float(props["figure decode_tokens_per_s"]) >= 200
    # (that the requests of the checks that do not depend on each other went at once is bench_sim.py's
    # figure: the service requests' time against the session's)
    assert not any(STOP in c for t in run.summary["transports"].values() for c in t["sent"])


def test_an_older_vllm_is_accepted_and_named(tmp_path):
    run = run_suite(tmp_path, "--sim", "vllm-0.11", "-m", "service")
    assert run.rc == 0, run.out
    rows = _rows(run)
    assert rows[f"test_reasoning_when_thinking[{R0}]"]["facts"] == {"reasoning_field": "reasoning_content"}
    assert rows[f"test_health_and_version[{R0}]"]["facts"] == {"vllm_version": "0.11.0"}


def test_the_wait_shows_progress_and_records_memory(tmp_path):
    run = run_suite(tmp_path, "--sim", "startup-slow", "-m", "service", "--wait-ready=60")
    assert run.rc == 0, run.out
    assert re.search(r"gb10check: waiting for http://localhost:20001/health: \d+ s of 60; MemAvailable "
                     rf"{R0} [\d.]+ GiB.*, {R1} [\d.]+ GiB", run.out), run.out  # fmt: skip
    health = _rows(run)[f"test_health_and_version[{R0}]"]
    ready = health["figures"]
    assert ready["ready_seconds"] > 0  # the sim started loading at bring-up; the suite waited for the rest
    # MemAvailable fell while the weights loaded: to what a started node keeps (12 and 15 GiB here; the API
    # listens only once the sim's start has written its last figure)
    assert ready[f"mem_available_gib_{R0}"] == pytest.approx(12, abs=1)
    assert ready[f"mem_available_gib_{R1}"] == pytest.approx(15, abs=1)
    # the logs were read after the wait: both nodes reached their last milestone
    rows = _rows(run)
    assert rows[f"test_startup_reached_serving[{R0}]"]["verdict"] == "passed"


def test_the_memory_watchdog_stops_the_containers_only_when_asked(tmp_path):
    watched = run_suite(tmp_path / "watch", "--sim", "memory-runaway", "-m", "service", "--wait-ready=60")
    stopped = run_suite(
        tmp_path / "stop", "--sim", "memory-runaway", "-m", "service", "--wait-ready=60", "--stop-on-low-memory"
    )
    for run in (watched, stopped):
        assert run.rc == 1
        message = run.junit[f"tests_service/test_models.py::test_health_and_version[{R0}]"]["message"]
        assert message.startswith("[memavailable-low]") and "MemAvailable fell below 5 GiB" in message, message
        # it failed when memory fell, not at the end of the wait's 60 s
        waited = re.search(r"MemAvailable fell below 5 GiB on .*, (\d+) s into the wait of 60", message)
        assert waited and int(waited[1]) < 60, message
    sent = {node: t["sent"] for node, t in stopped.summary["transports"].items()}
    assert all(STOP in commands for commands in sent.values()), sent
    message = stopped.junit[f"tests_service/test_models.py::test_health_and_version[{R0}]"]["message"]
    assert f"docker stop sent on {R0}, {R1}, now {R0} exited (exit 143), {R1} exited (exit 143)" in message, message
    # without the flag the suite changes nothing
    assert not any(STOP in c for t in watched.summary["transports"].values() for c in t["sent"])
    assert sim_leftovers(stopped.pid) == []


def test_with_the_api_down_every_api_check_names_the_row_of_the_table(tmp_path):
    run = run_suite(tmp_path, "--sim", "follower-not-headless", "-m", "service")
    failed = run.failed()
    api_checks = [tid for tid in failed if "test_logs.py" not in tid]
    assert len(api_checks) >= 10
    for tid in api_checks:
        assert failed[tid] == {"follower-not-headless", "container-exited", "service-unreachable"}, (tid, failed[tid])
        message = run.junit[tid]["message"]
        assert message.startswith("[follower-not-headless] [container-exited] [service-unreachable] "), message
        assert "thinkstationpgx-32's log shows [follower-not-headless]" in message
        assert "on thinkstationpgx-32 [container-exited] its container exited (exit 1)" in message
    # the troubleshooting section has the row once, with the follower's fix
    section = run.section("troubleshooting")
    assert section.count("[follower-not-headless] The follower node runs a full API server") == 1


def test_the_soak_keeps_a_load_and_fails_when_tokens_stop(tmp_path):
    ok = run_suite(tmp_path / "ok", "--sim", "-m", "service", "-k", "soak", "--soak=0.1")
    assert ok.rc == 0, ok.out
    row = _rows(ok)[f"test_soak[{R0}]"]
    assert row["verdict"] == "passed" and row["figures"]["soak_requests"] > 8
    stuck = run_suite(tmp_path / "stuck", "--sim", "engine-stuck", "-m", "service", "-k", "soak", "--soak=0.5")
    assert stuck.failed() == {f"tests_service/test_correctness.py::test_soak[{R0}]": {"engine-stuck"}}, stuck.out
    message = stuck.junit[f"tests_service/test_correctness.py::test_soak[{R0}]"]["message"]
    assert re.search(r"no token generated for 6 s with [1-9]\d* request\(s\) running", message), message
    # it failed at the stall, not at the end of the soak's 30 s
    assert _rows(stuck)[f"test_soak[{R0}]"]["figures"]["soak_seconds"] < 30
