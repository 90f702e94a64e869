"""The `gb10check` command's own argument handling (pure; its runs are in selftests/e2e/test_cli.py)."""

from __future__ import annotations

import pytest

from gb10check.cli import _with_stage


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-q"], ["-q", "-m", "network"]),
        (["-m", "not performance", "-q"], ["-q", "-m", "network and (not performance)"]),
        (["-mnot smoke"], ["-m", "network and (not smoke)"]),
    ],
)
def test_a_stage_keeps_the_operators_own_marker_expression(args, expected):
    assert _with_stage(args, "network") == expected
