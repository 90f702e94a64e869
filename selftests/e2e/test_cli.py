"""The suite's front door: no inventory, a bad one, --sim without root."""

from __future__ import annotations

import os

import pytest

from selftests.e2e.runner import run_suite


def test_no_inventory_stops_at_once_with_how_to_write_one(tmp_path):
    run = run_suite(tmp_path, "-m", "preflight", env={"GB10_CLUSTER": ""})
    assert run.rc == 4
    assert "gb10check: no cluster inventory (cluster.toml not found, from default)" in run.out
    assert "cp fixtures/cluster.example.toml cluster.toml" in run.out and "pytest --sim" in run.out
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
    proc = _gb10check(tmp_path, "smoke", "--sim", "--reports-dir", "out", "-q")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "out" / "junit.xml").is_file() and (tmp_path / "out" / "summary.json").is_file()
    assert "passed" in proc.stdout
