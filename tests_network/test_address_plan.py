"""The address plan as the nodes really have it (`ip -j -d addr`): each rail on a subnet of its own on
every node (both halves of a cable on one subnet is a named fault: the inventory refuses it, a node's
netplan may still do it), the control plane apart from the fabric."""

from __future__ import annotations

import ipaddress
from itertools import combinations

import pytest

from gb10check import probes

pytestmark = pytest.mark.network


def _size(net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> int:
    return net.prefixlen  # the wider of two overlapping subnets holds the other


@pytest.mark.hints("halves-one-subnet")
def test_each_rail_on_its_own_subnet(node, inventory, evidence):
    """No two of the node's fabric netdevs (and its control-plane netdev) share a subnet: the kernel
    then routes both rails' traffic out of one of them, and replies come back over the other cable."""
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
