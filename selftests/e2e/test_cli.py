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
    assert "unknown scenario 'no-such-scenario'; builtin: bf16-weights, compose-bridge-network," in run.out
