"""The `gb10check` command's own argument handling (pure; its runs are in selftests/e2e/test_cli.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gb10check.cli import _absolute, _with_stage


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


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        ("--sim=link-down", "--sim=link-down"),
        ("--sim=link-down@healthy-switch4", "--sim=link-down@healthy-switch4"),
        ("--sim=mine.toml", "--sim=/home/op/mine.toml"),
        ("--sim=faults/mine.toml@healthy-ring3", "--sim=/home/op/faults/mine.toml@healthy-ring3"),
        ("--sim=link-down@../my-base.toml", "--sim=link-down@/home/my-base.toml"),
    ],
)
def test_a_scenario_file_is_made_absolute_on_either_side_of_the_at(arg, expected):
    """The suite runs from the project folder: a scenario file the operator names, alone or in
    NAME@BASE, is taken from where the operator is."""
    assert _absolute([arg], Path("/home/op")) == [expected]
