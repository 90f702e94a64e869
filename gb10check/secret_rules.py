"""The catalogue of secret shapes (gb10check/secret_rules.toml, copied from gitleaks and detect-secrets).

Pure. Each rule's pattern is written in Go's RE2 syntax, as its catalogue publishes it; `to_python`
translates the few constructs Python's `re` spells differently. A rule runs only on text holding one
of its keywords (gitleaks' own prefilter). `Rule.spans` gives the stretches to mask: the rule's
secretGroup, else its first capture group that matched, else its whole match (gitleaks' choice).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources

# POSIX classes RE2 takes inside brackets ([[:alnum:]]) and Python does not
_POSIX = {
    "alnum": "A-Za-z0-9",
    "alpha": "A-Za-z",
    "digit": "0-9",
    "lower": "a-z",
    "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
    "space": r"\s",
    "word": r"\w",
}
_PEM = "private-key"  # applied by redact's linear scan, not by its pattern (see secret_rules.toml)


@dataclass(frozen=True)
class Rule:
    id: str
    source: str
    pattern: re.Pattern[str]
    keywords: tuple[str, ...]  # lowercase; the rule runs on a stretch holding one of them
    group: int = 0  # gitleaks' secretGroup; 0: the first group that matched, else the whole match

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        for m in self.pattern.finditer(text):
            if self.group:
                yield m.span(self.group)
                continue
            yield next((m.span(i) for i in range(1, m.re.groups + 1) if m.group(i)), m.span())


def _skip_class(regex: str, i: int) -> int:
    """The index after the bracket expression that starts at regex[i] ('[')."""
    j = i + 1
    if regex[j : j + 1] == "^":
        j += 1
    if regex[j : j + 1] == "]":  # a ] first is a literal
        j += 1
    while j < len(regex) and regex[j] != "]":
        if regex[j] == "\\":
            j += 2
        elif regex.startswith("[:", j):
            j = regex.index(":]", j) + 2
        else:
            j += 1
    return j + 1


def _posix_classes(regex: str) -> str:
    return re.sub(r"\[:(\w+):\]", lambda m: _POSIX[m[1]], regex)


def _walk(regex: str, i: int) -> Iterator[int]:
    """The indexes of regex's syntax characters from i on (escapes and bracket expressions skipped)."""
    while i < len(regex):
        if regex[i] == "\\":
            i += 2
        elif regex[i] == "[":
            i = _skip_class(regex, i)
        else:
            yield i
            i += 1


def _scoped_flags(regex: str) -> str:
    """RE2's `(?i)` in mid-pattern (it holds to the end of its group) as Python's scoped `(?i:...)`."""
    while True:
        at = next((i for i in _walk(regex, 1) if regex.startswith("(?i)", i)), -1)
        if at < 0:
            return regex
        depth, end = 0, len(regex)
        for i in _walk(regex, at + 4):
            if regex[i] == "(":
                depth += 1
            elif regex[i] == ")":
                if depth == 0:
                    end = i
                    break
                depth -= 1
            elif regex[i] == "|" and depth == 0:
                raise ValueError(f"(?i) before an alternative of its group: {regex}")
        regex = regex[:at] + "(?i:" + regex[at + 4 : end] + ")" + regex[end:]


def to_python(regex: str) -> str:
    """An RE2 pattern of the catalogue in Python's syntax (same meaning)."""
    return _scoped_flags(_posix_classes(regex)).replace(r"\z", r"\Z")


@cache
def load() -> tuple[Rule, ...]:
    """The catalogue's rules, compiled (private-key excepted: redact scans for it)."""
    text = resources.files("gb10check").joinpath("secret_rules.toml").read_text(encoding="utf-8")
    rules = []
    for raw in tomllib.loads(text)["rules"]:
        if raw["id"] == _PEM:
            continue
        rules.append(
            Rule(
                id=raw["id"],
                source=raw["source"],
                pattern=re.compile(to_python(raw["regex"])),
                keywords=tuple(k.lower() for k in raw.get("keywords", ())),
                group=int(raw.get("secretGroup", 0)),
            )
        )
    return tuple(rules)


def spans(text: str) -> Iterator[tuple[int, int]]:
    """Where the catalogue's rules find a secret in `text` (a bounded stretch: a regex call holds the GIL)."""
    lowered = text.lower()
    present = {k for k in _keywords() if k in lowered}
    for rule in load():
        if not rule.keywords or not present.isdisjoint(rule.keywords):
            yield from rule.spans(text)


@cache
def _keywords() -> frozenset[str]:
    return frozenset(k for rule in load() for k in rule.keywords)
