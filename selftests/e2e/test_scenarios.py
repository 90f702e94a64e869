"""The acceptance suite against every builtin scenario: exactly which checks fail, with which hints."""

from __future__ import annotations

import pytest

from selftests.e2e.runner import run_suite, sim_leftovers

pytestmark = pytest.mark.sim

DRV = "tests_preflight/test_driver.py::test_driver_versions_match"
LINK = "tests_network/test_roce_links.py::test_roce_link_up"
MODEL = "tests_service/test_models.py::test_served_model"
R0, R1 = "thinkstationpgx-30", "thinkstationpgx-32"
ALL_TESTS = {
    f"{DRV}[{R0}]",
    f"{DRV}[{R1}]",
    f"{LINK}[{R0}-enp1s0f0np0]",
    f"{LINK}[{R1}-enp1s0f0np0]",
    f"{LINK}[{R0}-enP2p1s0f0np0]",
    f"{LINK}[{R1}-enP2p1s0f0np0]",
    MODEL,
}

EXPECTED_FAILURES = {
    "healthy": {},
    "driver-mismatch": {f"{DRV}[{R1}]": {"driver-version-mismatch"}},
    "link-down": {
        f"{LINK}[{R0}-enP2p1s0f0np0]": {"roce-link-down"},  # the peer of a down port sees no carrier
        f"{LINK}[{R1}-enP2p1s0f0np0]": {"roce-link-down"},
    },
    "wrong-model": {MODEL: {"model-not-registered"}},
    "node-down": {
        f"{DRV}[{R1}]": {"node-unreachable"},
        f"{LINK}[{R1}-enp1s0f0np0]": {"node-unreachable"},
        f"{LINK}[{R1}-enP2p1s0f0np0]": {"node-unreachable"},
        f"{LINK}[{R0}-enp1s0f0np0]": {"roce-link-down"},
        f"{LINK}[{R0}-enP2p1s0f0np0]": {"roce-link-down"},
    },
}


@pytest.mark.parametrize("scenario", list(EXPECTED_FAILURES))
def test_scenario_fails_exactly_what_the_fault_explains(scenario, tmp_path):
    run = run_suite(tmp_path, "--sim", scenario)
    expected = EXPECTED_FAILURES[scenario]
    assert set(run.junit) == ALL_TESTS, run.out
    assert run.failed() == expected, run.out
    assert run.rc == (1 if expected else 0), run.out
    for tid in expected:
        message = run.junit[tid]["message"]
        for hint_id in expected[tid]:
            assert f"[{hint_id}]" in message, f"{tid}: the JUnit failure message lacks [{hint_id}]: {message}"
    assert sim_leftovers(run.pid) == []
    # the terminal run ends with the troubleshooting section for what failed
    if expected:
        tail = run.out.split("= troubleshooting =", 1)[1]
        for hint_id in set().union(*expected.values()):
            assert f"[{hint_id}]" in tail


def test_driver_mismatch_message_gives_both_versions(tmp_path):
    run = run_suite(tmp_path, "--sim", "driver-mismatch", "-m", "preflight")
    message = run.junit[f"{DRV}[{R1}]"]["message"]
    assert "on thinkstationpgx-32" in message
    assert "kernel module 580.159.03, userspace NVML library 580.173" in message
    assert "Reboot that node" in message


def test_markers_select_their_folder(tmp_path):
    for marker, prefix in (
        ("preflight", "tests_preflight/"),
        ("network", "tests_network/"),
        ("service", "tests_service/"),
    ):
        run = run_suite(tmp_path / marker, "--sim", "-m", marker)
        assert run.rc == 0, run.out
        assert run.junit and all(tid.startswith(prefix) for tid in run.junit), run.junit.keys()


