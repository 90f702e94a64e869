"""`ip -j neigh show` (iproute2's JSON): which link-layer address answered for each neighbour address. Pure."""

from __future__ import annotations

import json
from dataclasses import dataclass

from gb10check.errors import ParseError
from gb10check.reading.parsers.iproute import _json_list as json_list

__all__ = ["NO_ANSWER", "Neighbour", "answer_for", "parse_ip_neigh"]

NO_ANSWER = frozenset({"FAILED", "INCOMPLETE"})  # the kernel asked and nothing answered (yet)


@dataclass(frozen=True)
class Neighbour:
    address: str  # the neighbour's IP address (dst)
    netdev: str  # the netdev the kernel asked on (dev)
    mac: str | None  # who answered (lladdr), lower case; None: nothing did
    states: tuple[str, ...]  # REACHABLE, STALE, DELAY, PROBE, FAILED, INCOMPLETE, PERMANENT, NOARP

    @property
    def answered(self) -> bool:
        return self.mac is not None and not NO_ANSWER & set(self.states)


def parse_ip_neigh(text: str) -> tuple[Neighbour, ...]:
    """`ip -j neigh show`: every entry of the neighbour tables (an empty table is `[]`)."""
    what = "ip -j neigh show"
    data = json_list(text, what)
    out = []
    for item in data:
        try:
            lladdr = item.get("lladdr")
            out.append(
                Neighbour(
                    address=str(item["dst"]),
                    netdev=str(item["dev"]),
                    mac=str(lladdr).lower() if lladdr else None,
                    states=tuple(str(s) for s in item.get("state", [])),
                )
            )
        except (AttributeError, KeyError, TypeError) as exc:
            raise ParseError(what, f"an entry without {exc}", json.dumps(item)) from exc
    return tuple(out)


def answer_for(table: tuple[Neighbour, ...], address: str, netdev: str) -> Neighbour | None:
    """The table's entry for `address` asked on `netdev` (None: the kernel never asked there)."""
    return next((n for n in table if n.address == address and n.netdev == netdev), None)
