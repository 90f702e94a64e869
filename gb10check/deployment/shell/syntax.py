"""A shell script's syntax tree, from mvdan/sh's parser (`shfmt --to-json`, from the shfmt-py wheel).

mvdan/sh is a maintained bash parser tested against bash itself: it reads what `bash -n` accepts
(case patterns with `$'...'` inside brackets, `python3 -c` with nested quotes, arithmetic, here-documents,
functions, arrays), and prints its tree as typed JSON (every node a dict with `Type`; statements,
words and their parts, positions with Line and Col). Nothing here runs the script: shfmt only parses.
The parse is bounded in time and size; what shfmt refuses is a ParseError with its own line:col words.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from gb10check.errors import ParseError

__all__ = ["MAX_SCRIPT", "PARSE_TIMEOUT", "Node", "Script", "line", "parse", "shfmt"]

Node = dict[str, Any]
MAX_SCRIPT = 1 << 20  # a launch script or a container command larger than 1 MiB is no launcher
PARSE_TIMEOUT = 10.0


@cache
def shfmt() -> str:
    """The shfmt binary: the one installed beside this Python (shfmt-py puts it in the venv's bin), else PATH."""
    beside = Path(sys.executable).parent / "shfmt"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("shfmt")
    if found is None:
        raise ParseError(
            "a shell script",
            "mvdan/sh's shfmt is not installed (gb10check reads scripts with it): pip install shfmt-py",
            "",
        )
    return found


@dataclass(frozen=True)
class Script:
    """A parsed script: its text (for excerpts by offset) and its tree's statements."""

    text: str
    stmts: list[Node]
    what: str

    def source(self, node: Node) -> str:
        """The script's own text of a node (what it says there, as written)."""
        start, end = node.get("Pos", {}).get("Offset"), node.get("End", {}).get("Offset")
        if start is None or end is None:
            return ""
        return self.text.encode()[start:end].decode(errors="replace")


def line(node: Node | None) -> int:
    """The line a node starts on (1-based; 0 when the tree gives none)."""
    return int(((node or {}).get("Pos") or {}).get("Line") or 0)


def parse(text: str, what: str) -> Script:
    """The script's syntax tree, as bash would read it; ParseError with shfmt's message otherwise."""
    if len(text) > MAX_SCRIPT:
        raise ParseError(what, f"{len(text)} characters: more than a launch script ({MAX_SCRIPT})", text[:200])
    if "\x00" in text:
        raise ParseError(what, "it has a NUL character: no shell reads that as a script", text)
    try:
        done = subprocess.run(
            [shfmt(), "-ln", "bash", "--to-json"],
            input=text.encode(),
            capture_output=True,
            timeout=PARSE_TIMEOUT,
            cwd="/",  # no EditorConfig of the caller's folder applies
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ParseError(what, f"the shell parser took more than {PARSE_TIMEOUT:g} s", text) from exc
    except OSError as exc:
        raise ParseError(what, f"cannot run the shell parser {shfmt()}: {exc}", text) from exc
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        said = message[0] if message else f"exit status {done.returncode}"
        said = said.removeprefix("<standard input>:")
        raise ParseError(what, f"bash cannot parse it: line {said}", text, hint_ids=("container-script-unreadable",))
    try:
        tree = json.loads(done.stdout)
    except ValueError as exc:  # shfmt printed something else: its own fault, said plainly
        raise ParseError(
            what, f"the shell parser printed no JSON: {exc}", done.stdout.decode(errors="replace")
        ) from exc
    return Script(text, list(tree.get("Stmts") or []), what)
