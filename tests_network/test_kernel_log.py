"""What the kernel logged since boot (dmesg, in the snapshot): a QSFP link that went down after it
had come up (a flap: NCCL's connections over it break), a ConnectX re-plugged on the PCIe bus
without a reboot (re-cabling does that; NCCL then runs several times slower until the node is
rebooted), and NVIDIA Xid errors (the GPU reporting a fault)."""

import pytest

from gb10check.reading import probes

pytestmark = pytest.mark.network


def _kernel_log(cluster, node):
    log = cluster.snapshot(node).fact(probes.KERNEL_LOG)
    if log.lines == 0:
        pytest.skip(f"the kernel log of {node} is empty (cleared with `dmesg -c`?): nothing since boot to judge")
    return log


def _lines(events, shown=3):
    more = f" (and {len(events) - shown} more)" if len(events) > shown else ""
    return " | ".join(e.line for e in events[-shown:]) + more


@pytest.mark.hints("roce-link-flap")
def test_qsfp_link_did_not_flap(member, cluster, evidence):
    """The fabric link did not flap since boot.

    The kernel log since boot (`dmesg` as root, in the snapshot) shows no `Link down` (mlx5_core) of the member's
    netdev after the link came up. An empty kernel log (cleared with `dmesg -c`?) skips: nothing since boot to judge."""
    netdev = member.member.netdev
    log = _kernel_log(cluster, member.node)
    flaps = log.flaps(netdev)
    ups = [e for e in log.of("link") if e.where == netdev and e.what == "up"]
    evidence.expect(
        not flaps,
        what=f"{netdev} since boot (dmesg: mlx5_core Link up/down)",
        expected="no `Link down` after the link came up",
        found=f"{len(flaps)} x Link down after Link up: {_lines(flaps)}"
        if flaps
        else f"{len(ups)} x Link up, no flap, in {log.lines} lines of kernel log",
    )


@pytest.mark.hints("recabled-no-reboot")
def test_no_pcie_hotplug_since_boot(node, cluster, evidence):
    """No PCIe hot-plug event since boot.

    The kernel log since boot (`dmesg` as root) shows no PCIe hotplug (pciehp) of the ConnectX: it enumerated once,
    at boot; a hotplug is a ConnectX re-cabled without a reboot. An empty kernel log skips."""
    log = _kernel_log(cluster, node.name)
    events = log.of("hotplug")
    evidence.expect(
        not events,
        what="PCIe hotplug since boot (dmesg: pciehp)",
        expected="none (the ConnectX enumerated once, at boot)",
        found=f"{len(events)} event(s): {_lines(events)}" if events else f"none in {log.lines} lines of kernel log",
    )


@pytest.mark.hints("gpu-xid")
def test_no_gpu_xid_errors(node, cluster, evidence):
    """No GPU Xid error since boot.

    The kernel log since boot (`dmesg` as root) shows no NVIDIA Xid (`NVRM: Xid`); a failure names the codes. An
    empty kernel log skips."""
    log = _kernel_log(cluster, node.name)
    xids = log.of("xid")
    codes = sorted({e.what for e in xids}, key=int)
    evidence.expect(
        not xids,
        what="NVIDIA Xid errors since boot (dmesg: NVRM: Xid)",
        expected="none",
        found=f"{len(xids)} x Xid {', '.join(codes)}: {_lines(xids)}" if xids else f"none in {log.lines} lines",
    )
