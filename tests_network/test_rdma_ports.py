"""The RDMA ports of each link, as the kernel shows them (/sys/class/infiniband, one probe): the
inventory's device on the link's netdev, ACTIVE and LinkUp over Ethernet, the negotiated rate,
and the RoCE v2 GID of the link's address at the index NCCL uses (discovered, never assumed)."""

import pytest

from gb10check import probes
from gb10check.errors import GB10Error
from gb10check.facts import vllm_run
from gb10check.parsers.rdma_sysfs import show_gids

pytestmark = pytest.mark.network


def _ports(cluster, node):
    return cluster.snapshot(node).fact(probes.RDMA_PORTS)


def _port_of(link_on_node, cluster, evidence):
    """The link's RDMA port on the node; fails naming what the node has when it is not there."""
    link, ports = link_on_node.link, _ports(cluster, link_on_node.node)
    port = ports.get(link.rdma_device)
    on_netdev = [p.device for p in ports.values() if link.netdev in p.netdevs]
    evidence.expect(
        port is not None,
        what=f"RDMA device {link.rdma_device} (/sys/class/infiniband)",
        expected=f"present, on {link.netdev}",
        found="present" if port else "absent",
        detail=(
            f"the node has {', '.join(sorted(ports)) or 'no RDMA device at all'}"
            + (
                f"; {link.netdev} belongs to {', '.join(on_netdev)}: the inventory's (and NCCL_IB_HCA's) name is stale"
                if on_netdev
                else ""
            )
        ),
        hints=("rdma-device-missing",),
    )
    return port


@pytest.mark.smoke
@pytest.mark.hints("roce-link-down")
def test_rdma_port_active(link_on_node, cluster, link_down_advice, evidence):
    link = link_on_node.link
    port = _port_of(link_on_node, cluster, evidence)
    evidence.expect(
        link.netdev in port.netdevs,
        what=f"netdev of {link.rdma_device}",
        expected=link.netdev,
        found=", ".join(port.netdevs) or "none",
        hints=("rdma-device-missing",),
    )
    evidence.expect(
        port.link_layer == "Ethernet",
        what=f"{link.rdma_device} link layer",
        expected="Ethernet (RoCE)",
        found=port.link_layer or "not readable",
    )
    up = port.active and port.link_up
    evidence.expect(
        up,
        what=f"{link.rdma_device} port 1 state / phys_state",
        expected="4: ACTIVE / 5: LinkUp",
        found=f"{port.state or '?'} / {port.phys_state or '?'}",
        **({} if up else link_down_advice(link_on_node.node, link)),  # hints, context, detail
    )


@pytest.mark.performance
@pytest.mark.hints("link-rate-low")
def test_rdma_port_rate(link_on_node, cluster, evidence):
    """The rate the port negotiated (mlx5 derives it from the Ethernet speed in force)."""
    link = link_on_node.link
    port = _port_of(link_on_node, cluster, evidence)
    if not port.active:
        pytest.skip(
            f"{link.rdma_device} is not ACTIVE ({port.state}): its rate is mlx5's placeholder (see the state check)"
        )
    gbps = port.rate_gbps
    evidence.expect(
        gbps is not None and gbps >= link.rate_gbps,
        what=f"{link.rdma_device} negotiated rate",
        expected=f">= {link.rate_gbps:g} Gb/sec",
        found=port.rate or "not readable",
    )


def _gid_index_in_use(cluster, node, deployment, link):
    """NCCL_IB_GID_INDEX as vLLM gets it on this node (compose + script), else the inventory's."""
    if deployment is not None:
        try:
            snap = cluster.snapshot(node)
            value = vllm_run(snap, deployment, cluster[node].spec.rank).environment.get("NCCL_IB_GID_INDEX", "0")
            return int(value), "NCCL_IB_GID_INDEX of the deployment"
        except (GB10Error, ValueError):  # an unreadable compose fails its own checks
            pass
    return link.gid_index, "links[].gid_index of the inventory"


def _address_in_use(cluster, node, link):
    """The link's IPv4 address as the netdev has it: the inventory's, or the one link-local address
    netplan renumbered it to (the interfaces check reports the stale inventory; NCCL uses this one)."""
    want = link.ip(node)
    dev = cluster.snapshot(node).fact(probes.IP_ADDR).get(link.netdev)
    mine = [a.split("/")[0] for a in dev.addresses] if dev else []
    if want in mine or not want.startswith("169.254.") or len(mine) != 1:
        return want
    return mine[0]


@pytest.mark.smoke
@pytest.mark.hints("gid-index-mismatch")
def test_gid_index(link_on_node, cluster, inventory, evidence):
    node, link = link_on_node.node, link_on_node.link
    port = _port_of(link_on_node, cluster, evidence)
    address = _address_in_use(cluster, node, link)
    found = port.roce_v2_ipv4(address, link.netdev)
    evidence.expect(
        bool(found),
        what=f"RoCE v2 GID of {address} on {link.rdma_device}",
        expected=f"an IPv4-mapped RoCE v2 entry for {address}",
        found="none",
        detail="the GID table:\n" + show_gids([port]),
        hints=("no-ipv4-gid",),
    )
    index, source = _gid_index_in_use(cluster, node, inventory.deployment, link)
    evidence.expect(
        found[0].index == index,
        what=f"GID index of {address} (RoCE v2) on {link.rdma_device}",
        expected=f"{index} ({source})",
        found=str(found[0].index),
        detail=f"use index {found[0].index}; the GID table:\n" + show_gids([port]),
    )
