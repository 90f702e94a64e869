"""Which reader judged the compose: the node's real Docker Compose, or the fallback where it has none."""

from __future__ import annotations

import pytest

from selftests.e2e.runner import run_suite

pytestmark = pytest.mark.sim

LINT = "tests_preflight/test_launch_rules.py::test_launch_rule"


def test_each_node_says_which_reader_read_its_compose(tmp_path):
    """compose-plugin-missing: rank 1 has no Compose plugin. Its rules pass through the fallback and
    say so; rank 0's pass through the node's Compose, with its version."""
    run = run_suite(tmp_path, "--sim", "compose-plugin-missing", "-m", "preflight", "-k", "test_launch_rule")
    assert run.rc == 0 and run.summary is not None, run.out
    readers: dict[str, set[str]] = {}
    for check in run.summary["checks"]:
        assert check["test"].startswith(LINT) and check["verdict"] in ("passed", "skipped"), check
        for item in check["evidence"]:
            readers.setdefault(check["node"], set()).add(item["what"].split("(read by ", 1)[1].split(")")[0])
    assert readers == {
        "thinkstationpgx-30": {"docker compose 2.40.3"},
        "thinkstationpgx-32": {"gb10check's own reader"},
    }
