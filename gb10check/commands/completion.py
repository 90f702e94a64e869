"""`gb10check completion bash|zsh`: the shell completion script, made from the commands' own parsers (the
stages' options from the plugin's settings, init's, plan's and explain's from their argparse parsers, the
simulator's scenarios from its folder), so it never lists an option that is not there.

    eval "$(gb10check completion bash)"    # in ~/.bashrc
    eval "$(gb10check completion zsh)"     # in ~/.zshrc, after compinit
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PYTEST_OPTIONS", "SHELLS", "Words", "commands", "main", "script"]


SHELLS = ("bash", "zsh")
# pytest's own options an operator types most, offered after a stage
PYTEST_OPTIONS = ("-k", "-m", "-x", "-q", "-v", "-n", "--junitxml", "--pytest-help", "--help")


@dataclass
class Words:
    """What one command takes: its options, the options whose value is a file or a folder, and its words."""

    options: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)
    words: list[str] = field(default_factory=list)


def _from_argparse(parser: argparse.ArgumentParser) -> Words:
    out = Words()
    for action in parser._actions:  # argparse keeps them here and nowhere public
        out.options += action.option_strings
        metavar = str(action.metavar or "")
        if action.option_strings and metavar in ("PATH", "FILE"):
            out.files += action.option_strings
        elif action.option_strings and metavar in ("DIR", "FOLDER"):
            out.dirs += action.option_strings
    return out


class _Recorder:
    """Stands where pytest's parser stands for the plugin's pytest_addoption: records each option."""

    def __init__(self) -> None:
        self.words = Words()

    def getgroup(self, *_args: Any, **_kwargs: Any) -> _Recorder:
        return self

    def addoption(self, *names: str, **kwargs: Any) -> None:
        self.words.options += names
        metavar = str(kwargs.get("metavar") or "")
        if metavar in ("PATH", "FILE"):
            self.words.files += names
        elif metavar in ("DIR",):
            self.words.dirs += names

    def addini(self, *_args: Any, **_kwargs: Any) -> None:
        pass


def _stage_words() -> Words:
    from fixtures import settings

    recorder = _Recorder()
    settings.add_options(recorder)  # type: ignore[arg-type]
    recorder.words.options += PYTEST_OPTIONS
    return recorder.words


def commands() -> dict[str, Words]:
    """Each command's words: the stages', init's, plan's, explain's, known-issues', sim's and this one's."""
    from gb10check.commands import explain, init, known_issues, plan
    from gb10check.stages import STAGES
    from sim.scenario import builtin_names

    stage = _stage_words()
    out = {name: stage for name in STAGES}
    out["init"] = _from_argparse(init._parser())
    out["plan"] = _from_argparse(plan._parser())
    out["explain"] = _from_argparse(explain._parser())
    out["known-issues"] = _from_argparse(known_issues._parser())
    out["sim"] = Words(words=["up", "list", "clean"])
    out["completion"] = Words(words=list(SHELLS))
    out["scenarios"] = Words(words=builtin_names())
    return out


def _list(words: Iterable[str]) -> str:
    return shlex.quote(" ".join(sorted(set(words))))


def script(shell: str) -> str:
    """The completion script for `shell` (bash; zsh through its bashcompinit)."""
    table = commands()
    scenarios = table.pop("scenarios").words
    cases = []
    for name, words in sorted(table.items()):
        cases.append(
            f"    {name}) opts={_list(words.options + words.words)}; files={_list(words.files)}; "
            f"dirs={_list(words.dirs)} ;;"
        )
    body = f"""# gb10check's completion for {shell}: eval "$(gb10check completion {shell})"
_gb10check() {{
  local cur prev cmd opts files dirs
  cur="${{COMP_WORDS[COMP_CWORD]}}"
  prev="${{COMP_WORDS[COMP_CWORD-1]}}"
  cmd="${{COMP_WORDS[1]}}"
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W {_list([*table, "--help", "--version"])} -- "$cur"))
    return 0
  fi
  case "$cmd" in
{chr(10).join(cases)}
    *) return 0 ;;
  esac
  if [ "$prev" = --sim ] || {{ [ "$cmd" = sim ] && [ "$prev" = up ]; }}; then
    COMPREPLY=($(compgen -W {_list(scenarios)} -- "$cur") $(compgen -f -X '!*.toml' -- "$cur"))
    return 0
  fi
  if [[ " $files " == *" $prev "* ]]; then
    COMPREPLY=($(compgen -f -- "$cur"))
    return 0
  fi
  if [[ " $dirs " == *" $prev "* ]]; then
    COMPREPLY=($(compgen -d -- "$cur"))
    return 0
  fi
  if [ "$cmd" = sim ] && [ "$COMP_CWORD" -gt 2 ]; then
    return 0
  fi
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}}
complete -o default -F _gb10check gb10check
"""
    if shell == "zsh":
        return "autoload -U +X bashcompinit && bashcompinit\n" + body
    return body


def main(args: list[str]) -> int:
    if len(args) != 1 or args[0] not in SHELLS:
        print(
            f"usage: gb10check completion {{{'|'.join(SHELLS)}}}\n"
            '  eval "$(gb10check completion bash)"   in ~/.bashrc (zsh: in ~/.zshrc, after compinit)',
            file=sys.stderr if args[:1] not in (["-h"], ["--help"]) else sys.stdout,
        )
        return 0 if args[:1] in (["-h"], ["--help"]) else 4
    print(script(args[0]), end="")
    return 0
