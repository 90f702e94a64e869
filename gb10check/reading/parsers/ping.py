"""iputils `ping` (the summary it prints at the end): sent, received, errors, round-trip times. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gb10check.errors import ParseError

__all__ = ["PingResult", "parse_ping"]

_HEAD = re.compile(r"^PING \S+ \(\S+\)(?: from \S+ \S+)?: (?P<size>\d+)\((?P<frame>\d+)\) bytes of data\.", re.M)
_STATS = re.compile(
    r"^(?P<tx>\d+) packets transmitted, (?P<rx>\d+) received(?:, \+(?P<dup>\d+) duplicates)?"
    r"(?:, \+(?P<err>\d+) errors)?, (?P<loss>[\d.]+)% packet loss",
    re.M,
)
_RTT = re.compile(r"^rtt min/avg/max/mdev = (?P<min>[\d.]+)/(?P<avg>[\d.]+)/(?P<max>[\d.]+)/[\d.]+ ms", re.M)
_LOCAL_ERROR = re.compile(r"^ping: (?P<msg>.+)$", re.M)


@dataclass(frozen=True)
class PingResult:
    size: int | None  # ICMP payload bytes (the frame is 28 more)
    transmitted: int
    received: int
    errors: int
    loss_pct: float
    rtt_avg_ms: float | None
    messages: tuple[str, ...]  # ping's own complaints ("local error: message too long, mtu=1400")

    @property
    def all_answered(self) -> bool:
        return self.transmitted > 0 and self.received == self.transmitted


def parse_ping(text: str) -> PingResult:
    stats = _STATS.search(text)
    if not stats:
        raise ParseError("ping", "no 'packets transmitted' summary", text)
    head, rtt = _HEAD.search(text), _RTT.search(text)
    return PingResult(
        size=int(head["size"]) if head else None,
        transmitted=int(stats["tx"]),
        received=int(stats["rx"]),
        errors=int(stats["err"] or 0),
        loss_pct=float(stats["loss"]),
        rtt_avg_ms=float(rtt["avg"]) if rtt else None,
        messages=tuple(dict.fromkeys(m["msg"] for m in _LOCAL_ERROR.finditer(text))),
    )
