"""/proc/meminfo."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gb10check.errors import ParseError, excerpt

__all__ = ["GIB", "MemInfo", "parse_meminfo"]

GIB = 1024**3
_LINE_RE = re.compile(r"^(?P<key>[A-Za-z0-9_()]+):\s*(?P<value>\d+)(?:\s*(?P<unit>kB))?\s*$")
_REQUIRED = ("MemTotal", "MemFree", "MemAvailable")


@dataclass(frozen=True)
class MemInfo:
    fields: dict[str, int]  # bytes for kB fields, plain counts otherwise

    @property
    def total(self) -> int:
        return self.fields["MemTotal"]

    @property
    def available(self) -> int:
        return self.fields["MemAvailable"]

    @property
    def page_cache(self) -> int:
        return self.fields.get("Cached", 0) + self.fields.get("Buffers", 0)

    @property
    def swap_used(self) -> int | None:
        """SwapTotal - SwapFree (bytes); None where the kernel printed neither (no evidence either way)."""
        if "SwapTotal" not in self.fields or "SwapFree" not in self.fields:
            return None
        return self.fields["SwapTotal"] - self.fields["SwapFree"]


def parse_meminfo(text: str) -> MemInfo:
    fields: dict[str, int] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        match = _LINE_RE.match(line.strip())
        if not match:
            raise ParseError("/proc/meminfo", f"unexpected line {excerpt(line, 120)}", text)
        value = int(match["value"])
        fields[match["key"]] = value * 1024 if match["unit"] else value
    missing = [k for k in _REQUIRED if k not in fields]
    if missing:
        raise ParseError("/proc/meminfo", f"missing {', '.join(missing)} (truncated?)", text)
    return MemInfo(fields=fields)
