"""The address plan as the nodes really have it (`ip -j -d addr`): each rail on a subnet of its own on
every node (both halves of a cable on one subnet is a named fault: the inventory refuses it, a node's
netplan may still do it), the control plane apart from the fabric."""

from __future__ import annotations

import ipaddress
from itertools import combinations

import pytest

from gb10check.reading import probes
from gb10check.reading.node import follows_from
from gb10check.reading.parsers.iptables import forwarded

pytestmark = pytest.mark.network


def _size(net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> int:
    return net.prefixlen  # the wider of two overlapping subnets holds the other


@pytest.mark.hints("halves-one-subnet")
def test_each_rail_on_its_own_subnet(node, inventory, evidence):
    """Each fabric netdev on a subnet of its own.

    The address plan as the node has it (`ip -j -d addr`): no two of the node's fabric netdevs (and its control-plane
    netdev) share a subnet, both halves of a cable on one subnet named as such: the kernel then routes both rails'
    traffic out of one of them, and replies come back over the other cable."""
    mine = [m.netdev for _, m in inventory.members_of(node.name)]
    if not mine:
        pytest.skip(f"{node.name} is on no rail")
    control = inventory.control_netdev(node.name)
    netdevs = node.snapshot().fact(probes.IP_ADDR)
    names = [*mine, *([control] if control and control not in mine else [])]
    nets = {name: [ipaddress.ip_interface(a) for a in netdevs[name].addresses] for name in names if name in netdevs}
    shared = [
        (a, ia, b, ib)
        for a, b in combinations(nets, 2)
        for ia in nets[a]
        for ib in nets[b]
        if ia.network.overlaps(ib.network)
    ]
    plan = ", ".join(f"{n} {' '.join(map(str, nets[n])) or '(no address)'}" for n in nets)
    apart = f" and the control plane ({control})" if control and control not in mine else ""
    evidence.expect(
        not shared,
        what=f"subnets of the fabric netdevs{apart}",
        expected="each netdev on a subnet of its own",
        found="; ".join(
            f"{a} {ia} and {b} {ib} both on {min(ia.network, ib.network, key=_size)}" for a, ia, b, ib in shared
        )
        or plan,
        detail=f"the node has {plan}; give each rail (each half of a cable) its own subnet in netplan, as the "
        "inventory's rails have them",
        context={"netdev": sorted({x[0] for x in shared} | {x[2] for x in shared})},
    )


def _routed_through(cluster, inventory, node) -> list[str]:
    """The routes other nodes send through this node (their gateway is one of its fabric addresses):
    what the deployment's own routing asks it to forward (a ring reaching non-adjacent subnets)."""
    mine = {m.ip for _, m in inventory.members_of(node.name)}
    through = []
    for other in inventory.nodes:
        if other.name == node.name or cluster.unreachable([other.name]):
            continue
        for r in cluster.snapshot(other.name).fact(probes.IP_ROUTE):
            if r.gateway in mine and r.dst != "default":  # a default route over the fabric: its own check
                through.append(f"{other.name} routes {r.dst} via {r.gateway} dev {r.dev}")
    return through


@pytest.mark.hints("ip-forward-off")
def test_forwards_what_others_route_through_it(node, cluster, inventory, evidence):
    """IP forwarding on where another node routes through this one.

    Where the deployment routes through a node (another node's route, not its default, has one of its fabric
    addresses as gateway: a ring reaching its non-adjacent subnets, e.g. a control plane on a ring rail), that node
    forwards (`/proc/sys/net/ipv4/ip_forward` = 1). A ring whose control plane is the LAN and whose NCCL talks to
    neighbours only routes nothing through anyone: not needed, and the check records so."""
    forwarding = node.snapshot().fact(probes.IP_FORWARD)  # the node's own say first (a node that cannot be asked)
    through = _routed_through(cluster, inventory, node)
    gone = cluster.unreachable([n.name for n in inventory.nodes if n.name != node.name])
    if not through and gone:
        pytest.skip(f"no route through {node.name} among the nodes asked; {follows_from(gone)}")
    if not through:  # every node's routes read: forwarding is not needed here (a pass on that evidence)
        evidence.expect(
            True,
            what="routes of the other nodes through this node's fabric addresses",
            expected="forwarding on where any",
            found=f"none: the node forwards nothing for the deployment (ip_forward {int(forwarding)})",
        )
        return
    evidence.expect(
        forwarding,
        what=f"forwarding ({probes.IP_FORWARD_FILE})",
        expected="1: the node forwards what the others route through it",
        found="0: forwarded packets are dropped",
        detail="; ".join(through),
    )


@pytest.mark.hints("forward-chain-drops")
def test_forward_chain_passes_fabric_traffic(node, cluster, inventory, evidence):
    """The FORWARD chain passes fabric traffic where the node routes.

    Where the deployment routes through a node (as for IP forwarding), its FORWARD chain (and Docker's DOCKER-USER,
    which FORWARD jumps to first; read with `iptables -S` as root) passes traffic from each fabric netdev to each
    other one: Docker sets the FORWARD policy to DROP when it starts, which in the field looks exactly like a dead
    cable. Nothing routed through the node: recorded as not needed."""
    node.snapshot().fact(probes.IP_FORWARD)  # the node's own say first (a node that cannot be asked)
    through = _routed_through(cluster, inventory, node)
    if not through:
        gone = cluster.unreachable([n.name for n in inventory.nodes if n.name != node.name])
        if gone:
            pytest.skip(f"no route through {node.name} among the nodes asked; {follows_from(gone)}")
        evidence.expect(
            True,
            what="routes of the other nodes through this node's fabric addresses",
            expected="a FORWARD chain passing the fabric where any",
            found="none: the node forwards nothing for the deployment",
        )
        return
    snap = node.snapshot()
    chains = {c.name: c for c in (snap.fact(probes.FORWARD_CHAIN), snap.fact(probes.DOCKER_USER_CHAIN))}
    fabric = [m.netdev for _, m in inventory.members_of(node.name)]
    dropped = []
    for a in fabric:
        for b in fabric:
            if a != b:
                passed, why = forwarded(chains, "FORWARD", a, b)
                if not passed:
                    dropped.append(f"{a} -> {b}: {why}")
    evidence.expect(
        not dropped,
        what="forwarded fabric traffic (iptables FORWARD, DOCKER-USER)",
        expected="passed between the fabric netdevs",
        found=f"dropped, {dropped[0]}" + (f" (and {len(dropped) - 1} more directions)" if len(dropped) > 1 else "")
        if dropped
        else "passed",
        detail="; ".join(through),
        context={"netdev": fabric},
    )
