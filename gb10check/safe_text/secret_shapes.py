"""Token shapes masked wherever they stand: detect-secrets' token plugins, and the field's own shapes.

detect-secrets (Yelp's, a dependency, its version pinned in pyproject.toml) keeps the patterns of the
token kinds it knows (AWS, Azure storage, GitHub, GitLab, Slack, Stripe, Twilio, SendGrid, npm, PyPI,
Telegram, Discord, Mailchimp, Square, IBM, Artifactory, JWT, credentials in a URL, private keys): each
plugin's `denylist`, read here through its API from the installed package, never copied. What
gb10check adds (gb10check/safe_text/secret_shapes.toml) is how each pattern is bounded, and the shapes
detect-secrets lacks that this field's users hold (NGC and Hugging Face keys...), each with the public
source of its format. Which plugins do not run, and why, is said in that file.

Bounded and linear: a pattern runs either on the whole window redact gives it (at most WINDOW
characters: patterns that start at a literal and repeat a bounded number of times) or, where it could
backtrack, at each of its anchors on at most `reach` characters. Pure.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector

__all__ = ["Shape", "load", "private_key_starts", "spans", "use_site_shapes"]

_TRIM = " \t\r\n=:\"'"  # delimiters a plugin's pattern takes in around its token (Artifactory's `(?:\s|=|:|"|^)`)


@dataclass(frozen=True)
class Shape:
    """One pattern and how it runs; `id` names it in the self-tests (`plugin[index]` or the shape's id)."""

    id: str
    source: str
    pattern: re.Pattern[str]
    sample: str  # text that starts its work (the adversarial self-test builds on it)
    anchor: re.Pattern[str] | None = None  # None: on the whole window
    before: int = 0
    reach: int = 0
    accept: Callable[[str], bool] | None = None  # a plugin's own check of a match (JWT: formally valid)
    rest: re.Pattern[str] | None = None  # what the token goes on with past the match (masked too)

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        if self.anchor is None:
            for m in self.pattern.finditer(text):
                yield from self._span(text, m)
            return
        done = 0
        for a in self.anchor.finditer(text):
            if a.start() < done:
                continue
            end = min(len(text), a.start() + self.reach)
            # a match starts at most `before` characters ahead of its anchor: tried there, and nowhere else
            tries = (self.pattern.match(text, p, end) for p in range(max(done, a.start() - self.before), a.start() + 1))
            found: re.Match[str] | None = next((t for t in tries if t is not None), None)
            if found is not None:
                yield from self._span(text, found)
                done = found.end()

    def _span(self, text: str, m: re.Match[str]) -> Iterator[tuple[int, int]]:
        """detect-secrets' choice (RegexBasedDetector.analyze_string): each group that matched, else the whole
        match; without the delimiters a pattern takes in around the token."""
        if self.accept is not None and not self.accept(m.group()):
            return
        groups = [m.span(i) for i in range(1, (m.re.groups or 0) + 1) if m.group(i)]
        for s, e in groups or [m.span()]:
            while s < e and text[s] in _TRIM:
                s += 1
            while e > s and text[e - 1] in _TRIM:
                e -= 1
            if self.rest is not None and e == m.end():
                e = self.rest.match(text, e).end()  # type: ignore[union-attr]  # it matches the empty run too
            if s < e:
                yield s, e


def _plugins() -> dict[str, Any]:
    classes: list[Any] = list(get_mapping_from_secret_type_to_class().values())
    return {cls.__name__: cls for cls in classes}


@cache
def load() -> tuple[Shape, ...]:
    data = tomllib.loads(
        resources.files("gb10check.safe_text").joinpath("secret_shapes.toml").read_text(encoding="utf-8")
    )
    plugins = _plugins()
    shapes: list[Shape] = []
    for entry in data["plugin"]:
        plugin = plugins[entry["name"]]()
        denylist = list(plugin.denylist)
        if len(denylist) != len(entry["patterns"]):  # a new detect-secrets changed the plugin: say so, do not guess
            raise RuntimeError(
                f"detect-secrets' {entry['name']} has {len(denylist)} patterns, "
                f"gb10check/safe_text/secret_shapes.toml bounds {len(entry['patterns'])}: "
                "review the plugin and its entry"
            )
        accept = (lambda s: JwtTokenDetector.is_formally_valid(s)) if isinstance(plugin, JwtTokenDetector) else None
        for i, (regex, how) in enumerate(zip(denylist, entry["patterns"], strict=True)):
            shapes.append(
                Shape(
                    id=f"{entry['name']}[{i}]",
                    source="detect-secrets",
                    pattern=regex,
                    sample=how["sample"],
                    anchor=None if how.get("window") else re.compile(how["anchor"]),
                    before=int(how.get("before", 0)),
                    reach=int(how.get("reach", 0)),
                    accept=accept,
                    rest=re.compile(how["rest"] + "*+") if "rest" in how else None,
                )
            )
    for entry in data["shape"]:
        shapes.append(Shape(entry["id"], entry["source"], re.compile(entry["regex"]), entry["sample"]))
    return tuple(shapes)


@cache
def private_key_starts() -> tuple[str, ...]:
    """detect-secrets' PrivateKeyDetector: the lines a private key starts with (`BEGIN RSA PRIVATE KEY`...)."""
    return tuple(p.pattern for p in PrivateKeyDetector().denylist)


_site: tuple[Shape, ...] = ()


def use_site_shapes(shapes: Iterable[tuple[str, str, str]]) -> None:
    """A site's own shapes from its inventory ([[secret_shapes]]: id, regex built by the inventory, sample),
    masked from now on beside the others (for this process)."""
    global _site
    _site = tuple(
        Shape(i, "the inventory's [[secret_shapes]]", re.compile(regex), sample) for i, regex, sample in shapes
    )


def spans(text: str) -> Iterator[tuple[int, int]]:
    """Where a token shape stands in `text` (a bounded stretch: redact's window)."""
    for shape in (*load(), *_site):
        yield from shape.spans(text)
