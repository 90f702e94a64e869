"""The `gb10check` command's own argument handling (pure; its runs are in selftests/e2e/test_cli.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gb10check.commands.cli import _normalised, _with_stage
from gb10check.errors import CommandLineError


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


# -- values of the suite's options, with or without '=' (gb10check/commands/cli.py's _normalised) -------------------
@pytest.mark.parametrize("flag", ["--cluster", "--reports-dir", "--history", "--hints", "--prometheus"])
def test_a_path_option_without_its_path_is_a_usage_error(flag, tmp_path):
    for args in ([flag], [flag, "-q"], [f"{flag}="]):
        with pytest.raises(CommandLineError, match=rf"^{flag} needs a path"):
            _normalised(args, tmp_path)


@pytest.mark.parametrize(("flag", "metavar"), [("--soak", "MINUTES"), ("--wait-ready", "SECONDS")])
def test_a_number_option_without_its_number_is_a_usage_error_in_the_suites_words(flag, metavar, tmp_path):
    with pytest.raises(
        CommandLineError, match=rf"^{flag} needs {metavar}, a number \(nothing followed it\): {flag} 30 or {flag}=30"
    ):
        _normalised([flag], tmp_path)
    with pytest.raises(CommandLineError, match=rf"^{flag} takes {metavar}: 'abc' is not a number"):
        _normalised([flag, "abc"], tmp_path)
    assert _normalised([flag, "30"], tmp_path) == [f"{flag}=30"]
    assert _normalised([f"{flag}=30", "-q"], tmp_path) == [f"{flag}=30", "-q"]


def test_sim_takes_a_scenario_file_with_or_without_equals(tmp_path):
    where = (tmp_path / "site" / "my.toml").resolve()
    for args in (["--sim", "site/my.toml", "-q"], ["--sim=site/my.toml", "-q"], ["--sim", str(where), "-q"]):
        assert _normalised(args, tmp_path) == [f"--sim={where}", "-q"], args
    assert _normalised(["--sim", "link-down", "-q"], tmp_path) == ["--sim=link-down", "-q"]  # a builtin name
    assert _normalised(["--sim", "-q"], tmp_path) == ["--sim", "-q"]  # no value: healthy
    assert _normalised(["-q", "--sim"], tmp_path) == ["-q", "--sim"]
    with pytest.raises(CommandLineError, match=r"^--sim= needs a scenario"):
        _normalised(["--sim="], tmp_path)


def test_paths_become_absolute_with_or_without_equals(tmp_path):
    assert _normalised(["--cluster", "c.toml", "--history=~/h"], tmp_path) == [
        f"--cluster={(tmp_path / 'c.toml').resolve()}",
        f"--history={Path('~/h').expanduser().resolve()}",
    ]


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
    assert _normalised([arg], Path("/home/op")) == [expected]


# -- the front door: what a person types first ------------------------------------------------------------
def test_version_bare_and_stage_help_answer_in_the_suites_words(capsys):
    from importlib.metadata import version

    from gb10check.commands.cli import main

    assert main(["--version"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"gb10check {version('gb10check')}"
    assert [line.split()[0] for line in lines[1:]] == ["suite", "python", "pytest", "inventory"]
    assert "(a clone)" in lines[1] and "cluster.toml" in lines[4]
    assert main([]) == 0  # bare: the help, not an error
    assert "usage: gb10check STAGE" in capsys.readouterr().out
    assert main(["preflight", "-q", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: gb10check preflight ") and "pytest -m preflight" in out
    assert "--reports-dir DIR" in out and "exit status:" in out and "gb10check preflight --pytest-help" in out
    assert len(out.splitlines()) < 50, "the stage's help, not pytest's"
    assert "examples:" not in out
