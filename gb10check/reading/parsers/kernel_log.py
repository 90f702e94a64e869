"""The kernel log since boot, as the snapshot filters it: what changed under the fabric and the GPU.

The probe prints the lines that name mlx5, pciehp or NVRM and `gb10check: kernel log lines N` (how
much dmesg held: last, as the probe streams the log; first is read too). Formats from the kernel's
own strings: mlx5e_update_carrier's
`netdev_info(netdev, "Link up|down")` -> `mlx5_core 0000:01:00.0 enp1s0f0np0: Link down`;
pciehp's `ctrl_info(ctrl, "Slot(%s): Link Down")` -> `pcieport 0000:00:00.0: pciehp: Slot(0):
Link Down`; the NVIDIA driver's `NVRM: Xid (PCI:000f:01:00): 79, pid=..., ...`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gb10check.errors import ParseError
from gb10check.reading.parsers import bounded_line

__all__ = ["KernelEvent", "KernelLog", "parse_kernel_log"]

_HEADER = re.compile(r"^gb10check: kernel log lines (?P<n>\d+)$")
_STAMP = re.compile(r"^\[\s*(?P<t>\d+\.\d+)\]\s*")
_LINK = re.compile(r"mlx5_core \S+ (?P<netdev>[\w.-]+): Link (?P<state>up|down)\b", re.IGNORECASE)
_HOTPLUG = re.compile(r"pciehp: Slot\((?P<slot>[^)]*)\): (?P<what>Link Down|Link Up|Card present|Card not present)")
_XID = re.compile(r"NVRM: Xid \((?P<pci>[^)]*)\): (?P<code>\d+)(?:, (?P<rest>.*))?")


@dataclass(frozen=True)
class KernelEvent:
    kind: str  # "link" (an mlx5 netdev went up or down), "hotplug" (a PCIe slot event), "xid" (a GPU error)
    where: str  # the netdev, the slot, or the GPU's PCI address
    what: str  # "up" / "down", pciehp's words, or the Xid number
    seconds: float | None  # since boot, when the line has dmesg's stamp
    line: str


@dataclass(frozen=True)
class KernelLog:
    lines: int  # how many lines dmesg held (0: an empty ring buffer, nothing to judge)
    events: tuple[KernelEvent, ...]

    def of(self, kind: str) -> list[KernelEvent]:
        return [e for e in self.events if e.kind == kind]

    def flaps(self, netdev: str) -> list[KernelEvent]:
        """The netdev's `Link down` lines after it had been up (the first negotiation at boot is no flap)."""
        out, was_up = [], False
        for event in self.of("link"):
            if event.where != netdev:
                continue
            if event.what == "up":
                was_up = True
            elif was_up:
                out.append(event)
        return out


def parse_kernel_log(text: str) -> KernelLog:
    """A line longer than MAX_LINE is read as its first MAX_LINE characters (saying so)."""
    lines = [bounded_line(line) for line in text.splitlines()]
    counts = [m for m in (_HEADER.match(line.strip()) for line in (lines[:1] + lines[-1:])) if m]
    if not counts:
        raise ParseError("the kernel log (dmesg)", "expected 'gb10check: kernel log lines N' first or last", text)
    header = counts[-1]
    events = []
    for line in lines:
        if _HEADER.match(line.strip()):
            continue
        stamp = _STAMP.match(line)
        seconds = float(stamp["t"]) if stamp else None
        if m := _LINK.search(line):
            events.append(KernelEvent("link", m["netdev"], m["state"].lower(), seconds, line.strip()))
        elif m := _HOTPLUG.search(line):
            events.append(KernelEvent("hotplug", f"Slot({m['slot']})", m["what"], seconds, line.strip()))
        elif m := _XID.search(line):
            events.append(KernelEvent("xid", m["pci"], m["code"], seconds, line.strip()))
    return KernelLog(int(header["n"]), tuple(events))
