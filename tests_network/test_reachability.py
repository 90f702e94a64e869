"""Reachability over each link, from rank 0 (where the suite runs): every peer answers
don't-fragment pings of the netdev's full MTU out of that netdev; loss and round trip recorded.
(Rank 0's SSH login to each peer over each QSFP address, the TCP half, is the preflight mesh check.)"""

import pytest

from fixtures.cluster import INVENTORY, LinkOnNode
from gb10check import probes
from gb10check.node import follows_from

pytestmark = pytest.mark.network


def pytest_generate_tests(metafunc):
    """`peer_on_link`: each peer of rank 0 on each link (the parameter's node is the peer)."""
    if "peer_on_link" in metafunc.fixturenames:
        inventory = metafunc.config.stash.get(INVENTORY, None)
        rank0 = inventory.api_node.name if inventory else None
        cases = [
            LinkOnNode(p, link) for link in (inventory.links if inventory else []) for p in link.addresses if p != rank0
        ]
        metafunc.parametrize("peer_on_link", cases, ids=[str(c) for c in cases])


@pytest.mark.smoke
@pytest.mark.hints("qsfp-ping-lost")
def test_peer_answers_full_frames(peer_on_link, cluster, inventory, evidence):
    peer, link = peer_on_link.node, peer_on_link.link
    rank0 = inventory.api_node.name
    result = cluster.snapshot(rank0).fact(probes.ping_over(peer, link))
    frame = f"{result.size + 28}-byte frames" if result.size is not None else "full frames"
    mine = cluster.snapshot(rank0).fact(probes.IP_ADDR).get(link.netdev)
    gone = cluster.unreachable([peer])
    if gone:  # the peer cannot be asked: no answer follows from it, not from the link or the MTU
        hints = ("node-unreachable",)
    elif any("message too long" in m for m in result.messages):
        hints = ("mtu-mismatch",)
    elif mine is None or not mine.carrier:  # rank 0's own end is dark: the link, not the peer
        hints = ("roce-link-down",)
    else:
        hints = ()
    evidence.expect(
        result.all_answered,
        what=f"ping {link.ip(peer)} from {rank0} over {link.netdev} ({frame}, don't fragment)",
        expected=f"{result.transmitted} of {result.transmitted} answered",
        found=(
            f"{result.received} of {result.transmitted} answered, {result.loss_pct:g}% loss"
            + (f", rtt avg {result.rtt_avg_ms:g} ms" if result.rtt_avg_ms is not None else "")
        ),
        detail="; ".join([*result.messages, *([follows_from(gone)] if gone else [])]),
        hints=hints,
        context={"ping_size": str(result.size)} if result.size is not None else None,
    )
