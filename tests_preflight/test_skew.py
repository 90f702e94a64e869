"""Skew across the nodes: what every node must run alike, one check per fact, each node's value
recorded pass or fail (a fact per node: summary.json and the reports show the table when all agree)."""

from collections.abc import Callable

import pytest

from gb10check import probes
from gb10check.compare import odd_ones_out, shown
from gb10check.parsers.host_release import firmware_shown
from gb10check.snapshot import Snapshot

pytestmark = pytest.mark.preflight


def same_on_every_node(cluster, inventory, evidence, what: str, value_of: Callable[[Snapshot], str]) -> None:
    """`value_of(snapshot)` on every node, in rank order: each recorded as a fact named after its node,
    then one comparison; the odd ones out named, the hint's commands filled for the first of them."""
    values = {}
    for spec in sorted(inventory.nodes, key=lambda n: n.rank):
        values[spec.name] = value_of(cluster.snapshot(spec.name))
        evidence.fact(spec.name, values[spec.name])
    odd = odd_ones_out(values, [inventory.api_node.name])
    common = next(v for n, v in values.items() if n not in odd)
    evidence.expect(
        not odd,
        what=what,
        expected=f"{common} on every node",
        found=shown(values, odd),
        context={"node": odd[0]} if odd else None,
    )


@pytest.mark.hints("kernel-differs")
def test_kernel_same_on_every_node(cluster, inventory, evidence):
    """The kernel release (uname -r) is the same on every node."""
    same_on_every_node(
        cluster, inventory, evidence, "kernel release (uname -r)", lambda s: s.fact(probes.KERNEL_RELEASE)
    )


@pytest.mark.hints("os-release-differs")
def test_os_release_same_on_every_node(cluster, inventory, evidence):
    """The OS release (/etc/os-release) is the same on every node."""
    same_on_every_node(
        cluster, inventory, evidence, "OS release (/etc/os-release)", lambda s: s.fact(probes.OS_RELEASE).shown
    )


@pytest.mark.hints("bios-differs")
def test_bios_same_on_every_node(cluster, inventory, evidence):
    """The BIOS version and date (/sys/class/dmi/id) are the same on every node."""
    same_on_every_node(
        cluster, inventory, evidence, "BIOS version (/sys/class/dmi/id)", lambda s: s.fact(probes.BIOS).shown
    )


@pytest.mark.hints("cx-firmware-differs")
def test_connectx_firmware_same_on_every_node(cluster, inventory, evidence):
    """The ConnectX firmware (fw_ver of every RDMA device) is the same on every node."""
    same_on_every_node(
        cluster,
        inventory,
        evidence,
        "ConnectX firmware (/sys/class/infiniband/*/fw_ver)",
        lambda s: firmware_shown(s.fact(probes.CX_FIRMWARE)),
    )
