"""`getent ahostsv4 NAME`: the addresses a name resolves to, in the resolver's order (each listed once)."""

from __future__ import annotations

import ipaddress

from gb10check.errors import ParseError, excerpt

__all__ = ["parse_getent_hosts"]


def parse_getent_hosts(text: str) -> tuple[str, ...]:
    """Lines `ADDRESS  STREAM|DGRAM|RAW  [NAME]` (glibc's getent prints each address per socket type); empty
    when the name resolves to nothing (getent exits 2)."""
    out: list[str] = []
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        try:
            address = str(ipaddress.ip_address(fields[0]))
        except ValueError as exc:
            raise ParseError("getent ahostsv4", f"{excerpt(fields[0], 60)} is not an address", text) from exc
        if address not in out:
            out.append(address)
    return tuple(out)
