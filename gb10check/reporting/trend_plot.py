"""The figures over time in report.html: one small chart per trended figure, drawn as inline SVG.

Pure geometry: the earlier runs' values and this run's, in the figure's unit, on a y axis with a few
round ticks; the median of the earlier runs (dashed) and the trend limit this run was judged against
(dotted red: a figure beyond it fails its trend check); each run labelled with its time, as short as
keeps every label distinct (`04 Dec` for nightly runs, `06:14:05` for runs within one minute). The
template draws it (autoescaped: a check's name is text there, never markup).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from gb10check.reporting.history import Run, Trend, direction, figure_of

__all__ = [
    "MAX_TIME_LABELS",
    "Level",
    "Plot",
    "Point",
    "Tick",
    "Unit",
    "limit_of",
    "nice_ticks",
    "plot",
    "plots",
    "shown",
    "time_labels",
    "unit_of",
]

WIDTH, HEIGHT = 360, 190
LEFT, RIGHT, TOP, BOTTOM = 52, 14, 14, 40  # the plot area's margins: y labels left, time labels below
MAX_TIME_LABELS = 6


@dataclass(frozen=True)
class Unit:
    name: str  # as the axis and the tooltips say it
    scale: float = 1.0  # value x scale is what is shown (seconds shown as ms)


def unit_of(figure: str, values: Sequence[float] = ()) -> Unit:
    """The unit a figure is in, from its name's ending (bandwidth_gbps_c0a is Gb/s); short times in ms."""
    base = figure.split("_gbps", 1)[0] + "_gbps" if "_gbps" in figure else figure
    if base.endswith("_gbps"):
        return Unit("Gb/s")
    if figure.endswith("tokens_per_s"):
        return Unit("tokens/s")
    if figure.endswith("_gib"):
        return Unit("GiB")
    if figure.endswith("_s") or figure.endswith("_seconds"):
        return Unit("ms", 1000.0) if values and max(abs(v) for v in values) < 1 else Unit("s")
    return Unit("")


def shown(value: float, unit: Unit) -> str:
    """A value as the chart writes it: three significant digits, its unit after it."""
    v = value * unit.scale
    text = f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return f"{text} {unit.name}".strip()


@dataclass(frozen=True)
class Tick:
    at: float  # the pixel position along its axis
    text: str
    second: str = ""  # a time label's second line
    anchor: str = "middle"  # the first time label starts at its run, the last ends there: none is cut off


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    value: float  # as recorded (the tests read it)
    tip: str  # the run's time and the value, for the tooltip
    latest: bool = False


@dataclass(frozen=True)
class Level:
    """A horizontal line across the plot: the median, the trend limit."""

    y: float
    text: str
    kind: str  # "median" | "limit"


@dataclass(frozen=True)
class Plot:
    key: str  # "<check>::<figure>"
    figure: str
    unit: str
    state: str  # the trend check's verdict: "failed", "passed", "skipped" (too little history), "none"
    width: int = WIDTH
    height: int = HEIGHT
    points: list[Point] = field(default_factory=list)
    yticks: list[Tick] = field(default_factory=list)
    xticks: list[Tick] = field(default_factory=list)
    levels: list[Level] = field(default_factory=list)
    left: int = LEFT
    right: int = WIDTH - RIGHT
    top: int = TOP
    bottom: int = HEIGHT - BOTTOM

    @property
    def polyline(self) -> str:
        return " ".join(f"{p.x:.1f},{p.y:.1f}" for p in self.points)


def _parse(started: str) -> datetime | None:
    try:
        return datetime.strptime(started, "%Y-%m-%dT%H:%M:%S%z")
    except ValueError:
        return None


def time_labels(started: Sequence[str]) -> list[tuple[str, str]]:
    """Each run's time as (first line, second line), as short as keeps them distinct: the day alone when
    each run is on a day of its own, the day and the minute, then the second; a run's number if even
    the seconds agree (two runs started within one second)."""
    times = [_parse(s) for s in started]
    if any(t is None for t in times):
        return [(s[:10], s[11:19]) for s in started]
    parsed = [t for t in times if t is not None]
    one_day = len({t.date() for t in parsed}) == 1
    formats: list[tuple[str, str]] = [("%d %b", "")] if not one_day else []
    for clock in ("%H:%M", "%H:%M:%S"):
        formats.append((clock, "") if one_day else ("%d %b", clock))
    for first, second in formats:
        labels = [(t.strftime(first), t.strftime(second) if second else "") for t in parsed]
        if len(set(labels)) == len(labels):
            return labels
    return [(a, f"{b} #{i + 1}".strip()) for i, (a, b) in enumerate(labels)]


