"""The fabric's netdevs as the kernel has them (`ip -j -d addr`, `ip -j route`): up at every end, the
inventory's addresses, one MTU per rail, no address twice, and the default route off the fabric."""

import ipaddress

import pytest

from gb10check.errors import GB10Error
from gb10check.judging import dark_ports
from gb10check.judging.compare import odd_ones_out, shown
from gb10check.reading import probes
from gb10check.reading.node import follows_from
from gb10check.reading.parsers.netplan import link_local_ipv4

pytestmark = pytest.mark.network

LINK_LOCAL = ipaddress.ip_network("169.254.0.0/16")


def _netdevs(cluster, node):
    return cluster.snapshot(node).fact(probes.IP_ADDR)


def _far_end(cluster, inventory, rail, node):
    """What the far end of a dark port looks like, in words, with the nodes that cannot be asked and
    the members found administratively DOWN: on a direct cable the other member's netdev; on a switch
    the switch port (the suite cannot ask it; another node being off leaves this port lit)."""
    if inventory.topology == "switch":
        return "the switch port (its cable, or the port disabled on the switch)", [], []
    others = [m for m in rail.members if m.node != node]
    gone = cluster.unreachable([m.node for m in others])
    ends, down = [], []
    for other in others:
        if other.node in gone:
            ends.append(f"{other.node} {other.netdev}: cannot be reached")
            continue
        try:
            dev = _netdevs(cluster, other.node).get(other.netdev)
        except GB10Error:  # the other end's netdevs unreadable: this end's fault is still the missing carrier
            ends.append(f"{other.node} {other.netdev}: its netdevs cannot be read (see its own checks)")
            continue
        ends.append(
            f"{other.node} {other.netdev}: " + ("absent" if dev is None else "UP" if dev.admin_up else "admin DOWN")
        )
        down += [other] if dev is not None and not dev.admin_up else []
    return "; ".join(ends), gone, down


@pytest.mark.hints("roce-link-down")
def test_qsfp_netdev_up_with_its_address(member, cluster, inventory, fault_owners, evidence):
    """Each fabric netdev present, up, with its address.

    Each member's netdev (`ip -j -d addr`) exists, is admin-up with carrier, and carries the inventory's address.
    Without carrier the far end is named: the other member of a cable (its netdev absent, UP or admin DOWN, or its node
    unreachable), the switch port on a switch. A link-local address that netplan renumbered is a stale inventory, not a
    broken fabric.

    It owns a dark port (gb10check/judging/dark_ports.py): an end without carrier whose other end is DOWN, or a
    cable dark at both ends seen from its second end, follows from the end that owns it."""
    node, rail, mine = member.node, member.rail, member.member
    evidence.explained_by(
        fault_owners.dark([(node, rail.name)], unless=dark_ports.OWNER_TEST.format(node=node, netdev=mine.netdev))
    )
    netdevs = _netdevs(cluster, node)
    dev = netdevs.get(mine.netdev)
    evidence.expect(
        dev is not None,
        what=f"netdev {mine.netdev} (rail {rail.name})",
        expected="present",
        found=f"present (mtu {dev.mtu})" if dev else f"absent; the node has {', '.join(sorted(netdevs))}",
        hints=("qsfp-netdev-missing",),
    )
    evidence.expect(
        dev.admin_up,
        what=f"{mine.netdev} administrative state",
        expected="UP",
        found="UP" if dev.admin_up else f"DOWN here, on {node}",
        context={"netdev_down": [mine.netdev]},  # the hint's `ip link set ... up`: this netdev, here
    )
    if not dev.carrier:
        ends, gone, down = _far_end(cluster, inventory, rail, node)
        evidence.expect(
            False,
            what=f"{mine.netdev} carrier",
            expected="the cable and the other end up",
            found=f"no carrier; other end {ends}",
            detail=follows_from(gone)
            if gone
            else "a port down on one end shows no carrier on the other: fix the end that is DOWN, else the cable",
            hints=("node-unreachable",) if gone else (),
            # the fix is on the other end when it is DOWN or off (never `ip link set up` on this end, which is up)
            context={"node": gone[0]}
            if gone
            else {"node": down[0].node, "netdev_down": [down[0].netdev]}
            if down
            else None,
        )
    expected = mine.address
    found = ", ".join(dev.addresses) or "no IPv4 address"
    if dev.has(expected):
        evidence.expect(True, what=f"{mine.netdev} address", expected=expected, found=found)
        return
    ip = ipaddress.ip_interface(expected)
    renumbered = [a for a in dev.addresses if ip.ip in LINK_LOCAL and ipaddress.ip_interface(a).ip in LINK_LOCAL]
    if renumbered and mine.netdev in link_local_ipv4(cluster.snapshot(node).fact(probes.NETPLAN)):
        evidence.expect(
            False,
            what=f"{mine.netdev} address",
            expected=expected,
            found=found,
            detail=f"netplan assigns {mine.netdev} a link-local address, which changes on reconnect: the fabric is "
            f"fine, the inventory is stale; write {renumbered[0]} for {node} on rail {rail.name}",
            hints=("inventory-address-stale",),
            context={"path": inventory.source},
        )
    evidence.expect(False, what=f"{mine.netdev} address", expected=expected, found=found, hints=("qsfp-address-wrong",))


