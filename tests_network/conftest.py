"""What the network checks share: whether a test may load the links while the service runs, and
what a port found down tells the hint."""

import pytest

from fixtures.cluster import SETTINGS
from gb10check import facts, probes
from gb10check.errors import GB10Error


@pytest.fixture(scope="session")
def down_here(cluster):
    """`down_here(node, netdev)`: roce-link-down's fields for a port found down on `node`: its netdev
    when the node has it administratively DOWN (then `ip link set ... up` is the fix, here); else none
    (the other end or the cable: the interface check tells which)."""

    def fields(node, netdev):
        try:
            dev = cluster.snapshot(node).fact(probes.IP_ADDR).get(netdev)
        except GB10Error:  # not knowing gives no command, never a command for the wrong end
            return None
        return {"netdev_down": [netdev]} if dev is not None and not dev.admin_up else None

    return fields


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
