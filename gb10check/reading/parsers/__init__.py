"""Pure parsers: tool output text in, frozen dataclasses out, ParseError on anything unexpected.

No I/O here. Parsers do not rely on line order or exact spacing where the tools do not
guarantee them.
"""

from __future__ import annotations

import json
from typing import Any

from gb10check.errors import ParseError

__all__ = ["CHUNK", "MAX_LINE", "bounded_chunks", "bounded_line", "json_object"]

# the most of one line a pattern is matched against: a node may print a line of 10 MB, and a pattern
# that backtracks (`A.*B`) costs up to the square of a line's length, in one call that holds the GIL
MAX_LINE = 4096
# the most text one search over many lines sees (bounded_chunks): A.*B over two such lines ~50 ms
CHUNK = 2 * MAX_LINE


def bounded_line(line: str) -> str:
    """The line, or its first MAX_LINE characters and how many more there were (saying so, in the text)."""
    if len(line) <= MAX_LINE:
        return line
    return f"{line[:MAX_LINE]} [gb10check: {len(line) - MAX_LINE} more characters of this line not read]"


def bounded_chunks(text: str) -> list[str]:
    """The text for a pattern search: each line bounded, the lines in stretches of at most CHUNK characters."""
    if len(text) <= MAX_LINE:
        return [text]
    chunks: list[str] = []
    lines: list[str] = []
    size = 0
    for line in text.split("\n"):
        line = bounded_line(line)
        if lines and size + len(line) > CHUNK:
            chunks.append("\n".join(lines))
            lines, size = [], 0
        lines.append(line)
        size += len(line) + 1
    return [*chunks, "\n".join(lines)]


def json_object(text: str, what: str) -> dict[str, Any]:
    """Text that must be one JSON object; ParseError, quoting it, otherwise."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(what, f"not JSON ({exc.msg})", text) from exc
    if not isinstance(value, dict):
        raise ParseError(what, "not a JSON object", text)
    return value
