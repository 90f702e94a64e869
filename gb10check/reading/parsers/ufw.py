"""UFW: `ufw status verbose`, the persisted rules (/etc/ufw/user.rules), ufw.conf, /etc/default/ufw.

The rules are read from user.rules' `### tuple ###` lines, which is what ufw itself reloads at
boot and what `ufw status` shows; `ufw status` says whether the firewall is live now.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from gb10check.errors import ParseError, excerpt

__all__ = [
    "Network",
    "UfwRule",
    "UfwStatus",
    "parse_default_input_policy",
    "parse_ufw_conf",
    "parse_ufw_status",
    "parse_user_rules",
]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class UfwStatus:
    active: bool
    default_incoming: str | None  # deny / reject / allow (verbose output only)


_STATUS = re.compile(r"^Status:\s*(active|inactive)\s*$", re.MULTILINE)
_DEFAULT = re.compile(r"^Default:\s*(?P<incoming>\w+)\s*\(incoming\)", re.MULTILINE)


def parse_ufw_status(text: str) -> UfwStatus:
    match = _STATUS.search(text)
    if not match:
        raise ParseError("ufw status verbose", "no 'Status: active|inactive' line", text)
    active = match.group(1) == "active"
    default = _DEFAULT.search(text)
    if active and default is None:  # `ufw status verbose` always says it when active: cut short
        raise ParseError("ufw status verbose", "active, but no 'Default: <policy> (incoming)' line", text)
    return UfwStatus(active=active, default_incoming=default["incoming"] if default else None)


@dataclass(frozen=True)
class UfwRule:
    """One persisted rule (`### tuple ### allow tcp 20001 0.0.0.0/0 any 169.254.0.0/16 in`)."""

    action: str  # allow / deny / reject / limit
    proto: str  # any / tcp / udp
    dport: str  # any / 20001 / 18515:18530 / 80,443
    dst: Network
    sport: str
    src: Network
    direction: str  # in / out
    interface: str | None
    text: str

    def matches(
        self, src: ipaddress.IPv4Address | ipaddress.IPv6Address, proto: str, port: int | None, interface: str | None
    ) -> bool:
        """Does this rule apply to an incoming packet? port None: the rule must cover every port."""
        if self.direction != "in" or src.version != self.src.version or src not in self.src:
            return False
        if self.interface and interface and self.interface != interface:
            return False
        if self.interface and not interface:
            return False
        if self.proto not in ("any", proto):
            return False
        if self.dport == "any":
            return True
        return port is not None and _port_in(port, self.dport)


def _port_in(port: int, spec: str) -> bool:
    for part in spec.split(","):
        low, _, high = part.partition(":")
        if low.isdigit() and int(low) <= port <= int(high or low):
            return True
    return False


_TUPLE = re.compile(r"^### tuple ### (?P<body>.+)$", re.MULTILINE)


def parse_user_rules(text: str) -> list[UfwRule]:
    """The `### tuple ###` lines of user.rules (IPv4) or user6.rules."""
    if "*filter" not in text and "### RULES ###" not in text:
        raise ParseError("/etc/ufw/user.rules", "not a ufw rules file (no *filter / ### RULES ###)", text)
    if "### END RULES ###" not in text:  # ufw always writes it: the file was cut short
        raise ParseError("/etc/ufw/user.rules", "no '### END RULES ###': the file is incomplete", text)
    rules = []
    for match in _TUPLE.finditer(text):
        words = match["body"].split()
        words = [w for w in words if not w.startswith("comment=")]
        if len(words) != 7 or words[0].startswith("route:"):
            continue  # route rules and app profiles do not filter incoming host traffic
        action, proto, dport, dst, sport, src, way = words
        direction, _, interface = way.partition("_")
        try:
            rules.append(
                UfwRule(
                    action=action.split("_")[0],
                    proto=proto,
                    dport=dport,
                    dst=ipaddress.ip_network(dst, strict=False),
                    sport=sport,
                    src=ipaddress.ip_network(src, strict=False),
                    direction=direction,
                    interface=interface or None,
                    text=match["body"],
                )
            )
        except ValueError as exc:
            raise ParseError("/etc/ufw/user.rules", f"bad address in {excerpt(match[0], 120)}", text) from exc
    return rules


def parse_ufw_conf(text: str) -> bool:
    """/etc/ufw/ufw.conf: ENABLED=yes means ufw starts at boot."""
    match = re.search(r"^\s*ENABLED\s*=\s*(\S+)", text, re.MULTILINE)
    if not match:
        raise ParseError("/etc/ufw/ufw.conf", "no ENABLED= line", text)
    return match.group(1).strip("'\"").lower() == "yes"


def parse_default_input_policy(text: str) -> str:
    """/etc/default/ufw: DEFAULT_INPUT_POLICY (DROP / REJECT / ACCEPT), the policy ufw loads at boot."""
    match = re.search(r'^\s*DEFAULT_INPUT_POLICY\s*=\s*"?(\w+)"?', text, re.MULTILINE)
    if not match:
        raise ParseError("/etc/default/ufw", "no DEFAULT_INPUT_POLICY line", text)
    return match.group(1).upper()
