"""The RDMA port of each node's end of each rail, as the kernel shows it (/sys/class/infiniband, one
probe): the inventory's device on the member's netdev, ACTIVE and LinkUp over Ethernet, the
negotiated rate, and the RoCE v2 GID of the member's address at the index NCCL uses (discovered,
never assumed)."""

import pytest

from gb10check.deployment.nccl import auto_gid_index, gid_index_param
from gb10check.errors import GB10Error
from gb10check.reading import probes
from gb10check.reading.parsers.rdma_sysfs import show_gids

pytestmark = pytest.mark.network


def _ports(cluster, node):
    return cluster.snapshot(node).fact(probes.RDMA_PORTS)


def _port_of(member, cluster, evidence):
    """The member's RDMA port on its node; fails naming what the node has when it is not there."""
    end, ports = member.member, _ports(cluster, member.node)
    port = ports.get(end.rdma_device)
    on_netdev = [p.device for p in ports.values() if end.netdev in p.netdevs]
    evidence.expect(
        port is not None,
        what=f"RDMA device {end.rdma_device} (/sys/class/infiniband)",
        expected=f"present, on {end.netdev}",
        found="present" if port else "absent",
        detail=(
            f"the node has {', '.join(sorted(ports)) or 'no RDMA device at all'}"
            + (
                f"; {end.netdev} belongs to {', '.join(on_netdev)}: the inventory's (and NCCL_IB_HCA's) name is stale"
                if on_netdev
                else ""
            )
        ),
        hints=("rdma-device-missing",),
    )
    return port


@pytest.mark.smoke
@pytest.mark.hints("roce-link-down")
def test_rdma_port_active(member, cluster, link_down_advice, fault_owners, evidence):
    """The RDMA port active on its rail's netdev.

    The member's RDMA port as /sys/class/infiniband shows it: the inventory's device present, on the member's netdev,
    link layer Ethernet (RoCE), port state ACTIVE and physical state LinkUp. Where the device is missing, the devices
    the node has are named (and the one on the member's netdev, when the inventory's name is stale).

    Over a dark netdev the port is down too: that follows from the interface check, which owns it."""
    end = member.member
    evidence.explained_by(fault_owners.dark([(member.node, member.rail.name)]))
    port = _port_of(member, cluster, evidence)
    evidence.expect(
        end.netdev in port.netdevs,
        what=f"netdev of {end.rdma_device}",
        expected=end.netdev,
        found=", ".join(port.netdevs) or "none",
        hints=("rdma-device-missing",),
    )
    evidence.expect(
        port.link_layer == "Ethernet",
        what=f"{end.rdma_device} link layer",
        expected="Ethernet (RoCE)",
        found=port.link_layer or "not readable",
    )
    up = port.active and port.link_up
    evidence.expect(
        up,
        what=f"{end.rdma_device} port 1 state / phys_state",
        expected="4: ACTIVE / 5: LinkUp",
        found=f"{port.state or '?'} / {port.phys_state or '?'}",
        **({} if up else link_down_advice(member.node, member.rail)),  # hints, context, detail
    )


@pytest.mark.performance
@pytest.mark.hints("link-rate-low")
def test_rdma_port_rate(member, cluster, inventory, evidence):
    """The port's negotiated rate meets its rail's.

    The rate the port negotiated (sysfs `rate`; mlx5 derives it from the Ethernet speed in force), recorded as figure
    `rate_gbps`, against its rail's declared `rate_gbps` (200; 100 for a declared 100G breakout). On a switch the far
    end is a switch port: a lower rate is named as that switch port's auto-negotiation, with the switch side of the
    fix (RouterOS `auto-negotiation=no speed=200G-baseCR4`). On a cable between two nodes, what the other end
    negotiated is shown: both ends low points at the cable first (its rating, its seating). A port that is not ACTIVE
    skips (its rate is mlx5's placeholder)."""
    end, rail = member.member, member.rail
    port = _port_of(member, cluster, evidence)
    if not port.active:
        pytest.skip(
            f"{end.rdma_device} is not ACTIVE ({port.state}): its rate is mlx5's placeholder (see the state check)"
        )
    gbps = port.rate_gbps
    evidence.figure("rate_gbps", gbps)
    ok = gbps is not None and gbps >= rail.rate_gbps
    on_switch = inventory.topology == "switch"
    detail = ""
    if not ok and on_switch and gbps is not None:
        detail = (
            f"{end.netdev} is cabled to a switch port (topology switch): that switch port auto-negotiated "
            f"{gbps:g}G; force {rail.rate_gbps:g}G on it (RouterOS: auto-negotiation=no "
            f"speed={rail.rate_gbps:g}G-baseCR4)"
        )
    elif not ok and gbps is not None:
        detail = _far_end_rate(cluster, member)
    evidence.expect(
        ok,
        what=f"{end.rdma_device} negotiated rate",
        expected=f">= {rail.rate_gbps:g} Gb/sec (rail {rail.name})",
        found=port.rate or "not readable",
        detail=detail,
        hints=("switch-port-rate-low",) if on_switch and detail else (),
    )


def _far_end_rate(cluster, member):
    """On a cable between two nodes (a pair, a ring), what the other end negotiated: both low points at
    the cable (its rating, a half-seated plug), this end alone at this port."""
    far = next((m for m in member.rail.members if m.node != member.node), None)
    if far is None:
        return ""
    try:
        port = _ports(cluster, far.node).get(far.rdma_device)
    except GB10Error:  # that node's own checks say why
        return ""
    if port is None or not port.active:
        return ""
    both = port.rate_gbps is not None and port.rate_gbps < member.rail.rate_gbps
    return f"the other end of the cable, {far.node}'s {far.rdma_device}, negotiated {port.rate}" + (
        ": both ends low, look at the cable (its rating, its seating) first" if both else ": only this end is low"
    )