@pytest.mark.hints("mtu-mismatch")
def test_one_mtu_per_link(rail, cluster, evidence):
    """One MTU on every member of a rail.

    Every member of a rail: the same MTU (a jumbo frame on one end only drops the large packets), the odd ones named;
    where the inventory gives the rail an `mtu`, that one."""
    mtus = {}
    for m in rail.members:
        dev = _netdevs(cluster, m.node).get(m.netdev)
        mtus[m.node] = dev.mtu if dev else None
    known = {m for m in mtus.values() if m is not None}
    if rail.mtu is not None:
        odd = [n for n, m in mtus.items() if m != rail.mtu]
    else:
        odd = [n for n, m in mtus.items() if m is None] or (odd_ones_out(mtus) if len(mtus) > 2 else [])
    evidence.expect(
        len(known) == 1 and None not in mtus.values() and (rail.mtu is None or known == {rail.mtu}),
        what="MTU",
        expected="the same on every member" + (f": {rail.mtu}, as the inventory says" if rail.mtu else ""),
        found=shown(
            {f"{n} {rail.member(n).netdev}": m if m is not None else "no such netdev" for n, m in mtus.items()},
            [f"{n} {rail.member(n).netdev}" for n in odd],
        ),
    )


@pytest.mark.hints("qsfp-address-duplicate")
def test_no_qsfp_address_twice(cluster, inventory, evidence):
    """No fabric or control-plane address twice in the cluster.

    Every fabric and control-plane address the nodes carry stands once in the cluster (a copied
    netplan does this)."""
    if not inventory.rails:
        pytest.skip("the inventory lists no rails")
    seen: dict[str, list[str]] = {}
    for node in inventory.nodes:
        fabric = {m.netdev for _, m in inventory.members_of(node.name)} | {inventory.control_netdev(node.name)}
        for name, dev in _netdevs(cluster, node.name).items():
            if name in fabric:
                for address in dev.addresses:
                    seen.setdefault(str(ipaddress.ip_interface(address).ip), []).append(f"{node.name} {name}")
    twice = {ip: where for ip, where in seen.items() if len(where) > 1}
    evidence.expect(
        not twice,
        what="fabric and control-plane addresses",
        expected="each once in the cluster",
        found="; ".join(f"{ip} on {', '.join(w)}" for ip, w in twice.items()) or f"{len(seen)} distinct",
    )


@pytest.mark.hints("default-route-on-qsfp")
def test_default_route_stays_off_the_qsfp(node, inventory, evidence):
    """The default route stays off the fabric.

    The default route (`ip -j route`; and any route out) belongs to the LAN, off the fabric netdevs: on a fabric
    netdev it drops serving the day that link flaps, and steers SSH and downloads over the cable."""
    qsfp = {m.netdev for _, m in inventory.members_of(node.name)}
    routes = node.snapshot().fact(probes.IP_ROUTE)
    defaults = [r for r in routes if r.dst == "default"]
    wrong = [r for r in defaults if r.dev in qsfp]
    shown = "; ".join(f"default via {r.gateway or '-'} dev {r.dev}" for r in defaults) or "no default route"
    evidence.expect(not wrong, what="default route", expected="not on a QSFP netdev", found=shown)