def test_summary_records_verdicts_measurements_and_hints(tmp_path):
    run = run_suite(tmp_path, "--sim", "wrong-model")
    assert run.summary is not None
    rows = {r["test"]: r for r in run.summary["checks"]}
    assert set(rows) == ALL_TESTS
    model = rows[MODEL]
    assert (model["verdict"], model["node"], model["hints"]) == ("failed", R0, ["model-not-registered"])
    assert "served model name: qwen3.8-flash-next" in model["expected"]
    assert "served model name: qwen3-next" in model["found"]
    assert rows[f"{DRV}[{R0}]"]["verdict"] == "passed"
    assert rows[f"{DRV}[{R0}]"]["found"] == [
        "NVIDIA driver, kernel module vs userspace (NVML): kernel module 580.173.02, userspace 580.173.02"
    ]
    md = (tmp_path / "reports" / "summary.md").read_text()
    assert "| test_served_model | thinkstationpgx-30 | failed |" in md and "[model-not-registered]" in md


def test_one_snapshot_round_trip_per_node(tmp_path):
    run = run_suite(tmp_path, "--sim")
    assert run.summary["transports"] == {
        R0: {"connections": 1, "commands": 1},
        R1: {"connections": 1, "commands": 1},
    }


def test_sim_scenario_file_with_verbatim_stub_output(tmp_path):
    scenario = tmp_path / "garbage-smi.toml"
    scenario.write_text(
        'description = "rank 1 nvidia-smi prints garbage"\nbase = "healthy"\n'
        '[[nodes.thinkstationpgx-32.stubs]]\ntool = "nvidia-smi"\nmatch = "--query-gpu"\n'
        'stdout = "Segmentation fault\\n"\nrc = 139\n'
    )
    run = run_suite(tmp_path, f"--sim={scenario}", "-m", "preflight")
    assert run.failed() == {f"{DRV}[{R1}]": {"unexpected-output"}}, run.out
    message = run.junit[f"{DRV}[{R1}]"]["message"]
    assert "cannot parse nvidia-smi" in message and "Segmentation fault" in message and "exit status 139" in message


def test_hung_tool_is_a_timeout_verdict_not_a_hung_suite(tmp_path):
    scenario = tmp_path / "hung-smi.toml"
    scenario.write_text('base = "healthy"\n[[nodes.thinkstationpgx-32.stubs]]\ntool = "nvidia-smi"\ndelay = 120\n')
    run = run_suite(tmp_path, f"--sim={scenario}", "-m", "preflight", env={}, timeout=90)
    failed = run.failed()
    assert set(failed) == {f"{DRV}[{R1}]"}, run.out
    assert "command-timeout" in failed[f"{DRV}[{R1}]"]
    assert "timed out after" in run.junit[f"{DRV}[{R1}]"]["message"]


def _start_hung_run(tmp_path):
    import subprocess
    import sys
    import time

    from selftests.e2e.runner import PROJECT

    scenario = tmp_path / "hung.toml"
    scenario.write_text('base = "healthy"\n[[nodes.thinkstationpgx-32.stubs]]\ntool = "nvidia-smi"\ndelay = 120\n')
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            f"--sim={scenario}",
            f"--reports-dir={tmp_path / 'reports'}",
            "-m",
            "preflight",
        ],
        cwd=PROJECT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while not list((tmp_path / "reports").glob("*")) and not sim_leftovers(proc.pid):
        assert time.monotonic() < deadline and proc.poll() is None, "the run never brought the sim up"
        time.sleep(0.1)
    time.sleep(1.5)  # into the hung snapshot
    return proc


def test_sigterm_tears_down_and_still_writes_reports(tmp_path):
    import json
    import signal

    proc = _start_hung_run(tmp_path)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2, out  # pytest's "interrupted"
    assert sim_leftovers(proc.pid) == []
    summary = json.loads((tmp_path / "reports" / "summary.json").read_text())
    assert summary["interrupted"] is True


def test_a_killed_run_is_cleaned_by_the_next(tmp_path):
    import signal

    proc = _start_hung_run(tmp_path)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert sim_leftovers(proc.pid), "SIGKILL should have left the sim behind"
    run_suite(tmp_path / "next", "--sim", "-m", "preflight")
    assert sim_leftovers(proc.pid) == []
