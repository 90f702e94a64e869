"""`gb10check init` with no nodes named: the other nodes, found on the fabric.

From rank 0, breadth first: out of each fabric port (a netdev an RDMA device drives, with an IPv4
address), one one-packet ping to every address of its subnet (its /24 when the subnet is larger), all at
once, then the neighbour table (`ip -j neigh show`): each address that answered is read over SSH (its
hostname, netdevs and RDMA ports, one round trip, in parallel). A node seen at two addresses (one per
rail) is one node, by its hostname. A node found brings the subnets only it is on (a ring's next cable):
they are swept from it in turn, until no new subnet is found. An address that answers the ping and not
SSH (a switch's own address, a laptop) is said, not used. Read-only: a ping changes nothing on a node.
"""

from __future__ import annotations

import ipaddress
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gb10check.errors import GB10Error
from gb10check.reading import discover, probes
from gb10check.reading.parsers.iproute import Netdev
from gb10check.reading.parsers.neigh import Neighbour, parse_ip_neigh
from gb10check.reading.snapshot import Probe, Snapshot

__all__ = [
    "HOP_COMMAND",
    "MAX_NODES",
    "SWEEP_PREFIX",
    "Peers",
    "Reader",
    "answered",
    "find",
    "lan_address",
    "lan_subnets",
    "sweep_command",
    "sweep_targets",
]


MAX_NODES = 16  # a GB10 cluster is two to eight nodes: past this, the fabric is not one cluster's
SWEEP_PREFIX = 24  # a larger subnet is swept over the /24 around the port's own address


def sweep_targets(address: str) -> list[str]:
    """Every other address of the port's subnet (of the /24 around it, when the subnet is larger)."""
    iface = ipaddress.ip_interface(address)
    net = iface.network
    if net.prefixlen < SWEEP_PREFIX:
        net = ipaddress.ip_network(f"{iface.ip}/{SWEEP_PREFIX}", strict=False)
    hosts = list(net.hosts()) if net.prefixlen < 31 else list(net)
    return [str(h) for h in hosts if h != iface.ip]


def sweep_command(ports: Sequence[discover.Port]) -> str | None:
    """One ping per address of each port's subnet out of that port, all at once; then the neighbour table."""
    loops = []
    for port in ports:
        if port.address is None:
            continue
        targets = " ".join(sweep_targets(port.address))
        loops.append(
            f'for a in {targets}; do ping -n -c 1 -W 1 -I {shlex.quote(port.netdev)} "$a" >/dev/null 2>&1 & done; '
        )
    return "".join(loops) + "wait; ip -j neigh show" if loops else None


def answered(neighbours: Sequence[Neighbour], ports: Sequence[discover.Port]) -> list[tuple[str, str]]:
    """(address, netdev) of each neighbour that answered inside a swept port's subnet."""
    swept = {
        p.netdev: ipaddress.ip_interface(p.address).network for p in ports if p.address is not None
    }  # fmt: skip
    out = []
    for n in neighbours:
        net = swept.get(n.netdev)
        if net is None or not n.answered:
            continue
        ip = ipaddress.ip_address(n.address)
        if ip.version == net.version and ip in net:
            out.append((n.address, n.netdev))
    return sorted(set(out), key=lambda an: (an[1], ipaddress.ip_address(an[0])))


@dataclass
class Peers:
    """What the sweep found: each other node's SSH address by hostname, in the order found (its LAN address
    where rank 0 shares that subnet, else the fabric address it answered at); where each answered; and what
    answered but is no node."""

    rank0: str  # rank 0's hostname
    hosts: dict[str, str] = field(default_factory=dict)  # hostname -> the address rank 0 reads it at
    seen_at: dict[str, list[str]] = field(default_factory=dict)  # hostname -> "address (netdev)"
    not_nodes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# reads each (host, probes) in one round trip, in parallel ("local": rank 0 itself)
Reader = Callable[[Sequence[tuple[str, tuple[Probe, ...]]]], list[Snapshot]]


def _ports(snap: Snapshot) -> tuple[discover.Port, ...]:
    return discover.ports_of(snap.fact(probes.IP_ADDR), snap.fact(probes.RDMA_PORTS))


def lan_subnets(snap: Snapshot) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """The subnets of a node's netdevs that are no fabric port (its LAN), loopback left out."""
    fabric = {p.netdev for p in _ports(snap)}
    out = []
    for name, nd in snap.fact(probes.IP_ADDR).items():
        if name in fabric:
            continue
        for address in nd.addresses:
            iface = ipaddress.ip_interface(address)
            if not iface.ip.is_loopback:
                out.append(iface.network)
    return out


