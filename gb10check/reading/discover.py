"""What a cluster's fabric is, from what each node says of itself (pure: facts in, a fabric out).

`gb10check init` reads every node once (its netdevs and addresses, its RDMA devices and the netdevs they
drive, its routes) and this module makes the inventory's fabric of it:
- a fabric port is a netdev an RDMA device drives (/sys/class/infiniband/DEV/device/net/), with an IPv4
  address; a port without one is on no rail, and said so;
- a rail is one subnet: the fabric ports of every node whose address lies in it (one per node);
- the topology follows from the rails: two nodes are a pair; every rail holding every node is a switch;
  every rail joining two nodes, the cables (a node pair's rails) making one cycle through all, a ring,
  its cables in the cycle's order from rank 0 toward its lower-ranked neighbour; anything else is said,
  not guessed.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, field

from gb10check.reading.parsers.iproute import Netdev, Route
from gb10check.reading.parsers.rdma_sysfs import RdmaPortState

__all__ = ["Fabric", "Member", "NodeReading", "Port", "Rail", "infer", "ms_first", "ports_of"]


@dataclass(frozen=True)
class Port:
    """One fabric port of a node: the netdev, the RDMA device driving it, its IPv4 address (with prefix)."""

    netdev: str
    rdma_device: str
    address: str | None
    mtu: int
    carrier: bool
    gid_index: int | None  # the RoCE v2 GID of its address (None: not in the GID table)


@dataclass(frozen=True)
class NodeReading:
    """What one node says of itself: its hostname, its fabric ports, every netdev and its routes."""

    host: str  # how it was reached, as the operator named it
    hostname: str
    ports: tuple[Port, ...]
    netdevs: dict[str, Netdev]
    routes: tuple[Route, ...] = ()

    def lan(self) -> tuple[str, str] | None:
        """(netdev, address/prefix) of the port the operator reached it on (`host` an address of it), else of
        the default route; None when neither is a port with an IPv4 address."""
        fabric = {p.netdev for p in self.ports}
        for nd in self.netdevs.values():
            for addr in nd.addresses:
                if str(ipaddress.ip_interface(addr).ip) == self.host and nd.name not in fabric:
                    return nd.name, addr
        for route in self.routes:
            dev = self.netdevs.get(route.dev)
            if route.dst == "default" and dev is not None and dev.addresses and dev.name not in fabric:
                return dev.name, dev.addresses[0]
        return None


def ports_of(netdevs: dict[str, Netdev], rdma: dict[str, RdmaPortState]) -> tuple[Port, ...]:
    """The node's fabric ports: each netdev an RDMA device drives, in the order `ip addr` lists them."""
    driver = {nd: state for state in rdma.values() for nd in state.netdevs}
    out = []
    for name, nd in netdevs.items():
        state = driver.get(name)
        if state is None:
            continue
        v4 = [a for a in nd.addresses if ipaddress.ip_interface(a).version == 4]
        address = v4[0] if v4 else None
        gid = None
        if address is not None:
            ip = str(ipaddress.ip_interface(address).ip)
            gids = state.roce_v2_ipv4(ip, name)
            gid = gids[0].index if gids else None
        out.append(Port(name, state.device, address, nd.mtu, nd.carrier, gid))
    return tuple(out)


@dataclass(frozen=True)
class Member:
    node: str
    port: Port


@dataclass(frozen=True)
class Rail:
    name: str
    subnet: str
    members: tuple[Member, ...]

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(m.node for m in self.members)

    @property
    def alike(self) -> bool:
        """Every member names the same netdev and RDMA device (the inventory's short form)."""
        return len({(m.port.netdev, m.port.rdma_device) for m in self.members}) == 1


@dataclass(frozen=True)
class Fabric:
    nodes: tuple[str, ...]  # rank order
    rails: tuple[Rail, ...]
    topology: str | None  # None: the rails make none of the three
    notes: tuple[str, ...] = field(default=())  # what was found but is on no rail, and why no topology
    cables: tuple[tuple[str, str], ...] = ()  # a ring's cables in order, each (node, next node)


def _rails(readings: Sequence[NodeReading], names: Sequence[str]) -> tuple[list[list[Member]], list[str]]:
    """The ports grouped by subnet, in the order the nodes' ports first name each subnet."""
    notes: list[str] = []
    groups: dict[ipaddress.IPv4Network | ipaddress.IPv6Network, list[Member]] = {}
    for reading, name in zip(readings, names, strict=True):
        for port in reading.ports:
            if port.address is None:
                state = "no carrier" if not port.carrier else "carrier"
                notes.append(
                    f"{name}'s {port.netdev} ({port.rdma_device}, {state}) has no IPv4 address: on no rail "
                    "(give it one in netplan if it is cabled)"
                )
                continue
            net = ipaddress.ip_interface(port.address).network
            if any(m.node == name for m in groups.get(net, [])):
                notes.append(f"{name} has two ports on {net}: only its first ({port.netdev} second) is on the rail")
                continue
            groups.setdefault(net, []).append(Member(name, port))
    alone = [(net, ms) for net, ms in groups.items() if len(ms) < 2]
    for net, ms in alone:
        notes.append(
            f"{ms[0].node}'s {ms[0].port.netdev} is alone on {net}: no other node has an address there "
            "(the far end is down, unaddressed, or on another subnet)"
        )
    return [ms for ms in groups.values() if len(ms) >= 2], notes


