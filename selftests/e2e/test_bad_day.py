"""An operator's first bad day: signals, unreachable nodes, secrets, unusable outputs, bad input.

Each test reproduces a fault as an operator meets it and asserts what the suite must leave:
reports, one line per check, no secret, a clear error.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess

import pytest

from selftests.e2e import bad_day
from selftests.e2e.bad_day import FINAL_LINE, R0, R1
from selftests.e2e.runner import run_scenario, run_suite, sim_leftovers

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root")

PAIR = f"{R0}-{R1}"


def _assert_interrupted(result: bad_day.Interrupted, signame: str, during: str | None = None) -> None:
    run = result.run
    assert run.rc == 2, run.out
    # within seconds (a hang guard with room for a busy machine: the interrupt itself waits for no step
    # of the suite more than a second, selftests/unit/test_interrupt.py and test_redact.py)
    assert result.exit_seconds < 30, f"the run took {result.exit_seconds:.1f} s to stop after {signame}"
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
    elif stage.startswith("after "):  # between two checks (a busy machine): none was cut, the last one finished
        assert cut == [] and stage.removeprefix("after ") in {r["test"] for r in run.summary["checks"]}, stage
        assert "between two checks, after " in run.out, run.out[-2000:]
    elif stage not in ("bring-up", "start-up"):  # before the session: its own error case (below)
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
    # (on a busy machine: just after a check that needed no node, between two checks)
    assert during.startswith(("tests_preflight/", "after tests_preflight/")) or during == "collection", during


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
        # the signal goes once the sim has begun; on a busy machine it may land just after the bring-up,
        # still before the session: the reports are written either way, saying when
        during = (result.run.summary or {}).get("interruption", {}).get("during")
        assert during in ("bring-up", "start-up"), result.run.out
        _assert_interrupted(result, signal.Signals(signum).name, during=during)
        assert set(result.run.junit) == {"gb10check.py::session"}
        assert result.run.junit["gb10check.py::session"]["outcome"] == "error"
        said = "while the simulated cluster came up" if during == "bring-up" else "before the session started"
        assert said in result.run.out, result.run.out
    elif stage == "mid-check":
        # the container probes of all nodes run together, while the first node's check is set up
        gpu = "tests_preflight/test_container_gpu.py::test_gpu_visible_in_container[thinkstationpgx-30]"
        _assert_interrupted(result, signal.Signals(signum).name, during=gpu)
    else:
        _assert_interrupted(
            result, "SIGTERM", during=f"tests_network/test_bandwidth.py::test_rdma_write_runs[{PAIR}-enp1s0f0np0]"
        )
    # no namespace, sshd, or ib_write_bw server or client of the run is left (their command lines name the run dir)
    assert sim_leftovers(result.run.pid) == []


@pytest.mark.sim
@pytest.mark.parametrize("fault", list(bad_day.UNREACHABLE))
def test_an_unreachable_node_costs_one_line_per_check(tmp_path, fault):
    run = bad_day.timed(tmp_path, f"--sim={bad_day.scenario_file(tmp_path, fault, bad_day.UNREACHABLE[fault])}")
    out = run.run.out
    checks = len(run.run.junit)
    assert run.within_output_bounds(), (
        f"{run.lines} lines, {run.junit_bytes} bytes of JUnit for {checks} checks:\n{out[:3000]}"
    )
    # the connect timeout paid once, not once per check (the time it took is bench_bad_day.py's figure)
    attempts = {node: t.get("connect_attempts") for node, t in run.run.summary["transports"].items()}
    assert attempts[R1] <= 1, f"{fault}: {attempts[R1]} connects tried to the unreachable node"
    assert not re.search(r"gb10check/\w+\.py:\d+", out), "a traceback into the suite's own code"
    failed = run.run.failed()
    unreachable = {tid: h for tid, h in failed.items() if h == {"node-unreachable"}}
    rows = {r["test"]: r for r in run.run.summary["checks"]}
    said = {t: [e for e in rows[t]["evidence"] if not e["ok"]] for t in unreachable}
    no_evidence = {t for t in unreachable if not said[t]}
    # rank 0's own checks have their evidence (a check about a pair with rank 1 has none)
    assert no_evidence and not any(R0 in t and R1 not in t for t in no_evidence), failed
    for t in set(unreachable) - no_evidence:  # findings that need rank 1 (rank 0's dark ports, logins to it) say so
        assert f"this follows from {R1}" in said[t][-1]["detail"], (t, said[t])
    message = next(iter(run.run.junit[t]["message"] for t in sorted(no_evidence)))
    why = {"unresolvable": "the name does not resolve", "sshd-refusing": "the port refuses the connection"}
    assert message.startswith(f"[node-unreachable] {R1} (") and why.get(fault, "2 s") in message, message
    assert out.count("[node-unreachable] A node cannot be reached over SSH") == 1  # the section once
    # the unreachable node's line stands once (once as FAILED, once as ERROR), counting the checks that failed
    # with it: one line for all of them, not one per check; every check is in JUnit and summary.md
    failures = run.run.section("failures").splitlines()
    alike = [line for line in failures if f"[node-unreachable] {R1} (" in line]
    counted = [int(m[1]) + 1 if (m := re.search(r" and (\d+) more checks? alike: ", line)) else 1 for line in alike]
    assert 1 <= len(alike) <= 2 and sum(counted) == len(no_evidence), (alike, len(no_evidence))
    assert failures[0].startswith("FAILED ") and f"[node-unreachable] {R1} (" in failures[0], "the root cause first"
    assert sim_leftovers(run.run.pid) == []


@pytest.mark.sim
def test_under_ci_a_node_down_stays_within_the_bounds(tmp_path):
    """A nightly run from GitLab or Jenkins (CI set): pytest would print each failure's whole message in
    its short summary, hint lines included; the end of the output is the suite's, within the same bounds."""
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


