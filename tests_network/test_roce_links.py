"""RoCE links: every link of the inventory is Up on every node, on its expected netdev."""

import pytest

from gb10check import probes

pytestmark = pytest.mark.network


@pytest.mark.smoke
@pytest.mark.hints("roce-link-down")
def test_roce_link_up(link_on_node, cluster, link_down_advice, evidence):
    link = link_on_node.link
    ports = cluster.snapshot(link_on_node.node).fact(probes.IBDEV2NETDEV)
    port = next((p for p in ports if p.rdma_device == link.rdma_device), None)
    listed = ", ".join(f"{p.rdma_device} ==> {p.netdev} ({p.state})" for p in ports)
    evidence.expect(
        port is not None,
        what=f"RDMA device {link.rdma_device}",
        expected="listed by ibdev2netdev",
        found=f"listed, on {port.netdev}" if port else "not listed",
        detail=f"ibdev2netdev lists {listed or 'no RDMA device at all'}; the inventory names {link.rdma_device}",
        hints=("rdma-device-missing",),  # a name that does not exist is not a cable fault
    )
    evidence.expect(
        port.netdev == link.netdev,
        what=f"netdev of {link.rdma_device}",
        expected=link.netdev,
        found=port.netdev,
    )
    advice = {} if port.up else link_down_advice(link_on_node.node, link)  # hints, context, detail
    evidence.expect(
        port.up,
        what=f"link {link.rdma_device} ==> {link.netdev}",
        expected="Up",
        found=port.state,
        **{**advice, "detail": "; ".join(filter(None, [f"ibdev2netdev lists {listed}", advice.get("detail")]))},
    )
