"""`ibdev2netdev` (mlnx-tools): RDMA device -> netdev mapping and link state."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gb10check.errors import ParseError, excerpt

__all__ = ["RdmaPort", "parse_ibdev2netdev"]


@dataclass(frozen=True)
class RdmaPort:
    rdma_device: str
    port: int
    netdev: str
    state: str  # "Up", "Down" or "NA", as the script prints it

    @property
    def up(self) -> bool:
        return self.state == "Up"


# Plain form:   rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)
# Verbose (-v): 0000:01:00.0 rocep1s0f0 (MT4129 - ...) ... fw 28.x port 1 (ACTIVE) ==> enp1s0f0np0 (Up)
_LINE_RE = re.compile(
    r"^(?:\S+\s+)??(?P<dev>[A-Za-z]\S*)\s(?:.*\s)?port\s+(?P<port>\d+)\b.*?==>\s*(?P<netdev>\S+)\s+\((?P<state>[^)]*)\)\s*$"
)


def parse_ibdev2netdev(text: str) -> tuple[RdmaPort, ...]:
    ports = []
    for line in text.splitlines():
        if not line.strip():
            continue
        match = _LINE_RE.match(line.strip())
        if not match:
            raise ParseError("ibdev2netdev", f"unexpected line {excerpt(line, 120)}", text)
        ports.append(
            RdmaPort(
                rdma_device=match["dev"],
                port=int(match["port"]),
                netdev=match["netdev"],
                state=match["state"].strip() or "NA",
            )
        )
    if not ports:
        raise ParseError("ibdev2netdev", "no RDMA devices listed", text)
    return tuple(ports)
