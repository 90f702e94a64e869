"""The RDMA ports as the kernel shows them in /sys/class/infiniband: state, physical state, link
layer, rate, the port's netdev and its GID table (what `show_gids` prints), read in one probe.

The probe (gb10check/reading/probes.py RDMA_PORTS) prints, per port directory, a header
`=== <port dir> <netdev>...` and then `grep -H` lines `<file>:<content>` of state, phys_state,
link_layer, rate and every used GID slot with its type and netdev (formats: the kernel's
drivers/infiniband/core/sysfs.c, see selftests/data/SOURCES.md). Pure.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from gb10check.errors import ParseError, excerpt

__all__ = ["UNUSED_GID", "Gid", "RdmaPortState", "parse_rdma_ports", "show_gids"]

_HEADER = re.compile(r"^=== (?P<dir>/\S+/(?P<dev>[^/\s]+)/ports/(?P<port>\d+))(?P<netdevs>(?: \S+)*)\s*$")
_RATE = re.compile(r"^(?P<gbps>\d+(?:\.\d+)?) Gb/sec")
_V4_MAPPED = "0000:0000:0000:0000:0000:ffff:"
UNUSED_GID = "0000:0000:0000:0000:0000:0000:0000:0000"


@dataclass(frozen=True)
class Gid:
    index: int
    gid: str  # 8 groups of 4 hex digits, as sysfs prints it
    type: str  # "RoCE v2", "IB/RoCE v1"; "" when the kernel gave none
    ndev: str  # the netdev the GID belongs to; "" on InfiniBand ports

    @property
    def ipv4(self) -> str | None:
        """The IPv4 address of an IPv4-mapped GID (::ffff:a.b.c.d), else None."""
        if not self.gid.startswith(_V4_MAPPED):
            return None
        hi, lo = self.gid[len(_V4_MAPPED) :].split(":")
        return str(ipaddress.IPv4Address(int(hi + lo, 16)))

    @property
    def version(self) -> str:
        """v1 / v2 as show_gids prints it (`grep -o "[Vv].*"` of the type)."""
        match = re.search(r"[Vv].*", self.type)
        return match[0] if match else ""


@dataclass(frozen=True)
class RdmaPortState:
    device: str
    port: int
    netdevs: tuple[str, ...]  # /sys/class/infiniband/<dev>/device/net/
    state: str  # "4: ACTIVE"
    phys_state: str  # "5: LinkUp"
    link_layer: str  # "Ethernet"
    rate: str  # "200 Gb/sec (2X NDR)"
    gids: tuple[Gid, ...]

    @property
    def active(self) -> bool:
        return self.state.split(":", 1)[-1].strip() == "ACTIVE"

    @property
    def link_up(self) -> bool:
        return self.phys_state.split(":", 1)[-1].strip() == "LinkUp"

    @property
    def rate_gbps(self) -> float | None:
        match = _RATE.match(self.rate)
        return float(match["gbps"]) if match else None

    def roce_v2_ipv4(self, address: str, netdev: str) -> list[Gid]:
        """The RoCE v2 GIDs of `address` on `netdev` (normally exactly one)."""
        return [g for g in self.gids if g.type == "RoCE v2" and g.ipv4 == address and g.ndev in (netdev, "")]


def parse_rdma_ports(text: str) -> dict[str, RdmaPortState]:
    """Device name -> its port 1 (GB10's ConnectX-7 ports have one port each). Empty: no RDMA device."""
    ports: dict[str, RdmaPortState] = {}
    blocks = re.split(r"(?m)^(?====)", text)
    for block in blocks:
        if not block.strip():
            continue
        header, _, body = block.partition("\n")
        match = _HEADER.match(header)
        if not match:
            raise ParseError("the RDMA ports in /sys/class/infiniband", f"unexpected line {excerpt(header, 120)}", text)
        base = match["dir"] + "/"
        files: dict[str, str] = {}
        for line in body.splitlines():
            if not line.startswith(base) or ":" not in line[len(base) :]:
                raise ParseError(
                    "the RDMA ports in /sys/class/infiniband", f"unexpected line {excerpt(line, 120)}", text
                )
            name, _, value = line[len(base) :].partition(":")
            files[name] = value.strip()
        gids = []
        for name, value in files.items():
            if name.startswith("gids/") and value != UNUSED_GID:
                index = int(name.removeprefix("gids/"))
                gids.append(
                    Gid(
                        index,
                        value,
                        files.get(f"gid_attrs/types/{index}", ""),
                        files.get(f"gid_attrs/ndevs/{index}", ""),
                    )
                )
        ports.setdefault(
            match["dev"],
            RdmaPortState(
                device=match["dev"],
                port=int(match["port"]),
                netdevs=tuple(match["netdevs"].split()),
                state=files.get("state", ""),
                phys_state=files.get("phys_state", ""),
                link_layer=files.get("link_layer", ""),
                rate=files.get("rate", ""),
                gids=tuple(sorted(gids, key=lambda g: g.index)),
            ),
        )
    return ports


def show_gids(ports: list[RdmaPortState]) -> str:
    """The GID table in show_gids' layout (mlnx-tools), for failure messages."""
    lines = [
        "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV",
        "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---",
    ]
    for port in ports:
        for g in port.gids:
            lines.append(f"{port.device}\t{port.port}\t{g.index}\t{g.gid}\t{g.ipv4 or '':<16}\t{g.version}\t{g.ndev}")
    lines.append(f"n_gids_found={sum(len(p.gids) for p in ports)}")
    return "\n".join(lines)
