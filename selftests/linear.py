"""Linear time proven by a ratio, not by seconds: a busy machine makes any absolute bound flaky.

`growth(function, make, small)` runs `function(make(small))` and `function(make(FACTOR * small))`, each
the fastest of a few runs (a busy machine's pauses fall on some runs, not on all), and gives the ratio
of the two times. Linear work gives about FACTOR; quadratic work FACTOR squared (256). LIMIT sits
between, with room for a cache that a larger text outgrows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

FACTOR = 16
LIMIT = 48.0
FLOOR = 1e-4  # below 0.1 ms a time is the clock's


@dataclass(frozen=True)
class Growth:
    small: int  # characters
    t_small: float  # seconds, fastest run
    t_large: float
    result: Any  # what the function returned on the larger text (for the test's own assertions)

    @property
    def ratio(self) -> float:
        return self.t_large / max(self.t_small, FLOOR)

    def __str__(self) -> str:
        return (
            f"{self.ratio:.0f}x the time for {FACTOR}x the text "
            f"({self.t_small * 1000:.1f} ms on {self.small:,}, {self.t_large * 1000:.1f} ms on {FACTOR * self.small:,}"
            " characters)"
        )


def fastest(function: Callable[[str], Any], text: str, runs: int) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(runs):
        start = time.perf_counter()
        result = function(text)
        best = min(best, time.perf_counter() - start)
    return best, result


def growth(function: Callable[[str], Any], make: Callable[[int], str], small: int, runs: int = 3) -> Growth:
    t_small, _ = fastest(function, make(small), runs)
    t_large, result = fastest(function, make(FACTOR * small), max(2, runs - 1))
    return Growth(small, t_small, t_large, result)


def assert_linear(function: Callable[[str], Any], make: Callable[[int], str], small: int) -> Any:
    """The function's result on the larger text, once its time is shown to grow linearly."""
    found = growth(function, make, small)
    assert found.ratio < LIMIT, str(found)
    return found.result
