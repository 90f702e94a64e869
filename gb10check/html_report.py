"""reports/report.html: the run as one self-contained page people look at.

A grid of the checks per node (pass / fail / skip; a failing cell expands to what was expected
and found and the hint), the troubleshooting section, the regressions and recoveries against the
previous run, and, when there is history, each trended figure over the runs with its median
drawn. Jinja2 renders the page (autoescaped: every value a node printed is text, never markup);
pygal draws the plots as inline SVG with its JavaScript left out, so the page fetches nothing.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import markupsafe
import pygal
from pygal.style import Style

from gb10check import atomic
from gb10check.history import Run, direction, figure_of, figures_of
from gb10check.neutralise import neutralise_tree

TEMPLATE = Path(__file__).parent / "templates" / "report.html.j2"
CLUSTER = "cluster"  # the column of checks about no one node


@dataclass
class Cell:
    verdict: str
    hints: list[str]
    message: str
    evidence: list[dict[str, Any]]
    test: str
    troubleshooting: dict[str, str]  # hint id -> its text for this failure alone (its node and items)


@dataclass
class GridRow:
    check: str
    cells: dict[str, Cell] = field(default_factory=dict)  # node (or CLUSTER) -> its cell


def _label(check: str, node: str | None) -> str:
    """A check's name without its node: test_x[node-link] -> test_x[link]."""
    if node:
        check = check.replace(f"[{node}]", "").replace(f"[{node}-", "[").replace(f"-{node}]", "]")
    return check


def grid(summary: dict[str, Any]) -> tuple[list[str], list[GridRow]]:
    """(columns, rows): one row per check, one column per node, one cell per (check, node)."""
    columns: list[str] = []
    rows: dict[str, GridRow] = {}
    for r in summary.get("checks", []):
        column = r.get("node") or CLUSTER
        if column not in columns:
            columns.append(column)
        label = _label(r["check"], r.get("node"))
        row = rows.setdefault(label, GridRow(label))
        row.cells[column] = Cell(
            r["verdict"],
            list(r.get("hints") or []),
            r.get("message") or "",
            list(r.get("evidence") or []),
            r["test"],
            dict(r.get("troubleshooting") or {}),
        )
    ordered = sorted(columns, key=lambda c: (c == CLUSTER, c))
    return ordered, list(rows.values())


def _chart_style() -> Style:
    return Style(background="white", plot_background="white", font_family="sans-serif", colors=("#1f5fa8", "#c0392b"))


@dataclass(frozen=True)
class Plot:
    key: str  # "<check>::<figure>"
    svg: str
    points: int


def plots(history: Sequence[Run], current: dict[str, float], started: str) -> list[Plot]:
    """Each trended figure over the earlier runs and this one, with the median of the earlier ones."""
    out = []
    for key in sorted(current):
        if direction(figure_of(key)) is None:
            continue
        series = [(run.started, run.figures[key]) for run in history if key in run.figures] + [(started, current[key])]
        if len(series) < 2:
            continue
        median = statistics.median(v for _, v in series[:-1])
        chart = pygal.Line(
            style=_chart_style(),
            js=(),  # no <script> from a CDN: the page is self-contained
            width=640,
            height=260,
            show_legend=True,
            legend_at_bottom=True,
            x_label_rotation=30,
            title=key,
            dots_size=3,
            explicit_size=True,  # width and height on the <svg>: an inline-block figure gives it no size of its own
        )
        chart.x_labels = [s[:16].replace("T", " ") for s, _ in series]
        chart.add(figure_of(key), [v for _, v in series])
        chart.add(
            "median of the earlier runs", [median] * len(series), show_dots=False, stroke_style={"dasharray": "6,4"}
        )
        out.append(Plot(key, chart.render(is_unicode=True), len(series)))
    return out


_SVG_HEADER = re.compile(r"^<\?xml[^>]*>\s*")


def render(
    summary: dict[str, Any],
    troubleshooting: dict[str, str],
    history: Sequence[Run] = (),
) -> str:
    # escaped as HTML by jinja2; a node's control characters shown too (a `cat report.html` replays nothing)
    summary, troubleshooting = neutralise_tree(summary), neutralise_tree(troubleshooting)  # type: ignore[assignment]
    columns, rows = grid(summary)
    current = figures_of(summary.get("checks", []))
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE.parent)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    charts = [(p.key, markupsafe.Markup(_SVG_HEADER.sub("", p.svg)), p.points)
              for p in plots(history, current, summary.get("started", ""))]  # fmt: skip
    return env.get_template(TEMPLATE.name).render(
        summary=summary,
        columns=columns,
        rows=rows,
        troubleshooting=troubleshooting,
        charts=charts,
        history_runs=len(history),
    )


def write(path: Path, summary: dict[str, Any], troubleshooting: dict[str, str], history: Sequence[Run] = ()) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write(path, render(summary, troubleshooting, history))
