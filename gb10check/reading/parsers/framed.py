"""Several files read in one probe: `=== <mode> <owner> <path>` headers, then each file's text."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gb10check.errors import ParseError

__all__ = ["FileRead", "framed_files_command", "framed_paths", "parse_framed_files", "parse_word"]

_HEADER = re.compile(r"^=== (?P<mode>[0-7]{3,4}) (?P<owner>\S+) (?P<path>\S.*)$", re.MULTILINE)


@dataclass(frozen=True)
class FileRead:
    path: str
    mode: int
    owner: str
    text: str


def parse_framed_files(text: str, what: str) -> list[FileRead]:
    headers = list(_HEADER.finditer(text))
    if text.strip() and (not headers or text[: headers[0].start()].strip()):
        raise ParseError(what, "expected '=== <mode> <owner> <path>' before each file", text)
    out = []
    for i, h in enumerate(headers):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(text)
        out.append(FileRead(h["path"], int(h["mode"], 8), h["owner"], text[h.end() + 1 : end]))
    return out


def framed_paths(text: str) -> list[str]:
    """The files a framed read named, even when reading them failed (the header comes first)."""
    return [h["path"] for h in _HEADER.finditer(text)]


def framed_files_command(glob: str, reader: str = "cat") -> str:
    """The shell that prints every file matching glob in that frame (reader may be `sudo -n cat`)."""
    return (
        f'rc=0; for f in {glob}; do [ -e "$f" ] || continue; '
        f'echo "=== $(stat -c \'%a %u\' "$f") $f"; {reader} "$f" || rc=$?; echo; done; exit $rc'
    )


def parse_word(text: str, what: str) -> str:
    """A command that prints one word (`id -un`, `hostname`, `systemctl is-enabled`)."""
    words = text.split()
    if len(words) != 1:
        raise ParseError(what, "expected one word", text)
    return words[0]
