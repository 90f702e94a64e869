"""What the firewall must let through, and whether a UFW rule set does (first match wins, as in ufw).

Pure: the inventory (its rails, control plane and API port) and the parsed rules in; the missing
`ufw allow` lines out.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from gb10check import inventory as inv
from gb10check.reading.parsers.ufw import UfwRule

__all__ = ["Need", "needs_for", "verdict"]


@dataclass(frozen=True)
class Need:
    """Traffic a node must accept: from a peer on a QSFP subnet (every port), or to the API port."""

    what: str
    source: ipaddress.IPv4Address | ipaddress.IPv6Address | None  # None: from anywhere
    port: int | None  # None: every port (NCCL and Gloo pick theirs)
    interface: str | None
    allow_line: str  # the ufw command that grants it
    subnet: str | None = (
        None  # what that command allows from: a rail's subnet, a peer's control address (None: the API port)
    )


def needs_for(inventory: inv.Inventory, node: str, api_port: int | None) -> list[Need]:
    """What `node` must accept: all traffic from each node it shares a rail with, on that rail (NCCL
    picks its ports); from each peer's control-plane address when that is not a rail's (Gloo, torch's
    master port); and the API port (`api_port`: on the API node only)."""
    out = []
    for rail, mine in inventory.members_of(node):
        for peer in rail.members:
            if peer.node == node:
                continue
            out.append(
                Need(
                    f"all traffic from {peer.node} {peer.ip} on {mine.netdev}",
                    ipaddress.ip_address(peer.ip),
                    None,
                    mine.netdev,
                    f"sudo ufw allow from {rail.subnet}",
                    str(rail.subnet),
                )
            )
    control = inventory.control_netdev(node)
    on_rail = any(m.netdev == control for _, m in inventory.members_of(node))
    if control is not None and not on_rail:
        for other in inventory.nodes:
            address = inventory.control_address(other.name)
            if other.name == node or address is None:
                continue
            out.append(
                Need(
                    f"all traffic from {other.name} {address} on the control plane {control}",
                    ipaddress.ip_address(address),
                    None,
                    control,
                    f"sudo ufw allow from {address}",
                    address,
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
