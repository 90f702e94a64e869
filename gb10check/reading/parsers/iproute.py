"""`ip -j -d addr` and `ip -j route` (iproute2's JSON): the netdevs, their state and addresses, the routes."""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from typing import Any

from gb10check.errors import ParseError

__all__ = ["Netdev", "Route", "parse_ip_addr", "parse_ip_route"]


@dataclass(frozen=True)
class Netdev:
    name: str
    admin_up: bool  # the UP flag: `ip link set dev X up`
    carrier: bool  # LOWER_UP: the cable and the other end are there
    mtu: int
    operstate: str
    addresses: tuple[str, ...]  # IPv4 "address/prefix", as the inventory writes them
    mac: str = ""  # its link-layer address, lower case ("": none reported)

    def has(self, address: str) -> bool:
        return ipaddress.ip_interface(address) in {ipaddress.ip_interface(a) for a in self.addresses}


@dataclass(frozen=True)
class Route:
    dst: str  # "default" or "a.b.c.d/n"
    dev: str
    gateway: str | None


def _json_list(text: str, what: str) -> list[Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(what, f"not JSON ({exc.msg} at character {exc.pos})", text) from exc
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise ParseError(what, "expected a JSON list of objects", text)
    return data


def parse_ip_addr(text: str) -> dict[str, Netdev]:
    """`ip -j -d addr`: netdev name -> its state and IPv4 addresses."""
    what = "ip -j -d addr"
    out: dict[str, Netdev] = {}
    for item in _json_list(text, what):
        try:
            flags = set(item["flags"])
            addresses = tuple(
                f"{a['local']}/{a['prefixlen']}" for a in item.get("addr_info", []) if a.get("family") == "inet"
            )
            out[item["ifname"]] = Netdev(
                name=str(item["ifname"]),
                admin_up="UP" in flags,
                carrier="LOWER_UP" in flags and "NO-CARRIER" not in flags,
                mtu=int(item["mtu"]),
                operstate=str(item.get("operstate", "UNKNOWN")),
                addresses=addresses,
                mac=str(item.get("address", "")).lower(),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ParseError(what, f"an interface without {exc}", json.dumps(item)) from exc
    if not out:
        raise ParseError(what, "no interface at all", text)
    return out


def parse_ip_route(text: str) -> tuple[Route, ...]:
    """`ip -j route` (the main table, IPv4)."""
    what = "ip -j route"
    try:
        return tuple(
            Route(str(r["dst"]), str(r["dev"]), str(r["gateway"]) if "gateway" in r else None)
            for r in _json_list(text, what)
        )
    except KeyError as exc:
        raise ParseError(what, f"a route without {exc}", text) from exc