def nice_ticks(low: float, high: float, count: int = 4) -> list[float]:
    """About `count` round values (1, 2, 2.5 or 5 times a power of ten) covering low..high."""
    if high <= low:
        high = low + (abs(low) or 1.0)
    raw = (high - low) / max(1, count - 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    start = math.floor(low / step) * step
    ticks = []
    value = start
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < high:
        ticks.append(round(value, 10))
    return ticks


def limit_of(trend: Trend) -> float | None:
    """The value beyond which this run's figure fails its trend: the median, worse by the allowed fraction."""
    if trend.median is None or direction(figure_of(trend.key)) is None:
        return None
    sign = direction(figure_of(trend.key)) or 1
    return trend.median * (1 - trend.allowed) if sign > 0 else trend.median * (1 + trend.allowed)


def plot(key: str, series: Sequence[tuple[str, float]], trend: Trend | None = None, state: str = "none") -> Plot:
    """One figure's chart: `series` is (started, value) per run, oldest first, this run last."""
    figure = figure_of(key)
    values = [v for _, v in series]
    median = trend.median if trend is not None and trend.median is not None else None
    if median is None and len(values) > 1:
        median = statistics.median(values[:-1])
    limit = limit_of(trend) if trend is not None else None
    unit = unit_of(figure, values)
    span = [*values, *(x for x in (median, limit) if x is not None)]
    low, high = min(span), max(span)
    pad = (high - low) * 0.12 or abs(high) * 0.1 or 1.0
    low, high = low - pad, high + pad
    if min(span) >= 0 and low < 0:
        low = 0.0
    ticks = nice_ticks(low * unit.scale, high * unit.scale)
    low, high = ticks[0] / unit.scale, ticks[-1] / unit.scale
    top, bottom, left, right = TOP, HEIGHT - BOTTOM, LEFT, WIDTH - RIGHT

    def y_of(value: float) -> float:
        return bottom - (value - low) / (high - low) * (bottom - top)

    n = len(series)
    xs = [left + (right - left) * (i / (n - 1) if n > 1 else 0.5) for i in range(n)]
    labels = time_labels([s for s, _ in series])
    tips = [f"{started.replace('T', ' ')}: {shown(v, unit)}" for started, v in series]
    points = [
        Point(xs[i], y_of(v), v, tips[i] + (" (this run)" if i == n - 1 else ""), i == n - 1)
        for i, v in enumerate(values)
    ]
    stride = max(1, math.ceil(n / MAX_TIME_LABELS))
    shown_at = sorted({*range(0, n, stride), n - 1})
    if len(shown_at) > 1 and shown_at[-1] - shown_at[-2] < stride:  # the last label never crowds the one before
        shown_at.pop(-2)
    ends = {0: "start", n - 1: "end"} if n > 1 else {}
    xticks = [Tick(xs[i], labels[i][0], labels[i][1], ends.get(i, "middle")) for i in shown_at]
    yticks = [Tick(y_of(t / unit.scale), f"{t:g}") for t in ticks]
    levels = []
    if median is not None:
        levels.append(Level(y_of(median), f"median {shown(median, unit)}", "median"))
    if limit is not None:
        levels.append(Level(y_of(limit), f"trend limit {shown(limit, unit)}", "limit"))
    return Plot(key, figure, unit.name, state, points=points, yticks=yticks, xticks=xticks, levels=levels)


def plots(
    history: Sequence[Run], current: dict[str, float], started: str, trends: Sequence[Trend] = (),
    verdicts: dict[str, str] | None = None,
) -> list[Plot]:  # fmt: skip
    """Each trended figure over the earlier runs and this one (two runs at least), the ones whose trend
    failed first. `verdicts`: the trend check's verdict per figure key."""
    by_key = {t.key: t for t in trends}
    out = []
    for key in sorted(current):
        if direction(figure_of(key)) is None:
            continue
        series = [(run.started, run.figures[key]) for run in history if key in run.figures] + [(started, current[key])]
        if len(series) < 2:
            continue
        out.append(plot(key, series, by_key.get(key), (verdicts or {}).get(key, "none")))
    return sorted(out, key=lambda p: p.state != "failed")
