"""RoCE links: every end of the inventory is Up on every node, on its expected netdev."""

import pytest

from gb10check.reading import probes

pytestmark = pytest.mark.network


@pytest.mark.smoke
@pytest.mark.hints("roce-link-down")
def test_roce_link_up(member, cluster, link_down_advice, fault_owners, evidence):
    """The RDMA device listed and its link up.

    `ibdev2netdev` lists the inventory's RDMA device of the node's end of the rail, on its expected netdev, with its
    link Up; a device name the node does not have is named as such, not taken for a cable fault.

    Over a dark netdev the link is down too: that follows from the interface check, which owns it."""
    end = member.member
    evidence.explained_by(fault_owners.dark([(member.node, member.rail.name)]))
    ports = cluster.snapshot(member.node).fact(probes.IBDEV2NETDEV)
    port = next((p for p in ports if p.rdma_device == end.rdma_device), None)
    listed = ", ".join(f"{p.rdma_device} ==> {p.netdev} ({p.state})" for p in ports)
    evidence.expect(
        port is not None,
        what=f"RDMA device {end.rdma_device}",
        expected="listed by ibdev2netdev",
        found=f"listed, on {port.netdev}" if port else "not listed",
        detail=f"ibdev2netdev lists {listed or 'no RDMA device at all'}; the inventory names {end.rdma_device}",
        hints=("rdma-device-missing",),  # a name that does not exist is not a cable fault
    )
    assert port is not None  # for the type checker: expect raised above
    evidence.expect(
        port.netdev == end.netdev,
        what=f"netdev of {end.rdma_device}",
        expected=end.netdev,
        found=port.netdev,
    )
    advice = {} if port.up else link_down_advice(member.node, member.rail)  # hints, context, detail
    evidence.expect(
        port.up,
        what=f"link {end.rdma_device} ==> {end.netdev}",
        expected="Up",
        found=port.state,
        **{**advice, "detail": "; ".join(filter(None, [f"ibdev2netdev lists {listed}", advice.get("detail")]))},
    )
