"""The suite's front door: no inventory, a bad one, --sim without root."""

from __future__ import annotations

import os

import pytest

from selftests.e2e.runner import run_suite


def test_no_inventory_stops_at_once_with_how_to_write_one(tmp_path):
    run = run_suite(tmp_path, "-m", "preflight", env={"GB10_CLUSTER": ""})
    assert run.rc == 4
    assert "gb10check: no cluster inventory (cluster.toml not found, from default)" in run.out
    assert "/fixtures/cluster.example.toml cluster.toml" in run.out and "gb10check all --sim" in run.out
    assert run.junit == {}


def test_inventory_from_env_and_invalid_key(tmp_path):
    bad = tmp_path / "c.toml"
    bad.write_text('[[nodes]]\nname = "a"\nrank = 0\ntransport = "local"\nhots = "x"\n')
    run = run_suite(tmp_path, env={"GB10_CLUSTER": str(bad)})
    assert run.rc == 4
    assert f"{bad}: invalid inventory:" in run.out
    assert "key 'nodes[0] (name = 'a').hots' is not known (misspelt?)" in run.out


def test_unknown_scenario(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to get past the root check")
    run = run_suite(tmp_path, "--sim", "no-such-scenario")
    assert run.rc == 4
    assert "unknown scenario 'no-such-scenario'; builtin: address-stale, api-5xx, api-garbage," in run.out


# -- the `gb10check` command ----------------------------------------------------------------------
def _gb10check(cwd, *args, env=None):
    import subprocess
    import sys
    from pathlib import Path

    command = Path(sys.executable).with_name("gb10check")
    assert command.exists(), "bin/setup installs the gb10check console script into .venv/bin"
    full_env = {k: v for k, v in os.environ.items() if k != "GB10_CLUSTER"} | (env or {})
    return subprocess.run(
        [str(command), *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def test_gb10check_help_lists_stages_and_exit_codes(tmp_path):
    proc = _gb10check(tmp_path, "--help")
    assert proc.returncode == 0
    for word in ("preflight", "network", "service", "smoke", "all", "sim", "exit status:", "4  usage"):
        assert word in proc.stdout, word
    assert _gb10check(tmp_path, "nonsense").returncode == 4


def test_gb10check_takes_a_path_outside_the_project_with_a_space(tmp_path):
    """From any directory, `--cluster PATH` (no '='): pytest's rootdir stays the suite's."""
    bad = tmp_path / "site" / "cluster.toml"
    bad.parent.mkdir()
    bad.write_text('[[nodes]]\nname = "a"\nrank = 0\ntransport = "local"\nhots = "x"\n')
    proc = _gb10check(tmp_path, "preflight", "--cluster", "site/cluster.toml", "--reports-dir", "out")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert f"{bad}: invalid inventory:" in proc.stdout + proc.stderr


def test_gb10check_runs_a_stage_against_the_sim_from_anywhere(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the simulated cluster needs root")
    proc = _gb10check(tmp_path, "smoke", "--sim", "-q")  # the reports where it runs: ./reports
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "reports" / "junit.xml").is_file() and (tmp_path / "reports" / "summary.json").is_file()
    assert "passed" in proc.stdout


# -- exit statuses: a usage error is 4, in the suite's words ---------------------------------------------
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cluster"], "gb10check: --cluster needs a path (nothing followed it): --cluster PATH or --cluster=PATH"),
        (["--reports-dir"], "gb10check: --reports-dir needs a path"),
        (["--history"], "gb10check: --history needs a path"),
        (["--hints"], "gb10check: --hints needs a path"),
        (["--prometheus"], "gb10check: --prometheus needs a path"),
        (["--cluster", "-q"], "gb10check: --cluster needs a path (found the option -q"),
        (["--soak"], "gb10check: --soak needs MINUTES, a number (nothing followed it): --soak 30 or --soak=30"),
        (["--wait-ready"], "gb10check: --wait-ready needs SECONDS, a number"),
        (["--soak", "abc"], "gb10check: --soak takes MINUTES: 'abc' is not a number"),
    ],
)
def test_an_option_without_its_value_exits_4_in_the_suites_words(tmp_path, args, message):
    proc = _gb10check(tmp_path, "preflight", *args)
    assert proc.returncode == 4, proc.stdout + proc.stderr  # 1 would read as a failed cluster in CI
    assert message in proc.stderr, proc.stderr
    assert "pytest.main()" not in proc.stdout + proc.stderr  # not pytest's usage text
    assert "gb10check --help" in proc.stderr


def _as_nobody() -> list[str]:
    """The prefix that runs a command as an unprivileged user, without capabilities."""
    import shutil
    from pathlib import Path

    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv (util-linux) to run a command as an unprivileged user")
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"]
    import subprocess
    import sys

    script = str(Path(sys.executable).with_name("gb10check"))  # what the test runs: its folders must be open to it
    probe = [*prefix, sys.executable, "-c", f"open({script!r}).close()"]
    if subprocess.run(probe, capture_output=True, timeout=60).returncode != 0:
        pytest.skip(f"an unprivileged user cannot run {sys.executable} (the clone is in a private folder)")
    return prefix


def test_sim_clean_without_root_is_a_set_up_error_not_an_interruption(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    command = str(Path(sys.executable).with_name("gb10check"))
    prefix = _as_nobody()
    proc = subprocess.run([*prefix, command, "sim", "clean"], cwd="/", capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)  # fmt: skip
    assert proc.returncode == 4, proc.stdout + proc.stderr  # 2 is "interrupted"
    assert "sim: cannot clean: the simulated cluster needs root" in proc.stderr
    bad = subprocess.run([command, "sim", "nonsense"], capture_output=True, text=True, timeout=120,
                         stdin=subprocess.DEVNULL)  # fmt: skip
    assert bad.returncode == 4, bad.stderr  # argparse's own 2 would read as interrupted too
    assert "invalid choice: 'nonsense'" in bad.stderr


def test_sim_takes_a_scenario_file_outside_the_suite_with_a_space(tmp_path):
    """`--sim PATH` as `--sim=PATH`: the file's scenario runs (its slow link fails bw-low)."""
    if os.geteuid() != 0:
        pytest.skip("the simulated cluster needs root")
    site = tmp_path / "site"
    site.mkdir()
    (site / "slow.toml").write_text('base = "link2-slow"\n')
    check = "test_rdma_bandwidth and enP2p1s0f0np0 and not all_links"
    for value in (str(site / "slow.toml"), "site/slow.toml"):
        proc = _gb10check(tmp_path, "network", "--sim", value, "-k", check, "--reports-dir", "out", "-q")
        assert "unrecognized arguments" not in proc.stdout + proc.stderr
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "[bw-low]" in proc.stdout, proc.stdout
