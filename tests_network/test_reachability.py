"""Reachability over each rail, from each node's own snapshot: every two nodes that share a rail
answer each other's don't-fragment pings of the netdev's full MTU, out of that netdev; loss and
round trip recorded. (The SSH logins over each rail, the TCP half, are the preflight mesh check.)"""

import pytest

from gb10check import probes
from gb10check.errors import GB10Error

pytestmark = pytest.mark.network


@pytest.mark.smoke
@pytest.mark.hints("qsfp-ping-lost")
def test_peer_answers_full_frames(rail_pair, cluster, evidence):
    """The lower rank pings the other over the rail (a reply proves both directions of the segment)."""
    node, peer, rail = rail_pair.node, rail_pair.peer, rail_pair.rail
    mine, theirs = rail_pair.ends()
    what = f"ping {theirs.ip} ({peer}) from {node} out of {mine.netdev}, rail {rail.name}"
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
        )
    frame = f"{result.size + 28}-byte frames" if result.size is not None else "full frames"
    far = cluster.snapshot(peer)  # the far end as it sees itself (behind a switch its port may be dark alone)
    far_dev = far.fact(probes.IP_ADDR).get(theirs.netdev) if far.error is None else None
    if any("message too long" in m for m in result.messages):
        hints = ("mtu-mismatch",)
    elif dev is None or not dev.carrier:  # this end is dark: the cable or the port, not the peer
        hints = ("roce-link-down",)
    elif far.error is not None:  # the peer cannot be asked at all: its own checks say why
        hints = far.error.hint_ids or ("node-unreachable",)
    elif far_dev is None or not far_dev.carrier:  # the peer's end is dark (its cable, or its switch port)
        hints = ("roce-link-down",)
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
        detail="; ".join(result.messages),
        hints=hints,
    )
