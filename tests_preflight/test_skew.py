"""Skew across the nodes: what every node must run alike, one check per fact, each node's value
recorded pass or fail (a fact per node: summary.json and the reports show the table when all agree)."""

from collections.abc import Callable

import pytest

from gb10check.errors import GB10Error
from gb10check.judging.compare import odd_ones_out, shown
from gb10check.reading import probes
from gb10check.reading.facts import loaded_module
from gb10check.reading.parsers.host_release import firmware_shown
from gb10check.reading.parsers.nvidia import NoDriver, NvmlMismatch
from gb10check.reading.snapshot import Snapshot

pytestmark = pytest.mark.preflight


def same_on_every_node(
    inventory,
    evidence,
    what: str,
    values: dict[str, str],
    facts: dict[str, str] | None = None,
    detail: str = "",
    hints: tuple[str, ...] = (),
) -> None:
    """One comparison of each node's value: each recorded as a fact named after its node (`facts`, when
    they say more than the value compared), the odd ones out named, the hint filled for the first of them."""
    for name in values:
        evidence.fact(name, (facts or values)[name])
    odd = odd_ones_out(values, [inventory.api_node.name])
    common = next(v for n, v in values.items() if n not in odd)
    evidence.expect(
        not odd,
        what=what,
        expected=f"{common} on every node",
        found=shown(values, odd),
        detail=detail,
        hints=hints,
        context={"node": odd[0]} if odd else None,
    )


def per_node(cluster, inventory, value_of: Callable[[Snapshot], str]) -> dict[str, str]:
    """`value_of(snapshot)` of every node, in rank order."""
    return {n.name: value_of(cluster.snapshot(n.name)) for n in sorted(inventory.nodes, key=lambda n: n.rank)}


@pytest.mark.hints("kernel-differs")
def test_kernel_same_on_every_node(cluster, inventory, evidence):
    """The kernel release (uname -r) the same on every node.

    Read from `/proc/sys/kernel/osrelease` (what `uname -r` prints); each node's value is recorded, pass or fail, and
    the odd ones out are named."""
    values = per_node(cluster, inventory, lambda s: s.fact(probes.KERNEL_RELEASE))
    same_on_every_node(inventory, evidence, "kernel release (uname -r)", values)


@pytest.mark.hints("os-release-differs")
def test_os_release_same_on_every_node(cluster, inventory, evidence):
    """The OS release (/etc/os-release) the same on every node.

    The PRETTY_NAME of `/etc/os-release`; each node's value is recorded, pass or fail, and the odd ones out are
    named."""
    values = per_node(cluster, inventory, lambda s: s.fact(probes.OS_RELEASE).shown)
    same_on_every_node(inventory, evidence, "OS release (/etc/os-release)", values)


@pytest.mark.hints("bios-differs")
def test_bios_same_on_every_node(cluster, inventory, evidence):
    """The BIOS version and date the same on every node (/sys/class/dmi/id).

    Read from `/sys/class/dmi/id` (no root needed); each node's value is recorded, pass or fail, and the odd ones out
    are named."""
    values = per_node(cluster, inventory, lambda s: s.fact(probes.BIOS).shown)
    same_on_every_node(inventory, evidence, "BIOS version (/sys/class/dmi/id)", values)


@pytest.mark.hints("cx-firmware-differs")
def test_connectx_firmware_same_on_every_node(cluster, inventory, evidence):
    """The ConnectX firmware the same on every node.

    fw_ver of every RDMA device (`/sys/class/infiniband/*/fw_ver`); each node's value is recorded, pass or fail, and
    the odd ones out are named."""
    values = per_node(cluster, inventory, lambda s: firmware_shown(s.fact(probes.CX_FIRMWARE)))
    same_on_every_node(inventory, evidence, "ConnectX firmware (/sys/class/infiniband/*/fw_ver)", values)


NO_MODULE = "no module loaded"


def _userspace(snap: Snapshot) -> str:
    """The userspace driver nvidia-smi reports, in words when it does not (shown, never compared)."""
    try:
        if snap.ran(probes.NVIDIA_SMI).timed_out:
            return "no answer from nvidia-smi"
        smi = snap.fact(probes.NVIDIA_SMI)
    except GB10Error:
        return "unknown (nvidia-smi failed)"
    if isinstance(smi, NvmlMismatch):
        return f"NVML library {smi.library_version or '?'} (mismatch)"
    if isinstance(smi, NoDriver):
        return "no driver"
    return smi.driver_version


@pytest.mark.hints("driver-differs")
def test_nvidia_driver_same_on_every_node(cluster, inventory, evidence):
    """The NVIDIA driver module the same on every node.

    The NVIDIA driver's loaded kernel module is the same version on every node, each node's userspace (nvidia-smi's)
    recorded beside it and a node with no module loaded named as such (each node's userspace is held to its own
    module by test_driver_versions_match: equal modules make equal drivers)."""
    modules = per_node(cluster, inventory, lambda s: loaded_module(s) or NO_MODULE)
    userspace = {n: _userspace(cluster.snapshot(n)) for n in modules}
    same_on_every_node(
        inventory,
        evidence,
        "NVIDIA driver, loaded kernel module",
        modules,
        facts={n: f"module {m}, userspace {userspace[n]}" for n, m in modules.items()},
        detail="userspace (nvidia-smi): " + ", ".join(f"{n}: {u}" for n, u in userspace.items()),
        hints=("driver-not-loaded",) if NO_MODULE in modules.values() else (),
    )


@pytest.mark.hints("nccl-library-differs")
def test_nccl_library_same_on_every_node(inventory, container_libraries, evidence):
    """The container's NCCL library the same on every node.

    The NCCL library vLLM loads in the container (its version and the file's sha256) is the same on every node: a
    pip-bundled and a system NCCL may report one version and be different binaries. The library is the libnccl a
    running container has mapped, else torch's wheel's, else the system's, read with one `docker exec` per node, else
    a `docker run --rm --pull never --network none` of the image; each node's value is recorded."""
    libraries = {}
    for spec in sorted(inventory.nodes, key=lambda n: n.rank):
        found = container_libraries[spec.name]
        if isinstance(found, GB10Error):
            raise found
        libraries[spec.name] = found.nccl
    none = [name for name, lib in libraries.items() if lib is None]
    evidence.expect(
        not none,
        what="NCCL library in the container",
        expected="libnccl found on every node (mapped by vLLM, in torch's wheel, or the system's)",
        found=f"none in the container on {', '.join(none)}" if none else "found on every node",
        context={"node": none[0]} if none else None,
    )
    same_on_every_node(
        inventory,
        evidence,
        "NCCL library in the container (version, sha256)",
        {name: lib.compared for name, lib in libraries.items()},
        facts={name: lib.shown for name, lib in libraries.items()},
        detail="one version can be different builds (a pip-bundled and a system NCCL): the hash tells them apart; "
        + "; ".join(f"{name}: {lib.path}" for name, lib in libraries.items()),
    )
