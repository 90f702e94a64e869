"""The QSFP netdevs as the kernel has them (`ip -j -d addr`, `ip -j route`): up on both ends, the
inventory's addresses, one MTU per link, no address twice, and the default route off the QSFP."""

import ipaddress

import pytest

from gb10check import probes
from gb10check.errors import GB10Error
from gb10check.node import follows_from
from gb10check.parsers.netplan import link_local_ipv4

pytestmark = pytest.mark.network

LINK_LOCAL = ipaddress.ip_network("169.254.0.0/16")


def _netdevs(cluster, node):
    return cluster.snapshot(node).fact(probes.IP_ADDR)


@pytest.mark.hints("roce-link-down")
def test_qsfp_netdev_up_with_its_address(link_on_node, cluster, inventory, evidence):
    node, link = link_on_node.node, link_on_node.link
    netdevs = _netdevs(cluster, node)
    dev = netdevs.get(link.netdev)
    evidence.expect(
        dev is not None,
        what=f"netdev {link.netdev}",
        expected="present",
        found=f"present (mtu {dev.mtu})" if dev else f"absent; the node has {', '.join(sorted(netdevs))}",
        hints=("qsfp-netdev-missing",),
    )
    evidence.expect(
        dev.admin_up,
        what=f"{link.netdev} administrative state",
        expected="UP",
        found="UP" if dev.admin_up else f"DOWN here, on {node}",
        context={"netdev_down": [link.netdev]},  # the hint's `ip link set ... up`: this netdev, here
    )
    if not dev.carrier:
        peers = [n for n in link.addresses if n != node]
        gone = cluster.unreachable(peers)
        ends, down = [], []
        for peer in peers:
            if peer in gone:
                ends.append(f"{peer}: cannot be reached")
                continue
            try:
                other = _netdevs(cluster, peer).get(link.netdev)
            except GB10Error:  # the other end's netdevs unreadable: this end's fault is still the missing carrier
                ends.append(f"{peer}: its netdevs cannot be read (see its own checks)")
                continue
            ends.append(f"{peer}: " + ("absent" if other is None else "UP" if other.admin_up else "admin DOWN"))
            down += [peer] if other is not None and not other.admin_up else []
        evidence.expect(
            False,
            what=f"{link.netdev} carrier",
            expected="the cable and the other end up",
            found=f"no carrier; other end {'; '.join(ends)}",
            detail=follows_from(gone)
            if gone
            else "a port down on one end shows no carrier on the other: fix the end that is DOWN, else the cable",
            hints=("node-unreachable",) if gone else (),
            # the fix is on the other end when it is DOWN or off (never `ip link set up` on this end, which is up)
            context={"node": gone[0]} if gone else {"node": down[0], "netdev_down": [link.netdev]} if down else None,
        )
    expected = link.addresses[node]
    found = ", ".join(dev.addresses) or "no IPv4 address"
    if dev.has(expected):
        evidence.expect(True, what=f"{link.netdev} address", expected=expected, found=found)
        return
    ip = ipaddress.ip_interface(expected)
    renumbered = [a for a in dev.addresses if ip.ip in LINK_LOCAL and ipaddress.ip_interface(a).ip in LINK_LOCAL]
    if renumbered and link.netdev in link_local_ipv4(cluster.snapshot(node).fact(probes.NETPLAN)):
        evidence.expect(
            False,
            what=f"{link.netdev} address",
            expected=expected,
            found=found,
            detail=f"netplan assigns {link.netdev} a link-local address, which changes on reconnect: the fabric is "
            f"fine, the inventory is stale; write {renumbered[0]} for {node} in links[].addresses",
            hints=("inventory-address-stale",),
            context={"path": inventory.source},
        )
    evidence.expect(False, what=f"{link.netdev} address", expected=expected, found=found, hints=("qsfp-address-wrong",))


@pytest.mark.hints("mtu-mismatch")
def test_one_mtu_per_link(link, cluster, evidence):
    """Both ends of a link: the same MTU (a jumbo frame on one end only drops the large packets)."""
    mtus = {}
    for node in link.addresses:
        dev = _netdevs(cluster, node).get(link.netdev)
        mtus[node] = dev.mtu if dev else None
    known = {m for m in mtus.values() if m is not None}
    evidence.expect(
        len(known) == 1 and None not in mtus.values() and (link.mtu is None or known == {link.mtu}),
        what=f"{link.netdev} MTU",
        expected="the same on both ends" + (f": {link.mtu}, as the inventory says" if link.mtu else ""),
        found=", ".join(f"{n}: {m if m is not None else 'no such netdev'}" for n, m in mtus.items()),
    )


@pytest.mark.hints("qsfp-address-duplicate")
def test_no_qsfp_address_twice(cluster, inventory, evidence):
    """Every QSFP address the nodes carry stands once in the cluster (a copied netplan does this)."""
    if not inventory.links:
        pytest.skip("the inventory lists no QSFP links")
    qsfp = {link.netdev for link in inventory.links}
    seen: dict[str, list[str]] = {}
    for node in inventory.nodes:
        for name, dev in _netdevs(cluster, node.name).items():
            if name in qsfp:
                for address in dev.addresses:
                    seen.setdefault(str(ipaddress.ip_interface(address).ip), []).append(f"{node.name} {name}")
    twice = {ip: where for ip, where in seen.items() if len(where) > 1}
    evidence.expect(
        not twice,
        what="QSFP addresses",
        expected="each once in the cluster",
        found="; ".join(f"{ip} on {', '.join(w)}" for ip, w in twice.items()) or f"{len(seen)} distinct",
    )


@pytest.mark.hints("default-route-on-qsfp")
def test_default_route_stays_off_the_qsfp(node, inventory, evidence):
    """The default route (and any route out) belongs to the LAN: on a QSFP netdev it drops serving
    the day that link flaps, and steers SSH and downloads over the cable."""
    qsfp = {link.netdev for link in inventory.links}
    routes = node.snapshot().fact(probes.IP_ROUTE)
    defaults = [r for r in routes if r.dst == "default"]
    wrong = [r for r in defaults if r.dev in qsfp]
    shown = "; ".join(f"default via {r.gateway or '-'} dev {r.dev}" for r in defaults) or "no default route"
    evidence.expect(not wrong, what="default route", expected="not on a QSFP netdev", found=shown)
