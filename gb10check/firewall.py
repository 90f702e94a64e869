"""What the firewall must let through, and whether a UFW rule set does (first match wins, as in ufw).

Pure: the inventory's links and API port, and the parsed rules, in; the missing `ufw allow`
lines out.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from gb10check.parsers.ufw import UfwRule


@dataclass(frozen=True)
class Need:
    """Traffic a node must accept: from a peer on a QSFP subnet (every port), or to the API port."""

    what: str
    source: ipaddress.IPv4Address | ipaddress.IPv6Address | None  # None: from anywhere
    port: int | None  # None: every port (NCCL and Gloo pick theirs)
    interface: str | None
    allow_line: str  # the ufw command that grants it
    subnet: str | None = None  # the QSFP subnet that command allows (None: the API port's)


def needs_for(node: str, links: list[tuple[str, dict[str, str]]], api_port: int | None) -> list[Need]:
    """`links`: (netdev, {node: "addr/prefix"}) of the inventory; api_port on the API node only."""
    out = []
    for netdev, addresses in links:
        mine = ipaddress.ip_interface(addresses[node])
        for peer, addr in addresses.items():
            if peer == node:
                continue
            src = ipaddress.ip_interface(addr).ip
            out.append(
                Need(
                    f"all traffic from {peer} {src} on {netdev}",
                    src,
                    None,
                    netdev,
                    f"sudo ufw allow from {mine.network}",
                    str(mine.network),
                )
            )
    if api_port is not None:
        out.append(Need(f"the API port {api_port}/tcp", None, api_port, None, f"sudo ufw allow {api_port}/tcp"))
    return out


def verdict(need: Need, rules: list[UfwRule], default_incoming: str) -> tuple[bool, str]:
    """(allowed, why): the first rule that matches decides; none matching: the default policy."""
    probe = need.source or ipaddress.ip_address("198.51.100.7")  # "anywhere": a TEST-NET-2 address
    for rule in rules:
        if rule.matches(probe, "tcp", need.port, need.interface) and (need.source or rule.src.prefixlen == 0):
            return rule.action == "allow", f"rule `{rule.text}`"
    return default_incoming.lower() in ("allow", "accept"), f"default incoming policy {default_incoming}"
