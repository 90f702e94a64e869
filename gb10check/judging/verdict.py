"""How a check states its result: expected, found, where; recorded for the reports either way."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NoReturn

from gb10check.safe_text.neutralise import neutralise
from gb10check.safe_text.redact import redact, redact_known

__all__ = ["Advisory", "CheckFailed", "Comparison", "Evidence"]

_PYTHON_NONE = re.compile(r"None\b")  # "None", "vNone", "= None"; not "NoneType", "none"


class CheckFailed(AssertionError):
    """A fault of the cluster, found by a check (pytest reports it as a failure).

    `hint_ids`, when given, are the diagnosis this failure calls for (they replace the test's own).
    """

    def __init__(
        self, message: str, hint_ids: tuple[str, ...] = (), context: dict[str, str | list[str]] | None = None
    ) -> None:
        message = neutralise(message)
        super().__init__(redact_known(message))  # the check's words; what it quotes, `expect` has masked
        self.hint_ids = hint_ids
        self.context = dict(context or {})  # fields for the hint's commands (the file to fix, ...)


@dataclass(frozen=True)
class Comparison:
    """One comparison a check made, pass or fail: the one record checks, JUnit and the summary share."""

    what: str
    expected: str
    found: str
    ok: bool
    detail: str = ""  # said on failure only
    hints: tuple[str, ...] = ()  # the diagnosis the check chose for this failure, if any


@dataclass(frozen=True)
class Advisory:
    """What a check found that works and costs speed ("advisory": what it costs), or that the suite would
    do otherwise ("advice": why): recorded beside the verdict, never a failure unless the inventory asks."""

    kind: str  # "advisory" or "advice"
    what: str
    expected: str
    found: str
    why: str
    where: str = ""  # the place to change it (a file and line)


@dataclass(repr=False)
class Evidence:
    """What one test measured; the plugin copies it into JUnit properties and the summary."""

    node: str | None = None
    place: str | None = None  # where a failure is, in words, when more than the node (two nodes and a rail)
    items: list[Comparison] = field(default_factory=list)
    figures: dict[str, float] = field(default_factory=dict)  # what the check measured, by name (units in the name)
    facts: dict[str, str] = field(default_factory=dict)  # what it found that is not a number (a version, a field)
    advisories: list[Advisory] = field(default_factory=list)  # what costs speed, and advice: never failures
    # how the check skips (pytest.skip, given by the fixture); the reason once another check's fault explains it
    skip: Callable[[str], NoReturn] | None = None
    explained: str = ""

    def explained_by(self, reason: str) -> None:
        """Another check owns the fault this check's evidence would show (a dark port,
        `gb10check/judging/dark_ports.py`): from here on, what still compares passes and the first comparison
        that fails skips with `reason` (the owning failure, named), so one fault is one failure. An empty reason
        changes nothing."""
        self.explained = reason

    def advise(self, kind: str, *, what: str, expected: str, found: str, why: str, where: str = "") -> None:
        """Record an advisory (it works and costs speed: `why` says what) or advice (a preference: `why` says
        why); the check passes. Masked and neutralised as every expect."""
        if kind not in ("advisory", "advice"):
            raise ValueError(f"evidence.advise: kind is advisory or advice, not {kind!r}")
        self.advisories.append(
            Advisory(
                kind,
                neutralise(what),
                redact(neutralise(expected)),
                redact(neutralise(found)),
                redact(neutralise(why)),
                redact(neutralise(where)),
            )
        )

    def figure(self, name: str, value: float | None) -> None:
        """A measured figure for the reports and the history (`bandwidth_gbps`, `ttft_s`...), pass or fail."""
        if value is not None:
            self.figures[name] = round(float(value), 6)

    def fact(self, name: str, value: str) -> None:
        """A found value worth a line in the reports (`vllm_version`, `reasoning_field`), pass or fail."""
        value = neutralise(value)
        self.facts[name] = redact(value)

    def expect(
        self,
        ok: bool,
        *,
        what: str,
        expected: object,
        found: object,
        detail: str = "",
        hints: tuple[str, ...] = (),
        context: dict[str, str | list[str]] | None = None,
    ) -> None:
        """Record one comparison; on failure raise with expected, found, the node (+ detail, failure only)."""
        __tracebackhide__ = True
        if not str(found).strip():  # a check that cannot say what it saw has no evidence
            raise ValueError(f"evidence.expect({what!r}): `found` is empty; say what was found")
        if _PYTHON_NONE.search(str(found)) or _PYTHON_NONE.search(str(expected)):
            # a value the check did not have, formatted as Python's None ("cgroup vNone"): say what was not there
            raise ValueError(
                f"evidence.expect({what!r}): {found!r} / {expected!r} shows Python's None; say what is missing"
            )
        expected, found, detail = neutralise(str(expected)), neutralise(str(found)), neutralise(detail)
        expected, found = redact(str(expected)), redact(str(found))  # a found value may be a node's secret
        if not ok and self.explained and self.skip is not None:
            self.skip(redact(neutralise(self.explained)))
        self.items.append(Comparison(what, expected, found, bool(ok), redact(detail) if not ok else "", hints))
        if not ok:
            place = self.place or self.node or "the cluster"
            raise CheckFailed(
                f"{what} on {place}: expected {expected}, found {found}" + (f"; {detail}" if detail else ""),
                hints,
                context,
            )

    def __repr__(self) -> str:
        return f"Evidence(node={self.node!r}, {len(self.items)} item(s))"
