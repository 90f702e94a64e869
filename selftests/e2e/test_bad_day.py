"""An operator's first bad day: signals, unreachable nodes, secrets, unusable outputs, bad input.

Each test reproduces a fault as an operator meets it and asserts what the suite must leave:
reports, one line per check, no secret, a clear error.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess

import pytest

from selftests.e2e import bad_day
from selftests.e2e.bad_day import FINAL_LINE, R1
from selftests.e2e.runner import run_suite, sim_leftovers

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root")


def _assert_interrupted(result: bad_day.Interrupted, signame: str, during: str | None = None) -> None:
    run = result.run
    assert run.rc == 2, run.out
    assert result.exit_seconds < 10, f"the run took {result.exit_seconds:.1f} s to stop after {signame}"
    assert run.summary is not None and run.summary["interrupted"] is True, run.out
    assert run.summary["interruption"]["signal"] == signame
    if during is not None:
        assert run.summary["interruption"]["during"] == during
    assert FINAL_LINE.match(run.out.rstrip().splitlines()[-1]), run.out[-2000:]
    assert run.junit, "no JUnit file, or an empty one"
    # the check that was running is an error "interrupted" in JUnit and the summary, never a pass
    cut = [row["test"] for row in run.summary["checks"] if row["verdict"] == "interrupted"]
    stage = run.summary["interruption"]["during"]
    if stage == "collection":  # before the first check: the session itself is the error case
        assert cut == ["gb10check::session"], run.summary["checks"]
        case = run.junit["gb10check.py::session"]
        assert case["outcome"] == "error" and "before the first check" in case["message"], case
    elif during != "bring-up":
        assert cut == [stage], run.summary["checks"]
        case = run.junit[cut[0]]
        assert case["outcome"] == "error" and "[run-interrupted]" in case["message"], case


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_on_a_real_inventory_still_writes_the_reports(tmp_path, signum):
    """The nightly run under systemd, cron or a CI limit: no --sim, a node that hangs the snapshot."""
    result = bad_day.sigterm_real_inventory(tmp_path, signum)
    _assert_interrupted(result, signal.Signals(signum).name)
    during = result.run.summary["interruption"]["during"]
    # the snapshot starts while pytest collects: the signal lands there or in the first check waiting for it
    assert during.startswith("tests_preflight/") or during == "collection", during


@pytest.mark.sim
@pytest.mark.parametrize(
    ("stage", "signum"),
    [
        ("bring-up", signal.SIGTERM),
        ("bring-up", signal.SIGINT),
        ("mid-check", signal.SIGTERM),
        ("mid-bandwidth", signal.SIGTERM),
    ],
    ids=["bring-up-SIGTERM", "bring-up-SIGINT", "mid-check-SIGTERM", "mid-bandwidth-SIGTERM"],
)
def test_a_signal_on_the_sim_at_any_moment_still_writes_the_reports(tmp_path, stage, signum):
    result = bad_day.signal_sim_at(tmp_path, stage, signum)
    if stage == "bring-up":
        _assert_interrupted(result, signal.Signals(signum).name, during="bring-up")
        assert set(result.run.junit) == {"gb10check.py::session"}
        assert result.run.junit["gb10check.py::session"]["outcome"] == "error"
        assert "while the simulated cluster came up" in result.run.out
    elif stage == "mid-check":
        # the container probes of all nodes run together, while the first node's check is set up
        gpu = "tests_preflight/test_container_gpu.py::test_gpu_visible_in_container[thinkstationpgx-30]"
        _assert_interrupted(result, signal.Signals(signum).name, during=gpu)
    else:
        _assert_interrupted(
            result, "SIGTERM", during="tests_network/test_bandwidth.py::test_rdma_write_runs[enp1s0f0np0]"
        )
    # no namespace, sshd, or ib_write_bw server or client of the run is left (their command lines name the run dir)
    assert sim_leftovers(result.run.pid) == []


@pytest.mark.sim
@pytest.mark.parametrize("fault", list(bad_day.UNREACHABLE))
def test_an_unreachable_node_costs_one_line_per_check(tmp_path, fault, healthy_seconds):
    run = bad_day.timed(tmp_path, f"--sim={bad_day.scenario_file(tmp_path, fault, bad_day.UNREACHABLE[fault])}")
    out = run.run.out
    checks = len(run.run.junit)
    assert run.within_output_bounds(), (
        f"{run.lines} lines, {run.junit_bytes} bytes of JUnit for {checks} checks:\n{out[:3000]}"
    )
    # the connect timeout paid once, not once per check (that would be ~40 x 2 s); 3 s of slack for a
    # loaded machine (self-tests under -n 2 share two cores)
    bound = healthy_seconds + bad_day.CONNECT_TIMEOUT + 3
    assert run.seconds <= bound, f"{fault}: {run.seconds:.1f} s against healthy {healthy_seconds:.1f} s + connect + 3"
    assert not re.search(r"gb10check/\w+\.py:\d+", out), "a traceback into the suite's own code"
    failed = run.run.failed()
    unreachable = {tid: h for tid, h in failed.items() if h == {"node-unreachable"}}
    rows = {r["test"]: r for r in run.run.summary["checks"]}
    said = {t: [e for e in rows[t]["evidence"] if not e["ok"]] for t in unreachable}
    no_evidence = {t for t in unreachable if not said[t]}
    assert no_evidence and not any("thinkstationpgx-30" in t for t in no_evidence), failed  # rank 0 has evidence
    for t in set(unreachable) - no_evidence:  # findings that need rank 1 (rank 0's dark ports, logins to it) say so
        assert f"this follows from {R1}" in said[t][-1]["detail"], (t, said[t])
    message = next(iter(run.run.junit[t]["message"] for t in sorted(no_evidence)))
    assert message.startswith(f"[node-unreachable] {R1} (") and "cannot connect within 2 s" in message, message
    assert out.count("[node-unreachable] A node cannot be reached over SSH") == 1  # the section once
    # the unreachable node's line stands once in FAILURES/ERRORS; each check has its line in the short summary
    failures = out.split("= short test summary info =", 1)[0]
    assert failures.count(f"[node-unreachable] {R1} (") == 1, failures
    assert re.search(r"\(the same for \d+ more checks: each has its line in the short test summary\)", failures)
    assert all(f"{tid}" in out.split("= short test summary info =", 1)[1] for tid in unreachable)
    assert sim_leftovers(run.run.pid) == []


@pytest.mark.sim
def test_under_ci_a_node_down_stays_within_the_bounds(tmp_path):
    """A nightly run from GitLab or Jenkins (CI set): pytest prints each failure's whole message in
    the short summary, hint lines included; the output still costs about a line per check."""
    scenario = bad_day.scenario_file(tmp_path, "node-down", bad_day.UNREACHABLE["node-down"])
    run = bad_day.timed(tmp_path, f"--sim={scenario}", env={"CI": "true"})
    assert run.run.rc == 1 and run.run.failed(), run.run.out
    assert run.within_output_bounds(), f"{run.lines} lines for {len(run.run.junit)} checks:\n{run.run.out[:3000]}"


@pytest.fixture(scope="module")
def healthy_seconds(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("healthy-timed")
    scenario = bad_day.scenario_file(tmp, "healthy", 'base = "healthy"\n')
    run = bad_day.timed(tmp, f"--sim={scenario}")
    assert run.run.failed() == {}, run.run.out
    return run.seconds


@pytest.mark.sim
def test_planted_secrets_appear_nowhere(tmp_path):
    """.env, compose, container environment and the suite's own API key: every parser that fails
    quotes its input, and none of the secrets reaches the terminal, JUnit or the summaries."""
    scenario = bad_day.secrets_scenario(tmp_path)
    run = run_suite(tmp_path, f"--sim={scenario}", env={bad_day.API_KEY_ENV: bad_day.SECRETS["api_key"]})
    failed = run.failed()
    # the three parsers did fail, quoting what they read (so the redaction is what kept the secrets out)
    assert f"tests_preflight/test_deployment_files.py::test_env_names_this_node[{R1}]" in failed, run.out
    assert any("thinkstationpgx-30" in tid and "compose" in tid for tid in failed), run.out
    assert f"tests_preflight/test_memory.py::test_memory_free_before_start[{R1}]" in failed, run.out
    assert "DB_PASSWORD=***" in run.out and "HF_TOKEN=***" in run.out
    served = "tests_service/test_models.py::test_served_model[thinkstationpgx-30]"
    assert served not in failed  # the key was sent, and worked
    assert bad_day.leaked(tmp_path, run) == dict.fromkeys(bad_day.SECRETS, 0)


def test_reports_that_cannot_be_written_stop_the_run_before_any_node(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    server = bad_day.MuteServer()
    try:
        inventory = bad_day.hung_ssh_inventory(tmp_path, server.port)
        run = run_suite(tmp_path, f"--cluster={inventory}", f"--reports-dir={blocker / 'reports'}")
    finally:
        server.close()
    assert run.rc == 4, run.out
    assert f"cannot write reports to {blocker / 'reports'}: Not a directory" in run.out
    assert server.accepted == 0, "a node was contacted before the outputs were checked"


@needs_root
def test_a_read_only_reports_dir_is_refused(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "gb10check-ro", str(ro)], check=True, timeout=10)
    try:
        run = run_suite(tmp_path, "-m", "preflight", f"--cluster={tmp_path / 'none.toml'}", f"--reports-dir={ro}")
    finally:
        subprocess.run(["umount", str(ro)], check=True, timeout=10)
    assert run.rc == 4 and f"cannot write reports to {ro}: Read-only file system" in run.out, run.out


BAD_INVENTORIES = {
    "latin-1 comment": (b"# caf\xe9\n[[nodes]]\n", "not UTF-8 at byte 5 (line 1: 0xe9)"),
    "a 0xff byte": (b'[[nodes]]\nname = "a\xff"\n', "not UTF-8 at byte 19 (line 2: 0xff)"),
    "utf-16": ('[[nodes]]\nname = "a"\n'.encode("utf-16"), "is UTF-16"),
    "nul bytes": (b"[[nodes]]\x00\x00\n", "NUL byte"),
    "200 MB": (None, "larger than 1024 KiB"),
    "1 MB value": (b'[[nodes]]\nname = "' + b"x y" * 250_000 + b'"\nrank = 0\ntransport = "local"\n', "yx yx ... yx"),
}


@pytest.mark.parametrize("case", list(BAD_INVENTORIES))
def test_any_bytes_in_a_clear_error_out(tmp_path, case):
    data, expected = BAD_INVENTORIES[case]
    path = tmp_path / "cluster.toml"
    if data is None:
        with path.open("wb") as fh:
            fh.truncate(200 * 1024 * 1024)  # sparse: no 200 MB of memory or disk
    else:
        path.write_bytes(data)
    run = run_suite(tmp_path, f"--cluster={path}")
    assert run.rc == 4, run.out
    assert "INTERNALERROR" not in run.out and expected in run.out, run.out[-1500:]
    assert len(run.out) < 5000, f"{len(run.out)} characters of output for one bad file"


def test_a_utf8_bom_is_accepted(tmp_path):
    path = tmp_path / "cluster.toml"
    path.write_bytes(b'\xef\xbb\xbf[[nodes]]\nname = "here"\nrank = 0\ntransport = "local"\n')
    run = run_suite(tmp_path, f"--cluster={path}", "-m", "smoke")
    assert run.rc in (0, 1) and "gb10check: inventory" in run.out, run.out


def test_a_bad_hints_file_is_a_clear_error(tmp_path):
    hints = tmp_path / "site.toml"
    hints.write_bytes(b'[my-hint]\ntitle = "Caf\xe9"\n')
    inventory = tmp_path / "cluster.toml"
    inventory.write_text('[[nodes]]\nname = "here"\nrank = 0\ntransport = "local"\n')
    run = run_suite(tmp_path, f"--cluster={inventory}", f"--hints={hints}")
    assert run.rc == 4 and "the hints file is not UTF-8 at byte 22 (line 2: 0xe9)" in run.out, run.out


@needs_root
def test_sim_and_cluster_together_is_an_error(tmp_path):
    run = run_suite(tmp_path, "--sim", f"--cluster={tmp_path / 'c.toml'}")
    assert run.rc == 4 and "--sim and --cluster=" in run.out and "give one of them" in run.out, run.out
    assert "bringing up" not in run.out


def test_the_origin_of_the_inventory_path_is_named(tmp_path):
    run = run_suite(tmp_path, env={"GB10_CLUSTER": "/nonexistent/cluster.toml"})
    assert run.rc == 4 and "/nonexistent/cluster.toml not found, from $GB10_CLUSTER" in run.out, run.out
