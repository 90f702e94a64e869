"""A kernel setting read from /proc/sys (`cat /proc/sys/net/ipv4/ip_forward`): one integer. Pure."""

from __future__ import annotations

from gb10check.errors import ParseError

__all__ = ["parse_flag"]


def parse_flag(text: str, what: str) -> bool:
    """A 0/1 setting: True for 1."""
    value = text.strip()
    if value not in ("0", "1"):
        raise ParseError(what, "expected 0 or 1", text)
    return value == "1"
