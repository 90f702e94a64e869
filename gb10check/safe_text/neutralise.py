"""The one neutralising step: what a node or the API printed is shown, never obeyed.

A tool's stderr, a kernel log line, a served model name or a version string may hold terminal
control sequences: ESC (an xterm title, a cleared screen, an OSC 8 link), a carriage return that
rewrites the line, C1 controls, Unicode's bidirectional overrides that reorder what is read.
`neutralise()` shows each such character visibly, as `repr()` does in error excerpts
(`\\x1b`, `\\r`, `\\x9b`, `\\u202e`); a line break and a tab stay what they are. It runs at the
boundaries the redaction step runs at (errors.py, verdict.py, the failure reports, the hint text,
the summaries, JUnit, the Prometheus file, report.html), so that the terminal, `cat summary.md`
and a decoded summary.json never replay a node's bytes.
"""

from __future__ import annotations

import re

__all__ = ["neutralise", "neutralise_tree"]

# C0 controls but tab and line feed, DEL, C1 controls; Unicode's bidirectional marks, embeddings,
# overrides and isolates ("Trojan source"); the line and paragraph separators
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\r": "\\r"}


def _shown(match: re.Match[str]) -> str:
    char = match[0]
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}")


def neutralise(text: str) -> str:
    """`text` with every control character shown as its escape (linear in its length)."""
    if not text:
        return text
    return _CONTROL.sub(_shown, text)


def neutralise_tree(value: object) -> object:
    """Every string of a JSON-shaped structure, keys too, neutralised (before it is serialised)."""
    if isinstance(value, str):
        return neutralise(value)
    if isinstance(value, dict):
        return {neutralise(k) if isinstance(k, str) else k: neutralise_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [neutralise_tree(v) for v in value]
    return value
