"""What an operator reads at the end of a failing run (issue 20): one line per failed check (checks that
failed alike counted on one line), the root cause first, each hint once, the verdict line last; no
traceback into the suite's code and no exception class, in the terminal or in JUnit."""

from __future__ import annotations

import re

import pytest

from selftests.e2e.runner import run_suite

pytestmark = pytest.mark.sim
VERDICT = re.compile(r"^=+ .*\b(failed|passed|error|errors)\b.* in [\d.]+s.* =+$")
CODE = re.compile(r"(tests_\w+|fixtures|gb10check)/\w+\.py:\d+|^E   |CheckFailed|gb10check\.(verdict|errors)\.")

# scenario -> what the first failure line must say (the root cause, not what follows from it)
FIRST = {
    "driver-mismatch": ("[driver-version-mismatch]",),
    "link-down": ("[roce-link-down] enP2p1s0f0np0 ", "DOWN"),  # the port that is down, before the pings over it
    "wrong-model": ("served model name on thinkstationpgx-30: expected qwen3.8-flash-next, found qwen3-next",),
    "engine-stuck": ("[engine-stuck]",),
    "switch4-link-down": ("[roce-link-down]",),
}


@pytest.mark.parametrize("scenario", list(FIRST))
def test_a_failing_run_ends_with_what_failed_and_what_to_do(tmp_path, scenario):
    run = run_suite(tmp_path, "--sim", scenario, timeout=300)
    assert run.rc == 1, run.out
    failed = len(run.failed())
    failures = run.section("failures").splitlines()
    troubleshooting = run.section("troubleshooting")
    report = run.report_lines()
    assert len(report) <= 3 * failed + len(troubleshooting.splitlines()) + 10, "\n".join(report)
    # one line per failed check at most; the lines that count several add up to every failed check
    counted = [int(m[1]) + 1 if (m := re.search(r" and (\d+) more checks? alike: ", f)) else 1 for f in failures]
    assert all(f.startswith(("FAILED ", "ERROR ")) for f in failures), failures
    assert sum(counted) == failed, (failures, failed)
    assert all(said in failures[0] for said in FIRST[scenario]), failures[:3]
    # each hint of the run once in the troubleshooting section, with its commands
    hints = set().union(*run.failed().values())
    for hint in hints:
        assert len(re.findall(rf"^\[{re.escape(hint)}\] ", troubleshooting, re.MULTILINE)) == 1, (hint, troubleshooting)
    assert "    $ " in troubleshooting
    # nothing of the suite's own code; the verdict line last
    assert not [line for line in report if CODE.search(line)], [line for line in report if CODE.search(line)]
    assert VERDICT.match(run.out.rstrip().splitlines()[-1]), run.out[-500:]
    assert "short test summary info" not in run.out
    for case in run.junit.values():
        if case["outcome"] in ("failure", "error"):
            assert not CODE.search(case["message"]), case["message"][:300]
            assert case["message"].startswith("["), case["message"][:300]  # the hint ids lead


def test_asking_for_pytest_s_own_sections_brings_them_back(tmp_path):
    args = ("--sim", "link-down", "-m", "network", "-k", "roce_link", "-ra", "--tb=short")
    run = run_suite(tmp_path, *args, timeout=300)
    assert run.rc == 1, run.out
    assert "= FAILURES =" in run.out and "short test summary info" in run.out
    assert "= failures =" in run.out  # the suite's own lines too


def test_a_run_that_selects_nothing_leaves_the_last_reports(tmp_path):
    first = run_suite(tmp_path, "--sim", "-m", "preflight", "-k", "test_user", timeout=300)
    assert first.rc == 0, first.out
    reports = tmp_path / "reports"

    def kept() -> dict[str, bytes]:  # the reports (the run's lock file, .gb10check-run.lock, names each run)
        return {p.name: p.read_bytes() for p in reports.iterdir() if p.is_file() and not p.name.startswith(".")}

    before = kept()
    assert {"junit.xml", "summary.json", "summary.md", "report.html"} <= set(before)
    nothing = run_suite(tmp_path, "--sim", "-m", "preflight", "-k", "nosuch", timeout=300)
    assert nothing.rc == 5, nothing.out
    assert f"the reports in {reports} are the last run's, untouched" in nothing.out
    assert kept() == before


def test_a_second_run_into_the_same_reports_folder_is_refused(tmp_path):
    """Two runs writing one folder replaced each other's reports, the last to finish winning unsaid."""
    import fcntl

    reports = tmp_path / "reports"
    reports.mkdir()
    with open(reports / ".gb10check-run.lock", "a+") as held:  # a run in progress holds it
        held.write("pid 4242, started 2026-12-04 03:30:00: nightly\n")
        held.flush()
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        second = run_suite(tmp_path, "--sim", "-m", "preflight", "-k", "test_user", timeout=300)
    assert second.rc == 4, second.out
    assert f"another gb10check run writes its reports into {reports} (pid 4242" in second.out
    assert "give this run its own --reports-dir" in second.out
    assert not (reports / "summary.json").exists()
    after = run_suite(tmp_path, "--sim", "-m", "preflight", "-k", "test_user", timeout=300)  # once it let go
    assert after.rc == 0, after.out
