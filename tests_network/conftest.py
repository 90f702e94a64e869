"""What the network checks share: whether a test may load the links while the service runs, and
what a port found down tells the hint (the other end's node, when it cannot be asked)."""

import pytest

from fixtures.cluster import SETTINGS
from gb10check.errors import GB10Error
from gb10check.reading import facts, probes
from gb10check.reading.node import follows_from


@pytest.fixture(scope="session")
def link_down_advice(cluster, inventory):
    """`link_down_advice(node, rail)`: what `node`'s port on `rail` found down tells its hint, as
    evidence.expect's `hints`, `context` and a `detail` to add. When the node at the cable's other end
    cannot be asked, the finding follows from that node (node-unreachable, its commands for that node),
    never the check's own advice (on a switch another node being off leaves this port lit: no such
    excuse); else roce-link-down, with `ip link set ... up` only when this node has the netdev
    administratively DOWN (else the other end or the cable: the interface check tells which)."""

    def advice(node, rail):
        mine = rail.member(node)
        direct = inventory.topology != "switch"
        gone = cluster.unreachable(m.node for m in rail.members if m.node != node) if direct else []
        if gone:
            return {"hints": ("node-unreachable",), "context": {"node": gone[0]}, "detail": follows_from(gone)}
        try:
            dev = cluster.snapshot(node).fact(probes.IP_ADDR).get(mine.netdev)
        except GB10Error:  # not knowing gives no command, never a command for the wrong end
            dev = None
        down = dev is not None and not dev.admin_up
        return {"hints": ("roce-link-down",), "context": {"netdev_down": [mine.netdev]} if down else None}

    return advice


@pytest.fixture(scope="session")
def skip_while_serving(cluster, inventory, request):
    """`skip_while_serving(nodes, what)`: skip a test that loads the links while the deployment's
    container runs on one of `nodes` (it would compete with vLLM's NCCL and disturb its users),
    unless --bandwidth or thresholds.bandwidth_while_serving allows it."""
    allowed = request.config.stash[SETTINGS].bandwidth or inventory.thresholds.bandwidth_while_serving

    def skip(nodes, what):
        if allowed:
            return
        for name in nodes:
            try:
                container = facts.container(cluster.snapshot(name))
            except GB10Error:
                continue  # not knowing is no reason to skip: the run itself then says what is wrong
            if container is not None and container.running:
                pytest.skip(
                    f"the deployment's container runs on {name}: {what} would compete with NCCL for the links "
                    "(--bandwidth, or thresholds.bandwidth_while_serving = true, runs it anyway)"
                )

    return skip


def pytest_collection_modifyitems(config, items):
    """NCCL in the serving image runs after every other check (tests_network/test_collective.py): what they
    found broken explains its failure, and it is the slowest."""
    last = [i for i in items if "tests_network/test_collective.py" in i.nodeid]
    items[:] = [i for i in items if i not in last] + last
