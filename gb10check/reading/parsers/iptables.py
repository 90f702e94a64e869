"""`iptables -S CHAIN` (the filter table's rules as iptables-save writes them), and what a chain does with
forwarded traffic between two netdevs. Pure."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from gb10check.errors import ParseError

__all__ = ["TERMINAL", "Chain", "Rule", "forwarded", "parse_chain"]

# legacy iptables, and iptables-nft 1.8.x, for a chain that is not there
_NO_CHAIN = re.compile(r"No chain/target/match by that name|chain `\S+' in table `\w+' is incompatible|does not exist")
TERMINAL = {"ACCEPT": True, "DROP": False, "REJECT": False}


@dataclass(frozen=True)
class Rule:
    text: str  # the rule as iptables printed it
    in_dev: str | None  # -i (with its `+` wildcard; "!x" negated)
    out_dev: str | None  # -o
    target: str | None  # -j
    other_matches: bool  # anything else (-s, -d, -p, -m ...): it applies to some of the traffic only


@dataclass(frozen=True)
class Chain:
    name: str
    exists: bool
    policy: str | None  # built-in chains only (-P)
    rules: tuple[Rule, ...]


def _rule(text: str) -> Rule:
    words = shlex.split(text)[2:]  # after "-A CHAIN"
    seen: dict[str, str] = {}
    other, i = False, 0
    while i < len(words):
        negated = words[i] == "!"
        if negated:
            i += 1
        if i + 1 < len(words) and words[i] in ("-i", "-o", "-j"):
            seen[words[i]] = ("!" if negated else "") + words[i + 1]
            i += 2
            continue
        other = True
        i += 1
    return Rule(text, seen.get("-i"), seen.get("-o"), seen.get("-j"), other)


def parse_chain(text: str, name: str) -> Chain:
    """`iptables -S NAME`: its policy and rules, or a chain that does not exist (iptables exits 1)."""
    what = f"iptables -S {name}"
    lines = [line for line in text.splitlines() if line.strip()]
    if not any(line.startswith("-") for line in lines):
        if _NO_CHAIN.search(text):
            return Chain(name, False, None, ())
        raise ParseError(what, "no -P, -N or -A line", text)
    policy, rules = None, []
    for line in lines:
        if line.startswith("-P "):
            policy = line.split()[-1]
        elif line.startswith("-A "):
            rules.append(_rule(line))
        elif not line.startswith("-N "):
            raise ParseError(what, "a line that is not -P, -N or -A", line)
    return Chain(name, True, policy, tuple(rules))


def _matches(pattern: str | None, netdev: str) -> bool:
    if pattern is None:
        return True
    negated, name = pattern.startswith("!"), pattern.lstrip("!")
    hit = netdev.startswith(name[:-1]) if name.endswith("+") else netdev == name
    return hit != negated


def forwarded(chains: dict[str, Chain], chain: str, in_dev: str, out_dev: str) -> tuple[bool, str]:
    """Whether `chain` (FORWARD) passes packets from `in_dev` to `out_dev`, and the rule or policy that
    decides it. A rule with other matches (addresses, protocols, states) decides for some packets only
    and is passed over; a jump to a chain that was read (DOCKER-USER) is followed, other user chains
    (Docker's own, about its bridges) are passed over."""
    for rule in chains[chain].rules:
        if rule.other_matches or not (_matches(rule.in_dev, in_dev) and _matches(rule.out_dev, out_dev)):
            continue
        if rule.target in TERMINAL:
            return TERMINAL[rule.target], rule.text
        if rule.target == "RETURN":
            break
        if rule.target in chains and chains[rule.target].exists and rule.target != chain:
            decided = _decide(chains, rule.target, in_dev, out_dev)
            if decided is not None:
                return decided
    policy = chains[chain].policy
    if policy is None:  # a user chain that returns: the caller goes on
        return True, ""
    return policy == "ACCEPT", f"-P {chain} {policy}"


def _decide(chains: dict[str, Chain], chain: str, in_dev: str, out_dev: str) -> tuple[bool, str] | None:
    passed, why = forwarded(chains, chain, in_dev, out_dev)
    return (passed, why) if why else None