@pytest.fixture(scope="module")
def secrets_run(tmp_path_factory):
    """One run of the secrets scenario with every output on (reports, history, Prometheus file)."""
    tmp = tmp_path_factory.mktemp("secrets")
    return tmp, bad_day.secrets_run(tmp)


ACCEPTED = "tests_preflight/test_deployment_files.py::test_compose_accepted[{}]"


def _env_file_refused(run, node: str) -> str:
    """The message of the check that owns a compose file the node's Compose rejects (every other check
    that reads the launch plan follows from it): Compose refuses the env file, and gb10check's reader quotes
    the line ("" when that check did not fail so)."""
    case = run.junit.get(ACCEPTED.format(node), {})
    message = case.get("message", "")
    refused = case.get("outcome") in ("failure", "error") and "compose-invalid" in case["properties"].get("hints", "")
    return message if refused and "is not KEY=VALUE" in message else ""


@pytest.mark.sim
def test_planted_secrets_appear_nowhere(secrets_run):
    """.env, compose, container environment and the suite's own API key: every parser that fails
    quotes its input, and none of the secrets reaches the terminal, JUnit or the summaries."""
    tmp, run = secrets_run
    failed = run.failed()
    # the three parsers did fail, quoting what they read (so the redaction is what kept the secrets out)
    assert _env_file_refused(run, R1), run.out
    assert any("thinkstationpgx-30" in tid and "compose" in tid for tid in failed), run.out
    assert f"tests_preflight/test_memory.py::test_memory_free_before_start[{R1}]" in failed, run.out
    # the quoted file is shown masked where the whole line is kept (the terminal cuts it between clauses)
    summary = (tmp / "reports" / "summary.md").read_text()
    assert "DB_PASSWORD=***" in summary and "HF_TOKEN=***" in summary
    assert "(summary.md has the whole line)" in run.out
    served = "tests_service/test_models.py::test_served_model[thinkstationpgx-30]"
    assert served not in failed  # the key was sent, and worked
    assert bad_day.leaked(tmp, run, bad_day.SECRETS) == dict.fromkeys(bad_day.SECRETS, 0)


