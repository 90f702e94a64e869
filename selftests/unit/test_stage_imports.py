"""What a stage imports: what it needs, when it needs it (issue 18, speed).

Before the first node is contacted the plugin used to import every stage's libraries: openai alone
cost about 0.4 s of a preflight run that sends no request. These tests hold the structure, not a
time (the times are benchmarks/bench_peer.py's): a real `gb10check preflight` in a fresh process,
against a local one-node inventory, records which of the heavy libraries were loaded when the
snapshot started (pytest_configure, where the prefetch begins) and when the run ended.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]
# the service's HTTP clients, report.html's plots, the Prometheus writer: none is needed to start a snapshot
HEAVY = ("openai", "httpx", "httpcore", "jinja2", "prometheus_client", "importlib_metadata")
# a preflight run sends no request, draws no plot without history and writes no Prometheus file
NOT_IN_PREFLIGHT = ("openai", "httpx", "httpcore", "prometheus_client", "importlib_metadata")
RECORDER = f"""
import json, os, sys
import pytest

HEAVY = {HEAVY!r}


def _loaded():
    return sorted(m for m in HEAVY if m in sys.modules)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    config._gb10_loaded_at_start = _loaded()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    with open(os.environ["GB10_RECORD"], "w") as f:
        json.dump({{"configure": config._gb10_loaded_at_start, "end": _loaded()}}, f)
"""
INVENTORY = """
[[nodes]]
name = "here"
rank = 0
transport = "local"
"""


def _preflight(tmp_path: Path, *args: str) -> dict[str, list[str]]:
    (tmp_path / "gb10_import_recorder.py").write_text(RECORDER)
    (tmp_path / "inv.toml").write_text(INVENTORY)
    record = tmp_path / "loaded.json"
    env = {k: v for k, v in os.environ.items() if k != "GB10_CLUSTER"}
    env |= {"PYTHONPATH": str(tmp_path), "GB10_RECORD": str(record)}
    command = Path(sys.executable).with_name("gb10check")
    proc = subprocess.run(
        [str(command), "preflight", "--cluster", str(tmp_path / "inv.toml"), "--reports-dir", str(tmp_path / "out"),
         "-p", "gb10_import_recorder", "-k", "test_driver or test_user", *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert record.exists(), proc.stdout[-2000:] + proc.stderr[-2000:]
    assert (tmp_path / "out" / "report.html").exists(), "the run wrote its reports"
    loaded: dict[str, list[str]] = json.loads(record.read_text())
    return loaded


@pytest.mark.slow
def test_the_snapshot_starts_before_any_stage_library_is_imported(tmp_path):
    loaded = _preflight(tmp_path)
    assert loaded["configure"] == [], f"imported before the first node is contacted: {loaded['configure']}"


@pytest.mark.slow
def test_a_preflight_run_never_imports_the_service_clients_nor_the_plots(tmp_path):
    loaded = _preflight(tmp_path)
    assert not set(NOT_IN_PREFLIGHT) & set(loaded["end"]), loaded["end"]
    assert "jinja2" in loaded["end"], "report.html is still rendered (with jinja2), only later"
