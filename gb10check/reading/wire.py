"""The cabling, from the wire: who answered ARP for a peer's address on a rail (the neighbour table of
the node that asked, probes.NEIGHBOURS) against the MAC of the netdev the inventory puts it on."""

from __future__ import annotations

from dataclasses import dataclass

from gb10check import inventory as inv
from gb10check.errors import GB10Error
from gb10check.reading import probes
from gb10check.reading.node import ClusterNodes
from gb10check.reading.parsers.neigh import answer_for

__all__ = ["NO_MAC", "Answer", "answer", "answered_wrong", "holds", "macs", "misplaced", "what_to_move"]

NO_MAC = "00:00:00:00:00:00"


@dataclass(frozen=True)
class Answer:
    """Who answered `mine.node` for `theirs`'s address out of `mine.netdev`."""

    mine: inv.Member
    theirs: inv.Member
    mac: str | None  # None: nothing answered
    expected_mac: str | None  # the MAC of theirs.netdev as its node reports it (None: not reported)
    owner: tuple[str, str] | None  # (node, netdev) that reports `mac`, None: no node of the inventory
    instead: str | None = None  # the address `mac` answered for, when not theirs (nothing answered for theirs)

    @property
    def right(self) -> bool:
        return self.mac is not None and self.mac == self.expected_mac

    @property
    def wrong(self) -> bool:
        """A MAC answered, and it is not the expected netdev's."""
        return self.mac is not None and self.expected_mac is not None and self.mac != self.expected_mac

    @property
    def by(self) -> str:
        who = f"{self.owner[0]}'s {self.owner[1]}" if self.owner else f"{self.mac} (no node's)"
        if self.instead:
            return f"nobody; on that wire {who} answers (for {self.instead})"
        return who


def macs(cluster: ClusterNodes) -> dict[str, tuple[str, str]]:
    """Every MAC the nodes that could be asked report for their netdevs -> (node, netdev)."""
    out: dict[str, tuple[str, str]] = {}
    for name in cluster.nodes:
        try:
            netdevs = cluster.snapshot(name).fact(probes.IP_ADDR)
        except GB10Error:
            continue  # a node that cannot be asked: its own checks say so
        out |= {d.mac: (name, d.name) for d in netdevs.values() if d.mac and d.mac != NO_MAC}
    return out


def answer(cluster: ClusterNodes, rail: inv.Rail, mine: inv.Member, theirs: inv.Member) -> Answer:
    """Who answered `mine` for `theirs` on `rail`; raises the snapshot's error when the asking node's table
    cannot be read."""
    table = cluster.snapshot(mine.node).fact(probes.NEIGHBOURS)
    entry = answer_for(table, theirs.ip, mine.netdev)
    mac = entry.mac if entry is not None and entry.answered else None
    dev = cluster.snapshot(theirs.node).fact(probes.IP_ADDR).get(theirs.netdev)
    expected = dev.mac if dev is not None and dev.mac else None
    owners = macs(cluster)
    if mac is None:  # nothing answered for it: a node off this rail that answered on that wire (its own address)
        members = {(m.node, m.netdev) for m in rail.members}
        other = next(
            (
                n
                for n in table
                if n.netdev == mine.netdev and n.answered and owners.get(n.mac or "", members) not in members
            ),
            None,
        )
        if other is not None and other.mac is not None:
            return Answer(mine, theirs, other.mac, expected, owners[other.mac], instead=other.address)
    return Answer(mine, theirs, mac, expected, owners.get(mac or ""))


def answered_wrong(cluster: ClusterNodes, rail: inv.Rail, mine: inv.Member, theirs: inv.Member) -> Answer | None:
    """The answer when another netdev than the inventory's answered (a crossed wire); None otherwise or
    when there is no evidence either way (for another check's hint: never raises)."""
    try:
        found = answer(cluster, rail, mine, theirs)
    except GB10Error:
        return None
    return found if found.wrong else None


def holds(cluster: ClusterNodes, node: str, ip: str) -> bool:
    """Whether `node` reports `ip` on any of its netdevs."""
    try:
        netdevs = cluster.snapshot(node).fact(probes.IP_ADDR)
    except GB10Error:
        return False
    return any(a.split("/")[0] == ip for d in netdevs.values() for a in d.addresses)


def what_to_move(cluster: ClusterNodes, found: Answer) -> str:
    """The wrong answer as the operator fixes it: the cable end or switch port to move, or the address twice."""
    mine, theirs = found.mine, found.theirs
    if found.owner is None:
        return f"a MAC no node of the inventory reports holds {theirs.ip} on the wire of {mine.node}'s {mine.netdev}"
    node, netdev = found.owner
    if node == theirs.node:
        return (
            f"on {theirs.node}, swap the cables (or switch ports) of {netdev} and {theirs.netdev}: the wire of "
            f"{mine.node}'s {mine.netdev} ends at {netdev} ({found.mac}), not at {theirs.netdev}"
        )
    if holds(cluster, node, theirs.ip):
        return f"{node} holds {theirs.ip} too (an address twice): take it off {node}'s {netdev}"
    return (
        f"{mine.node}'s {mine.netdev} is wired to {node}'s {netdev}, not to {theirs.node}'s {theirs.netdev}: move "
        f"that cable (or switch port) to {theirs.node}'s {theirs.netdev}"
        + (" (a ring: rank k's port 0 to rank k+1's port 1)" if cluster.inventory.topology == "ring" else "")
    )


def misplaced(cluster: ClusterNodes, rail: inv.Rail) -> str | None:
    """On a rail of more than two members (a switch), the one node in every pair whose answers are wrong:
    the node on another port or bridge (each pair alone cannot tell which of its two it is). None when
    no single node explains them, or on a cable (two members: either end may be the one to move)."""
    if len(rail.members) <= 2:
        return None
    members = list(rail.members)
    bad = [
        {a.node, b.node} for i, a in enumerate(members) for b in members[i + 1 :]
        if answered_wrong(cluster, rail, a, b) or answered_wrong(cluster, rail, b, a)
    ]  # fmt: skip
    common = set.intersection(*bad) if bad else set()
    return common.pop() if len(common) == 1 else None
