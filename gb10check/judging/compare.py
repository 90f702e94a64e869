"""Comparing one value across the nodes of a cluster: which nodes are the odd ones out (pure)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

__all__ = ["V", "odd_ones_out", "shown"]

V = TypeVar("V", bound=Hashable)


def odd_ones_out(values: Mapping[str, V], reference: Sequence[str] = ()) -> list[str]:
    """The nodes whose value differs from the one most nodes have (a tie goes to the value of the
    first node of `reference` that has one of the tied values, e.g. rank 0). [] when all agree."""
    counts = Counter(values.values())
    if len(counts) <= 1:
        return []
    top = max(counts.values())
    tied = {v for v, c in counts.items() if c == top}
    common = next((values[n] for n in reference if n in values and values[n] in tied), None)
    if common is None:
        common = next(v for v in values.values() if v in tied)
    return [n for n, v in values.items() if v != common]


def shown(values: Mapping[str, object], odd: Sequence[str]) -> str:
    """`a: x, b: y` with the odd ones out marked, for a check's `found`."""
    text = ", ".join(f"{n}: {v}" for n, v in values.items())
    return text + (f" (the odd one{'s' if len(odd) > 1 else ''} out: {', '.join(odd)})" if odd else "")