def lan_address(netdevs: dict[str, Netdev], fabric: set[str], lans: Sequence[object]) -> str | None:
    """The node's address on one of rank 0's LAN subnets (where rank 0 reaches it without the fabric)."""
    for name, nd in netdevs.items():
        if name in fabric:
            continue
        for address in nd.addresses:
            iface = ipaddress.ip_interface(address)
            if iface.network in lans:
                return str(iface.ip)
    return None


HOP_COMMAND = (
    "ssh -n -o BatchMode=yes -o ConnectTimeout=5 -o StrictHostKeyChecking=yes -o PasswordAuthentication=no "
    "{address} ip -j -d addr"
)


def find(rank0: Snapshot, read: Reader, identity: tuple[Probe, ...], hostname: Callable[[Snapshot], str]) -> Peers:
    """Breadth first from rank 0 (already read with `identity`: hostname, netdevs, RDMA ports): sweep each
    node's new subnets, read what answered, go on from the nodes found.

    A node that answers where rank 0 cannot reach it (a ring's far node, on its near neighbour's other cable)
    is asked its addresses through that neighbour (`ssh` from it, as the nodes' own SSH mesh allows) and read
    at its address on rank 0's LAN."""
    if rank0.error is not None:
        raise rank0.error
    peers = Peers(hostname(rank0))
    lans = lan_subnets(rank0)
    swept: set[str] = set()
    frontier: list[tuple[str, Snapshot]] = [("local", rank0)]
    known = {peers.rank0}
    seen: set[str] = set()  # addresses already asked
    while frontier and len(known) < MAX_NODES:
        sweeps = []
        for host, snap in frontier:
            fresh = [
                p for p in _ports(snap) if p.address and str(ipaddress.ip_interface(p.address).network) not in swept
            ]
            swept |= {_subnet(p.address) for p in fresh if p.address}
            command = sweep_command(fresh)
            if command is not None:
                sweeps.append((host, fresh, command))
        if not sweeps:
            break
        results = read([(host, (Probe("sweep", command),)) for host, _, command in sweeps])
        candidates: dict[str, tuple[str, str]] = {}  # address -> (netdev, the sweeper's host)
        for (host, ports, _), result in zip(sweeps, results, strict=True):
            try:
                found = answered(parse_ip_neigh(result.raw("sweep").stdout), ports)
            except GB10Error as exc:
                peers.notes.append(f"the neighbour table of {host} could not be read: {exc}")
                continue
            mine = {str(ipaddress.ip_interface(p.address).ip) for p in ports if p.address}
            for address, netdev in found:
                if address not in mine and address not in seen:
                    candidates.setdefault(address, (netdev, host))
        seen |= set(candidates)
        frontier = _identify(candidates, read, identity, hostname, lans, peers, known)
    if len(known) >= MAX_NODES:
        peers.notes.append(f"stopped at {MAX_NODES} nodes: name the cluster's nodes instead (gb10check init HOST ...)")
    return peers


def _subnet(address: str) -> str:
    return str(ipaddress.ip_interface(address).network)


def _identify(
    candidates: dict[str, tuple[str, str]],
    read: Reader,
    identity: tuple[Probe, ...],
    hostname: Callable[[Snapshot], str],
    lans: Sequence[object],
    peers: Peers,
    known: set[str],
) -> list[tuple[str, Snapshot]]:
    """Each address that answered, read over SSH (directly, else through the node that swept it); the new
    nodes, to sweep from next."""
    order = list(candidates)
    snaps = dict(zip(order, read([(a, identity) for a in order]), strict=True))
    far = [a for a in order if snaps[a].error is not None and candidates[a][1] != "local"]
    if far:  # not reachable from rank 0: its addresses through its neighbour, then its LAN address
        hops = read([(candidates[a][1], (Probe("hop", HOP_COMMAND.format(address=shlex.quote(a))),)) for a in far])
        via: dict[str, str] = {}
        for address, hop in zip(far, hops, strict=True):
            try:
                netdevs = probes.IP_ADDR.parse(hop.raw("hop").stdout)
            except GB10Error:
                continue
            lan = lan_address(netdevs, set(), lans)
            if lan is not None:
                via[address] = lan
        if via:
            direct = read([(lan, identity) for lan in via.values()])
            snaps.update(dict(zip(via, direct, strict=True)))
    frontier = []
    for address in order:
        netdev, sweeper = candidates[address]
        snap = snaps[address]
        if snap.error is not None:
            by = "" if sweeper == "local" else f" (found by {sweeper})"
            peers.not_nodes.append(f"{address} answered on {netdev}{by} but could not be read over SSH ({snap.error})")
            continue
        name = hostname(snap)
        peers.seen_at.setdefault(name, []).append(f"{address} ({netdev})")
        if name in known:
            continue
        known.add(name)
        fabric = {p.netdev for p in _ports(snap)}
        host = lan_address(snap.fact(probes.IP_ADDR), fabric, lans) or address
        peers.hosts[name] = host
        frontier.append((host, snap))
    return frontier
