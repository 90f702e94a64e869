"""The cabling, proven from the wire: after each node has asked for its peers' addresses on each rail
(one ARP per peer, out of the rail's netdev: probes.NEIGHBOURS), its neighbour table says which MAC
answered; it must be the MAC of the netdev the inventory puts that address on (gb10check/reading/wire.py)."""

import pytest

from gb10check.reading import wire

pytestmark = pytest.mark.network


@pytest.mark.hints("cable-crossed")
def test_cable_ends_where_the_inventory_says(rail_pair, cluster, fault_owners, evidence):
    """Each cable ends where the inventory says.

    For every two nodes that share a rail, each asks for the other's address out of its netdev there (one ARP each,
    in the snapshot), and the MAC that answered (`ip -j neigh show`) must be the one of the netdev the inventory puts
    that address on (`ip -j -d addr`). A swapped cable, a ring out of rank order, a node on another switch port or
    bridge, two nodes holding one address are each found here, named with the cable end or port to move (Linux
    answers ARP for any of its addresses on any netdev: such a wire may still ping). Where nothing answered there is
    no MAC to judge: skipped (the ping of the pair says why)."""
    a, b = rail_pair.ends()
    gone = cluster.unreachable(rail_pair.nodes)
    if gone and (reason := fault_owners.dark([(n, rail_pair.rail.name) for n in rail_pair.nodes])):
        pytest.skip(reason)  # a table that cannot be read: the node that is off owns it
    answers = [wire.answer(cluster, rail_pair.rail, a, b), wire.answer(cluster, rail_pair.rail, b, a)]
    silent = [f"nothing answered {x.mine.node} for {x.theirs.ip} on {x.mine.netdev}" for x in answers if not x.mac]
    suspect = wire.misplaced(cluster, rail_pair.rail)  # a switch: the node every wrong pair has in common
    wrong = sorted((x for x in answers if not x.right and x.mac), key=lambda x: x.theirs.node != suspect)
    if not wrong and silent:
        pytest.skip(f"{'; '.join(silent)}: no MAC to judge (the ping of this pair, test_reachability.py, says why)")
    # the root cause first: where the wire ends and what to move; then the ARP answers that say so
    evidence.expect(
        not wrong,
        what="where the cable ends",
        expected=f"{a.node}'s {a.netdev} <-> {b.node}'s {b.netdev}",
        found=wire.what_to_move(cluster, wrong[0]) if wrong else "each end answered with its own MAC",
        detail=("who answers ARP: " if wrong else "") + "; ".join([f"{x.theirs.ip} by {x.by}" for x in wrong] + silent),
        context={"peer_ip": b.ip, "netdev": [a.netdev]},
    )