@pytest.mark.sim
def test_secrets_of_every_shape_are_shown_masked_in_every_output(secrets_run):
    """Issue 17, item 4: an AWS key id, credentials in a URL, a JWT, a Slack token and `password
    <value>` in a kernel log line, a container log line, the vLLM version string and a .env whose parse
    error quotes its head: each line is shown (masked) and none of the secrets reaches the terminal,
    junit.xml, summary.md/json, report.html, the history kept or the Prometheus file."""
    tmp, run = secrets_run
    outputs = bad_day.outputs(tmp, run)
    assert {"reports/junit.xml", "reports/summary.json", "reports/summary.md", "reports/report.html"} <= set(outputs)
    assert any(n.startswith("history/run-") for n in outputs) and "metrics/gb10check.prom" in outputs, list(outputs)
    assert bad_day.leaked(tmp, run, bad_day.SHAPED) == dict.fromkeys(bad_day.SHAPED, 0)
    failed = run.failed()
    assert f"tests_network/test_kernel_log.py::test_no_gpu_xid_errors[{R1}]" in failed, run.out
    assert f"tests_service/test_logs.py::test_log_names_no_known_fault[{R0}]" in failed, run.out
    assert _env_file_refused(run, R0), run.out
    everything = "\n".join(outputs.values())
    shown = {
        "kernel log": [f"pid=42, {said}" for said in bad_day.SAID_MASKED],
        "container log": [f"ERROR CUDA out of memory: {bad_day.SAID_MASKED[0]}", bad_day.SAID_MASKED[1]],
        "vLLM version": ["0.12.0 " + " ".join(bad_day.SAID_MASKED)],
        ".env": [f"AWS_ID={bad_day.SAID_MASKED[0]}", f"SESSION={bad_day.SAID_MASKED[1]}", bad_day.SAID_MASKED[2]],
    }
    missing = {where: [t for t in texts if t not in everything] for where, texts in shown.items()}
    assert all(not texts for texts in missing.values()), missing


@pytest.mark.sim
def test_detect_secrets_own_scanner_finds_nothing_in_what_the_run_wrote(secrets_run, tmp_path):
    """Issue 32: detect-secrets' own scanner (its token plugins, as the suite runs them) over every file the
    run wrote and over its terminal output: zero findings."""
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import transient_settings

    from gb10check.safe_text import secret_shapes

    tmp, run = secrets_run
    terminal = tmp_path / "terminal.txt"
    terminal.write_text(run.out)
    files = [terminal, *(tmp / name for name in bad_day.outputs(tmp, run) if name != "terminal")]
    plugins = sorted({shape.id.split("[")[0] for shape in secret_shapes.load() if shape.source == "detect-secrets"})
    found = SecretsCollection()
    with transient_settings({"plugins_used": [{"name": name} for name in [*plugins, "PrivateKeyDetector"]]}):
        for path in files:
            found.scan_file(str(path))
    findings = {name: [s.type for s in secrets] for name, secrets in found.data.items()}
    assert len(files) >= 6 and findings == {}, findings


@pytest.mark.sim
def test_a_node_name_that_is_a_dotenv_value_is_never_masked(secrets_run):
    """Issue 17, item 5: rank 1's .env sets X_TOKEN to rank 0's name; that name stays in every output."""
    tmp, run = secrets_run
    outputs = bad_day.outputs(tmp, run)
    # shown as the node has it, in the line kept whole: a node's name is no secret
    assert "X_TOKEN=thinkstationpgx-30" in outputs["reports/summary.md"]
    summary = json.loads(outputs["reports/summary.json"])
    assert {row["node"] for row in summary["checks"]} == {None, R0, R1}
    prometheus = outputs["metrics/gb10check.prom"]
    assert 'node="***"' not in prometheus and f'node="{R0}"' in prometheus
    assert f"| {R0} |" in outputs["reports/summary.md"] and R0 in outputs["reports/report.html"]
    history = next(v for k, v in outputs.items() if k.startswith("history/"))
    assert f'"node": "{R0}"' in history and '"node": "***"' not in history


@pytest.mark.sim
def test_the_suites_own_words_are_not_masked(secrets_run):
    """Issue 17, item 10: a .env error reads "line N is not KEY=VALUE: '...'"; only what it quotes is masked."""
    _, run = secrets_run
    message = _env_file_refused(run, R1)
    assert re.search(r"line \d+ is not KEY=VALUE: 'BROKEN LINE=", message), message
    assert "KEY=***" not in message.split(": 'BROKEN LINE=")[0], message


