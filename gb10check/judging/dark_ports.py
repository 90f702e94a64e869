"""Which check owns a dark port: one fault, one failure; every check whose evidence the dark port explains
follows from it (skips, naming it) instead of failing again.

A port is dark when its netdev is absent, administratively DOWN, or has no carrier, or when its node
cannot be reached at all (off or hung: every end of it is dark to the others). The interface check of one
end owns it (`OWNER_TEST`, the check that reads the netdev's state; about a node that cannot be reached it
fails saying so, node-unreachable):
- an end that is absent, DOWN or on a node that cannot be reached owns its own darkness;
- on a direct cable (a pair, a ring: two ends per rail) an end without carrier follows from the other end
  when that one is absent, DOWN or unreachable (the fix is there), and when both ends are up without
  carrier (the cable, or a module) the first end of the rail owns it, naming the other;
- behind a switch each end is its own (the switch port, which the suite cannot ask; another node being off
  leaves this port lit, and a check between the two follows from the node that is off);
- an end whose state cannot be read on a node that answers owns nothing and explains nothing here: its
  own check fails saying why.
Pure: states in, owners out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["DARK", "FIXED_THERE", "FOLLOWS", "OWNER_TEST", "End", "Owner", "State", "explaining", "owners"]

State = Literal["up", "absent", "down", "no-carrier", "unreachable", "unknown"]
DARK: tuple[State, ...] = ("absent", "down", "no-carrier", "unreachable")
FIXED_THERE: tuple[State, ...] = ("absent", "down", "unreachable")  # a far end whose own state darkens this one
OWNER_TEST = "tests_network/test_interfaces.py::test_qsfp_netdev_up_with_its_address[{node}-{netdev}]"
FOLLOWS = "follows from "  # how every such skip reason begins (the terminal counts them)
_SAID = {"absent": "is absent", "down": "is administratively DOWN", "no-carrier": "has no carrier"}
_UNREACHABLE = "cannot be reached (off or hung: every end of it is dark)"


@dataclass(frozen=True)
class End:
    """One end of a rail as its node's `ip addr` has it."""

    node: str
    netdev: str
    state: State


@dataclass(frozen=True)
class Owner:
    """The end whose check owns a dark port (and the other end, when the cable itself is the fault)."""

    end: End
    rail: str
    other: End | None = None  # a cable without carrier at both ends: the end the owner names

    @property
    def test(self) -> str:
        return OWNER_TEST.format(node=self.end.node, netdev=self.end.netdev)

    @property
    def check(self) -> str:
        """The owning check as the reports name it (its function and parameters)."""
        return self.test.split("::", 1)[1]

    def found(self) -> str:
        """What the owner found, in words: `spark-2's enP2p1s0f0np0 is administratively DOWN`."""
        if self.end.state == "unreachable":
            return f"{self.end.node} {_UNREACHABLE}"
        said = f"{self.end.node}'s {self.end.netdev} {_SAID[self.end.state]}"
        if self.other is not None:
            said += f", as {self.other.node}'s {self.other.netdev} at the cable's other end"
        return f"{said} (rail {self.rail})"

    def follows(self) -> str:
        """The skip reason of a check whose evidence this dark port explains."""
        return f"{FOLLOWS}{self.check}: {self.found()}"


def owners(rails: Mapping[str, Sequence[End]], switched: bool) -> dict[tuple[str, str], Owner]:
    """The owner of every dark end, by (node, rail name); `rails` lists each rail's ends in rail order,
    `switched` when the rails go through a switch (every end its own)."""
    found: dict[tuple[str, str], Owner] = {}
    for rail, ends in rails.items():
        for end in ends:
            if end.state not in DARK:
                continue
            owner = Owner(end, rail)
            others = [e for e in ends if e.node != end.node]
            if end.state == "no-carrier" and not switched and others:
                fixed_there = next((o for o in others if o.state in FIXED_THERE), None)
                if fixed_there is None and any(o.state == "unknown" for o in others):
                    continue  # the far end's state cannot be read: this end's check says what it can
                dark = [e for e in ends if e.state == "no-carrier"]
                if fixed_there is not None:
                    owner = Owner(fixed_there, rail)
                elif len(dark) > 1:  # up at both ends, no carrier at either: the cable; its first end says so
                    first = dark[0]
                    owner = Owner(first, rail, other=next(e for e in dark if e.node != first.node))
            found[(end.node, rail)] = owner
    return found


def explaining(owners_found: Mapping[tuple[str, str], Owner], pairs: Sequence[tuple[str, str]]) -> Owner | None:
    """The owner that explains a check over these (node, rail) ends (a ping, a login, a bandwidth run): the
    first dark one's, None when every end is lit or not known."""
    return next((owners_found[p] for p in pairs if p in owners_found), None)