def _gid_index_in_use(cluster, node, deployment, rail):
    """(the index, where it comes from) NCCL uses on this node: NCCL_IB_GID_INDEX of vLLM's environment
    (compose + script) as NCCL reads it, None when it leaves NCCL the choice; else the inventory's."""
    if deployment is not None:
        try:
            value = cluster.plan(node).env("NCCL_IB_GID_INDEX")
        except GB10Error:  # an unreadable plan fails its own checks (or is decided at start)
            pass
        else:
            index = gid_index_param(value)
            picks = "NCCL 2.21+ picks the device's first RoCE v2 IPv4 GID"
            if value is None:
                return None, f"NCCL_IB_GID_INDEX unset: {picks}"
            if value == "":
                return None, f"NCCL_IB_GID_INDEX empty, which NCCL reads as unset: {picks}"
            if index is None:
                return None, f"NCCL_IB_GID_INDEX={value!r} leaves NCCL the choice: {picks}"
            if value == str(index):
                return index, f"NCCL_IB_GID_INDEX={value} of the deployment"
            return index, f"NCCL_IB_GID_INDEX={value!r} of the deployment, which NCCL reads as {index}"
    return rail.gid_index, f"gid_index of rail {rail.name} in the inventory"


def _address_in_use(cluster, node, end):
    """The member's IPv4 address as the netdev has it: the inventory's, or the one link-local address
    netplan renumbered it to (the interfaces check reports the stale inventory; NCCL uses this one)."""
    want = end.ip
    dev = cluster.snapshot(node).fact(probes.IP_ADDR).get(end.netdev)
    mine = [a.split("/")[0] for a in dev.addresses] if dev else []
    if want in mine or not want.startswith("169.254.") or len(mine) != 1:
        return want
    return mine[0]


def _v2_ipv4_index(cluster, node, end):
    """Where the RoCE v2 GID of this member's address is on its device, None: nowhere."""
    port = _ports(cluster, node).get(end.rdma_device)
    found = port.roce_v2_ipv4(_address_in_use(cluster, node, end), end.netdev) if port else []
    return found[0].index if found else None


@pytest.mark.smoke
@pytest.mark.hints("gid-index-mismatch")
def test_gid_index(member, cluster, inventory, evidence):
    """The RoCE v2 IPv4 GID at the index NCCL uses.

    The RoCE v2 IPv4 GID of the member's address at the index NCCL uses on its device: NCCL_IB_GID_INDEX of vLLM's
    environment, read as NCCL reads it (strtoll); unset or empty, NCCL 2.21+ picks the device's first RoCE v2 IPv4
    GID, and the check takes that pick (without a deployment, the rail's `gid_index` of the inventory).
    NCCL_IB_GID_INDEX is one value for every device of the node: a device whose GID sits elsewhere than the others'
    is named as such (no one value fits them all). The GID table is printed as show_gids prints it, with the index to
    use. The index is recorded (figure gid_index): --history names a move."""
    node, end = member.node, member.member
    port = _port_of(member, cluster, evidence)
    address = _address_in_use(cluster, node, end)
    found = port.roce_v2_ipv4(address, end.netdev)
    evidence.expect(
        bool(found),
        what=f"RoCE v2 GID of {address} on {end.rdma_device}",
        expected=f"an IPv4-mapped RoCE v2 entry for {address}",
        found="none",
        detail="its GID table: show_gids, below\n" + show_gids([port]),
        hints=("no-ipv4-gid",),
    )
    here = found[0].index
    evidence.figure("gid_index", here)
    index, source = _gid_index_in_use(cluster, node, inventory.deployment, member.rail)
    picked = index is None
    if picked:
        index = auto_gid_index(port.gids)
    evidence.fact("nccl_gid_index", f"{index}" + (" (NCCL's own pick)" if picked else ""))
    others = {
        m.rdma_device: _v2_ipv4_index(cluster, node, m)
        for _, m in inventory.members_of(node)
        if m.rdma_device != end.rdma_device
    }
    fits_others = [d for d, i in others.items() if i == index]
    if here == index:
        advice, hints = "", ("gid-index-mismatch",)
    elif picked:
        advice = (
            f"the first RoCE v2 IPv4 GID of {end.rdma_device} is another address's: remove the address(es) that "
            f"came before {address} on {end.netdev}, so that NCCL's pick is the link's"
        )
        hints = ("gid-index-mismatch",)
    elif fits_others:
        advice = (
            f"{', '.join(fits_others)} {'has its' if len(fits_others) == 1 else 'have theirs'} at {index}, and "
            f"NCCL_IB_GID_INDEX is one value for all of {node}'s devices: remove the extra address on {end.netdev} "
            f"(its entry returns to {index}) or leave NCCL_IB_GID_INDEX unset (NCCL 2.21+ picks each device's)"
        )
        hints = ("gid-index-per-device",)
    else:
        advice, hints = f"use index {here}", ("gid-index-mismatch",)
    evidence.expect(
        here == index,
        what=f"GID index of {address} (RoCE v2) on {end.rdma_device}",
        expected=f"{index} ({source})",
        found=str(here),
        detail=(f"{advice}; " if advice else "") + "its GID table: show_gids, below\n" + show_gids([port]),
        hints=hints,
        context={"netdev": [end.netdev], "gid_index": str(here)},
    )
