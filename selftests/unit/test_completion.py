"""`gb10check completion bash|zsh`: real bash (and zsh through its bashcompinit, where installed) completes
the stages, each command's own options, the simulator's scenarios, and files or folders where an option
takes one."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gb10check.commands import completion

ROOT = Path(completion.__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def scripts(tmp_path_factory):
    sys.path.insert(0, str(ROOT))  # the simulator's scenarios (the cli puts the suite on the path)
    folder = tmp_path_factory.mktemp("completion")
    for shell in completion.SHELLS:
        (folder / f"{shell}.sh").write_text(completion.script(shell))
    (folder / "reports-here").mkdir()
    (folder / "mine.toml").write_text("")
    return folder


def _bash(folder: Path, line: str) -> list[str]:
    words = line.split(" ")
    probe = (
        f"source {folder / 'bash.sh'}; COMP_WORDS=({' '.join(repr(w) for w in words)}); "
        f"COMP_CWORD={len(words) - 1}; _gb10check; printf '%s\\n' \"${{COMPREPLY[@]}}\""
    )
    out = subprocess.run(["bash", "-c", probe], cwd=folder, capture_output=True, text=True, timeout=30, check=True)
    return [w for w in out.stdout.splitlines() if w]


def test_bash_completes_stages_options_scenarios_and_paths(scripts):
    assert _bash(scripts, "gb10check pre") == ["preflight"]
    assert set(_bash(scripts, "gb10check ")) >= {"init", "preflight", "network", "service", "completion", "--version"}
    assert _bash(scripts, "gb10check network --rep") == ["--reports-dir"]
    assert _bash(scripts, "gb10check network --reports-dir rep") == ["reports-here"]
    assert "--accept-new" in _bash(scripts, "gb10check init --") and "--reports-dir" not in _bash(
        scripts, "gb10check init --"
    )
    assert set(_bash(scripts, "gb10check all --sim healthy-r")) == {"healthy-ring3", "healthy-ring4"}
    assert "mine.toml" in _bash(scripts, "gb10check all --sim mi")
    assert _bash(scripts, "gb10check sim ") == ["clean", "list", "up"]
    assert "healthy-switch8" in _bash(scripts, "gb10check sim up healthy-s")
    assert _bash(scripts, "gb10check plan --of") == ["--offline"]
    assert _bash(scripts, "gb10check completion z") == ["zsh"]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed (bin/setup installs it as root)")
def test_zsh_registers_it_and_completes_as_bash_does(scripts):
    """Under zsh's bashcompinit: registered for gb10check, and the function, run as zsh runs it (sh emulation),
    answers as under bash (zsh's compadd keeping what starts with the word typed)."""

    def complete(line: str) -> list[str]:
        words = line.split(" ")
        probe = (
            f"autoload -U compinit && compinit -u; source {scripts / 'zsh.sh'}; print -r -- ${{_comps[gb10check]}}; "
            "probe() { emulate -L sh; setopt kshglob noshglob braceexpand; "
            f"COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}; _gb10check; "
            "printf '%s\\n' \"${COMPREPLY[@]}\"; }; probe"
        )
        out = subprocess.run(["zsh", "-f", "-c", probe], cwd=scripts, capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        registered, *replies = out.stdout.splitlines()
        assert registered == "_bash_complete -o default -F _gb10check"
        # zsh's compgen leaves the prefix to compadd, which keeps what starts with the typed word
        return [w for w in replies if w and w.startswith(words[-1])]

    assert complete("gb10check pre") == ["preflight"]
    assert complete("gb10check network --rep") == ["--reports-dir"]
    assert set(complete("gb10check all --sim healthy-r")) == {"healthy-ring3", "healthy-ring4"}


def test_the_command_prints_it_and_refuses_another_shell(capsys):
    from gb10check.commands.cli import main

    assert main(["completion", "bash"]) == 0
    assert "complete -o default -F _gb10check gb10check" in capsys.readouterr().out
    assert main(["completion", "fish"]) == 4
    assert "usage: gb10check completion {bash|zsh}" in capsys.readouterr().err