@pytest.mark.sim
def test_one_10mb_log_line_costs_seconds_and_every_report_is_written(tmp_path, healthy_seconds):
    """Issue 17, item 1: rank 1's container log ends with one line of 10 MB (a run of letters, digits
    and _.-, the old masking's quadratic case: 11 minutes at full CPU, no reports)."""
    run = bad_day.long_line_run(tmp_path)
    assert run.run.rc == 0 and run.run.failed() == {}, run.run.out[-3000:]
    assert run.run.summary is not None and run.run.summary["interrupted"] is False
    assert all((tmp_path / "reports" / name).stat().st_size for name in ("junit.xml", "summary.md", "report.html"))
    assert run.within_output_bounds(), run.run.out[:3000]
    # a bound for a busy machine (the healthy run plus a minute); the quadratic masking took hours
    assert run.seconds < healthy_seconds + 60, f"{run.seconds:.1f} s against healthy {healthy_seconds:.1f} s"
    assert sim_leftovers(run.run.pid) == []


@pytest.mark.sim
def test_sigterm_during_a_10mb_log_line_is_acted_on_within_seconds(tmp_path):
    """Issue 17, item 1: the same line, SIGTERM seconds after the sim's bring-up (while the snapshot with
    the line is read, or the checks read it): the run stops within seconds and writes every report (it
    ignored two SIGTERMs for 11 minutes)."""
    result = bad_day.sigterm_during_long_line(tmp_path)
    run = result.run
    # within seconds, not the minutes it took (room for a busy machine: the run reads a 10 MB line)
    assert run.rc == 2 and result.exit_seconds < 30, f"exit {run.rc} {result.exit_seconds:.1f} s after SIGTERM"
    assert run.summary is not None and run.summary["interrupted"] is True, run.out[-3000:]
    assert run.summary["interruption"]["signal"] == "SIGTERM"
    assert FINAL_LINE.match(run.out.rstrip().splitlines()[-1]), run.out[-2000:]
    assert run.junit, "no JUnit file, or an empty one"
    assert all((tmp_path / "reports" / name).stat().st_size for name in ("junit.xml", "summary.md", "summary.json"))
    assert sim_leftovers(result.run.pid) == []


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


@pytest.mark.sim
def test_a_nodes_terminal_escapes_are_shown_never_obeyed(tmp_path):
    """ESC sequences (a window title, a cleared screen, an OSC 8 link), a C1 CSI, a carriage return and a
    right-to-left override in a tool's stderr, a kernel log line, the served model name and the vLLM
    version: each reaches the reports, shown as its escape, and no control character reaches the terminal,
    summary.md, summary.json's strings, junit.xml, report.html or the Prometheus file."""
    scenario = bad_day.escapes_scenario(tmp_path)
    prom = tmp_path / "reports" / "gb10check.prom"
    run = run_suite(tmp_path, f"--sim={scenario}", "-m", "not performance", f"--prometheus={prom}")
    failed = run.failed()
    # the planted text did reach the outputs: the neutralising is what kept the bytes out
    assert failed.get(f"tests_network/test_kernel_log.py::test_no_gpu_xid_errors[{R0}]") == {"gpu-xid"}, run.out
    assert any(h == {"tool-missing"} and R1 in tid for tid, h in failed.items()), failed
    assert "tests_service/test_models.py::test_served_model[thinkstationpgx-30]" in failed, run.out
    shown = r"\x1b]0;owned by the node\x07\x1b[2J\x1b]8;;http://evil.example/\x1b\click here\x1b]8;;\x1b\\x9b31m"
    assert shown + r"\u202egnp.exe\r" in run.out, run.out[-3000:]
    summary = (tmp_path / "reports" / "summary.md").read_text()
    assert f"vllm_version | 0.12.0{shown}" in summary
    assert bad_day.controls(tmp_path, run) == dict.fromkeys(bad_day.controls(tmp_path, run), 0)
    assert prom.exists() and (tmp_path / "reports" / "report.html").exists()


