"""NCCL's configuration files, as NCCL reads them (src/misc/param.cc, setEnvFile and initEnv).

NCCL reads $NCCL_CONF_FILE (else ~/.nccl.conf of the process's user), then /etc/nccl.conf. Each
line up to its first `=` is a name, the rest (untrimmed) its value; a line without `=` is skipped.
Every assignment goes through setenv(name, value, 0): a variable already in the environment wins,
then the first file that sets it. So a file cannot override what the compose sets; it sets, unseen,
whatever the compose leaves out (NCCL_IB_DISABLE=1, NCCL_NET=Socket, ...). Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gb10check.errors import ParseError

__all__ = ["NcclSetting", "in_force", "parse_conf_lines"]

# `grep -Hs = FILES`: path:line, for the files that exist (their lines that hold a `=`)
_GREP_LINE = re.compile(r"^(?P<path>/[^:]+):(?P<line>.*)$")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class NcclSetting:
    path: str
    name: str
    value: str


def parse_conf_lines(text: str, what: str) -> list[NcclSetting]:
    """`grep -H` output over the config files, in the order NCCL reads them (the command lists them so)."""
    out = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        m = _GREP_LINE.match(raw)
        if not m:
            raise ParseError(what, "expected PATH:LINE (grep -H) for every line", text)
        name, sep, value = m["line"].partition("=")
        if sep:
            out.append(NcclSetting(m["path"], name, value))
    return out


def in_force(settings: list[NcclSetting], environment: dict[str, str]) -> list[NcclSetting]:
    """The file settings NCCL applies: the first file's value of a name the environment lacks. (A
    comment line with a `=` sets a variable named `# NCCL_X`, which nothing reads: not counted.)"""
    seen: set[str] = set()
    out = []
    for s in settings:
        if not _NAME.fullmatch(s.name) or s.name in environment or s.name in seen:
            continue
        seen.add(s.name)
        out.append(s)
    return out