def _cycle(nodes: Sequence[str], pairs: set[frozenset[str]]) -> list[str] | None:
    """The one cycle through every node the node pairs make, from rank 0 toward its lower-ranked neighbour;
    None when they make no such cycle (a node without two neighbours, or two cycles)."""
    rank = {n: i for i, n in enumerate(nodes)}
    neighbours = {n: sorted((m for p in pairs if n in p for m in p if m != n), key=rank.__getitem__) for n in nodes}
    if any(len(v) != 2 for v in neighbours.values()):
        return None
    order, prev = [nodes[0]], None
    here = nodes[0]
    while True:
        nxt = [n for n in neighbours[here] if n != prev]
        if not nxt or nxt[0] == nodes[0]:
            break
        prev, here = here, nxt[0]
        order.append(here)
        if len(order) > len(nodes):
            return None
    return order if len(order) == len(nodes) else None


def infer(readings: Sequence[NodeReading], names: Sequence[str]) -> Fabric:
    """The fabric of these nodes (`names` in rank order, one per reading)."""
    groups, notes = _rails(readings, names)
    n = len(names)
    if n == 1:
        return Fabric(tuple(names), (), "single", tuple(notes))
    if n == 2:
        rails = tuple(Rail(_short(ms, i), str(_net(ms)), tuple(ms)) for i, ms in enumerate(groups))
        if not rails:
            notes.append("the two nodes share no subnet on their fabric ports: no rail, so no topology")
        return Fabric(tuple(names), rails, "pair" if rails else None, tuple(notes))
    if groups and all(len(ms) == n for ms in groups):
        rails = tuple(Rail(_short(ms, i), str(_net(ms)), tuple(ms)) for i, ms in enumerate(groups))
        return Fabric(tuple(names), rails, "switch", tuple(notes))
    if groups and all(len(ms) == 2 for ms in groups):
        order = _cycle(names, {frozenset(m.node for m in ms) for ms in groups})
        if order is not None:
            port_order = {
                (name, p.netdev): i for r, name in zip(readings, names, strict=True) for i, p in enumerate(r.ports)
            }
            return _ring(order, groups, tuple(names), notes, port_order)
        notes.append(
            "every rail joins two nodes, but the cables make no single cycle through all of them: "
            "a cable is missing or unaddressed (see the ports above)"
        )
        return Fabric(tuple(names), tuple(Rail(f"r{i + 1}", str(_net(ms)), tuple(ms)) for i, ms in enumerate(groups)),
                      None, tuple(notes))  # fmt: skip
    sizes = sorted({len(ms) for ms in groups})
    notes.append(
        f"the rails hold {', '.join(map(str, sizes))} nodes each of {n}: neither a switch (every rail every "
        "node) nor a ring (every rail two nodes)"
    )
    return Fabric(tuple(names), tuple(Rail(f"r{i + 1}", str(_net(ms)), tuple(ms)) for i, ms in enumerate(groups)),
                  None, tuple(notes))  # fmt: skip


def _net(members: Sequence[Member]) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    return ipaddress.ip_interface(members[0].port.address or "").network


def _short(members: Sequence[Member], i: int) -> str:
    """A rail every member names alike is named by its netdev (the short form), else r1, r2..."""
    return members[0].port.netdev if len({(m.port.netdev, m.port.rdma_device) for m in members}) == 1 else f"r{i + 1}"


def _ring(
    order: list[str],
    groups: list[list[Member]],
    names: tuple[str, ...],
    notes: list[str],
    port_order: dict[tuple[str, str], int],
) -> Fabric:
    """A ring's rails cable by cable in the cycle's order (c1a, c1b: the halves in their first node's port
    order), each rail's members the cable's first node, then the next."""
    cables = [(order[i], order[(i + 1) % len(order)]) for i in range(len(order))]
    position = {name: i for i, name in enumerate(names)}
    rails = []
    for k, (a, b) in enumerate(cables, start=1):
        halves = [ms for ms in groups if {m.node for m in ms} == {a, b}]
        halves.sort(key=lambda ms: min(port_order[(m.node, m.port.netdev)] for m in ms if m.node == ms_first(ms, a)))
        for h, ms in enumerate(halves):
            ordered = tuple(sorted(ms, key=lambda m: (m.node != a, position[m.node])))
            rails.append(Rail(f"c{k}{'abcdefgh'[h] if h < 8 else h}", str(_net(ms)), ordered))
    return Fabric(names, tuple(rails), "ring", tuple(notes), tuple(cables))


def ms_first(members: Sequence[Member], node: str) -> str:
    """`node` when it is one of the members (a cable's first node), else the first member's."""
    return node if any(m.node == node for m in members) else members[0].node