@pytest.mark.sim
def test_a_hostile_history_folder_costs_one_warning_per_file_and_no_report(tmp_path):
    """A list where a mapping belongs, a 400-digit number, NaN, infinities, deep nesting, a 200 MB file, bytes
    that are not UTF-8: each run file is skipped with its one warning, and the run writes every report,
    keeps itself and exits by its verdicts."""
    cases = {
        name: data
        for name, data in bad_day.hostile_runs().items()
        if name.startswith(("the file:", "checks.0.figures")) and not name.endswith(("negative number", "fraction"))
    }  # (a negative number or a fraction is a figure a run may hold)
    history = tmp_path / "history"
    planted = bad_day.write_hostile_history(history, cases)
    reports = tmp_path / "reports"
    run = run_suite(tmp_path, "--sim=healthy", "-k", "bandwidth", f"--history={history}",
                    f"--prometheus={reports / 'gb10check.prom'}")  # fmt: skip
    assert run.rc == 0, run.out[-3000:]
    assert "INTERNALERROR" not in run.out and "Traceback" not in run.out
    for name in ("junit.xml", "summary.json", "summary.md", "report.html", "gb10check.prom"):
        assert (reports / name).stat().st_size > 0, name
    warned = [line for line in run.out.splitlines() if line.startswith("gb10check: history: ")]
    assert len(warned) == len(cases) and all(any(str(p) in w for w in warned) for p in planted), warned
    assert run.summary is not None and len(run.summary["history"]["warnings"]) == len(cases)
    assert run.summary["history"]["earlier_runs"] == 0
    kept = set(history.glob("run-*.json")) - set(planted)
    assert len(kept) == 1 and all(p.exists() for p in planted)  # this run kept, nothing of the folder deleted


def test_reports_replace_a_planted_symlink_never_write_through_it(tmp_path):
    """Every output (junit.xml, summary.json and .md, report.html, the Prometheus file, the run kept in the
    history, and report.html's old fixed temporary name) is a new file renamed over whatever stood there."""
    reports, history, elsewhere = tmp_path / "reports", tmp_path / "history", tmp_path / "elsewhere"
    for folder in (reports, history, elsewhere):
        folder.mkdir()
    links = {
        reports / name: elsewhere / name
        for name in ("junit.xml", "summary.json", "summary.md", "report.html", "gb10check.prom", ".report.html.tmp")
    }
    for link, target in links.items():
        target.write_text("the operator's own file\n")
        link.symlink_to(target)
    inventory = tmp_path / "cluster.toml"
    inventory.write_text('[[nodes]]\nname = "here"\nrank = 0\ntransport = "local"\n')
    prom = f"--prometheus={reports}/gb10check.prom"
    run = run_suite(tmp_path, f"--cluster={inventory}", "-m", "smoke", f"--history={history}", prom)
    assert run.rc in (0, 1) and run.junit and run.summary is not None, run.out[-2000:]
    assert [t.name for t in links.values() if t.read_text() != "the operator's own file\n"] == []
    for link in links:
        if link.name != ".report.html.tmp":
            assert link.is_file() and not link.is_symlink() and link.stat().st_size > 100, link
            assert link.stat().st_mode & 0o777 == 0o644, oct(link.stat().st_mode)  # readable by node_exporter
    hidden = {".report.html.tmp", ".gb10check-run.lock"}  # the planted name; the run's own hold on the folder
    assert [p.name for p in reports.iterdir() if p.name.startswith(".") and p.name not in hidden] == []
    assert len(list(history.glob("run-*.json"))) == 1


@pytest.mark.sim
def test_a_flooding_probe_costs_its_own_checks_only(tmp_path):
    """Rank 1's nvidia-smi prints forever and its dmesg holds 213 MB of lines the kernel-log probe keeps:
    those probes' checks fail saying the output was cut and how much there was; every other check of the
    node (id -un, ufw, docker, the links...) has its evidence and passes."""
    run = run_scenario(tmp_path, bad_day.FLOOD, "-m", "preflight or network", "-k", "not bandwidth")
    failed = run.failed()
    assert failed and all(R1 in tid and hints == {"output-cut"} for tid, hints in failed.items()), failed
    kernel = [t for t in failed if "test_kernel_log.py" in t]
    driver = [t for t in failed if "test_kernel_log.py" not in t]
    assert len(kernel) == 4 and driver, failed  # 2 links' flaps, hotplug, Xid; the nvidia-smi reads
    message = run.junit[kernel[0]]["message"]
    assert re.search(r"\[output-cut\] thinkstationpgx-32: `dmesg .*` printed more than 64 MiB", message), message
    nvidia = run.junit[driver[0]]["message"]
    assert re.search(r"`nvidia-smi --query-gpu=\S+ --format=csv,noheader` printed more than 64 MiB", nvidia), nvidia
    passed = [tid for tid, outcome in run.outcomes().items() if outcome == "passed" and R1 in tid]
    assert len(passed) > 30, passed  # the node's other reads all answered
    assert "id -un" not in run.out
