"""Pure parsers: tool output text in, frozen dataclasses out, ParseError on anything unexpected.

No I/O here. Parsers do not rely on line order or exact spacing where the tools do not
guarantee them.
"""

from __future__ import annotations

import json
from typing import Any

from gb10check.errors import ParseError


def json_object(text: str, what: str) -> dict[str, Any]:
    """Text that must be one JSON object; ParseError, quoting it, otherwise."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(what, f"not JSON ({exc.msg})", text) from exc
    if not isinstance(value, dict):
        raise ParseError(what, "not a JSON object", text)
    return value
