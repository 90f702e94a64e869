"""Which check owns a dark port: one fault, one failure; every check whose evidence the dark port explains
follows from it (skips, naming it) instead of failing again.

A port is dark when its netdev is absent, administratively DOWN, or has no carrier. The interface check of
one end owns it (`OWNER_TEST`, the check that reads the netdev's state):
- an end that is absent or DOWN owns its own darkness;
- on a direct cable (a pair, a ring: two ends per rail) an end without carrier follows from the other end
  when that one is absent or DOWN (the fix is there), and when both ends are up without carrier (the cable,
  or a module) the first end of the rail owns it, naming the other;
- behind a switch each end is its own (the switch port, which the suite cannot ask; another node being off
  leaves this port lit);
- an end whose state is not known (its node cannot be asked) owns nothing and explains nothing here: the
  node's own checks say so (`node.follows_from`).
Pure: states in, owners out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

State = Literal["up", "absent", "down", "no-carrier", "unknown"]
DARK: tuple[State, ...] = ("absent", "down", "no-carrier")
OWNER_TEST = "tests_network/test_interfaces.py::test_qsfp_netdev_up_with_its_address[{node}-{netdev}]"
FOLLOWS = "follows from "  # how every such skip reason begins (the terminal counts them)
_SAID = {"absent": "is absent", "down": "is administratively DOWN", "no-carrier": "has no carrier"}


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
                if any(o.state == "unknown" for o in others):
                    continue  # the far node cannot be asked: its own checks own this (node.follows_from)
                fixed_there = next((o for o in others if o.state in ("absent", "down")), None)
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
