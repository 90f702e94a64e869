"""Reachability over each rail, from each node's own snapshot: every two nodes that share a rail
answer each other's don't-fragment pings of the netdev's full MTU, out of that netdev; loss and
round trip recorded. (The SSH logins over each rail, the TCP half, are the preflight mesh check.)"""

import pytest

from gb10check.errors import GB10Error
from gb10check.reading import probes, wire
from gb10check.reading.node import follows_from

pytestmark = pytest.mark.network


@pytest.mark.smoke
@pytest.mark.hints("qsfp-ping-lost")
def test_peer_answers_full_frames(rail_pair, cluster, fault_owners, evidence):
    """The peer answers full-size frames over the rail.

    For every two nodes that share a rail, the lower rank pings the other out of its netdev on that rail, don't
    fragment, at the netdev's MTU, loss and round trip recorded (a reply proves both directions of the segment). A ping
    refused as too long is named as an MTU mismatch, and one that fails over a wire the cabling check finds crossed as
    that.

    Over a dark port or a wire that ends elsewhere the silence follows from the check that owns it."""
    node, peer = rail_pair.node, rail_pair.peer
    evidence.explained_by(fault_owners.over(rail_pair.rail, node, peer))
    mine, theirs = rail_pair.ends()
    what = f"ping {theirs.ip} ({peer}) out of {mine.netdev}"
    dev = cluster.snapshot(node).fact(probes.IP_ADDR).get(mine.netdev)
    try:
        result = cluster.snapshot(node).fact(probes.ping_over(mine, theirs))
    except GB10Error:
        if dev is not None and dev.admin_up:
            raise
        result = None  # out of a netdev that is DOWN (or absent) ping sends nothing: `connect: Network is unreachable`
    if result is None:
        evidence.expect(
            False,
            what=what,
            expected="answers to full frames",
            found=f"none sent: {mine.netdev} is {'absent' if dev is None else 'DOWN'} on {node}",
            hints=("roce-link-down",),
            context={"netdev_down": [mine.netdev]} if dev is not None else None,
        )
    frame = f"{result.size + 28}-byte frames" if result.size is not None else "full frames"
    gone = cluster.unreachable([peer])
    far = cluster.snapshot(peer)  # the far end as it sees itself (behind a switch its port may be dark alone)
    far_dev = far.fact(probes.IP_ADDR).get(theirs.netdev) if not gone else None
    if gone:  # the peer cannot be asked: no answer follows from it, not from the link or the MTU
        hints: tuple[str, ...] = ("node-unreachable",)
    elif any("message too long" in m for m in result.messages):
        hints = ("mtu-mismatch",)
    elif dev is None or not dev.carrier or far_dev is None or not far_dev.carrier:
        hints = ("roce-link-down",)  # an end is dark (its cable, or behind a switch its port), not the peer
    elif wire.answered_wrong(cluster, rail_pair.rail, mine, theirs) is not None:
        hints = ("cable-crossed",)  # another netdev answered for the address: the reply comes back elsewhere
    else:
        hints = ()
    evidence.expect(
        result.all_answered,
        what=f"{what} ({frame}, don't fragment)",
        expected=f"{result.transmitted} of {result.transmitted} answered",
        found=(
            f"{result.received} of {result.transmitted} answered, {result.loss_pct:g}% loss"
            + (f", rtt avg {result.rtt_avg_ms:g} ms" if result.rtt_avg_ms is not None else "")
        ),
        detail="; ".join([*result.messages, *([follows_from(gone)] if gone else [])]),
        hints=hints,
        context={
            "peer_ip": theirs.ip,
            **({"ping_size": str(result.size)} if result.size is not None else {}),
            **({"node": gone[0]} if gone else {}),  # node-unreachable's commands: for the node that is off
        },
    )
