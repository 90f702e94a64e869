"""reports/report.html: the run as one self-contained page, what is wrong and what to type first.

From the top: the verdict and each stage's (preflight, network, service, the trends against the
history; a stage that did not run says why); what changed since the previous run (regressions, trend
failures, recoveries: the header's failures among them); what failed, grouped by hint, the root cause
first (a node down, then what the service's failure follows from, the API down, then the rest in the
order the run met them), each hint with its cause, fix and commands and each failure with its own; the
cluster picture (gb10check/reporting/cluster_picture.py) with the bandwidth matrix, a click on a node or a link
showing its checks; the checks of each stage by what they check (a grid of the checks about one node,
node by node; the checks between nodes, and about the cluster, as lists); the figures over time
(gb10check/reporting/trend_plot.py). Jinja2 renders it autoescaped: everything a node said is text, never markup;
the drawings are inline SVG and the page fetches nothing and runs no script.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from gb10check import atomic
from gb10check.judging import root_cause
from gb10check.judging.root_cause import BAD, stage_of
from gb10check.reporting.cluster_picture import Picture, picture, state_of
from gb10check.reporting.history import Run, Trend, figure_key, figures_of, trend_check
from gb10check.reporting.report import title_of
from gb10check.reporting.trend_plot import Plot, plots
from gb10check.safe_text.neutralise import neutralise_tree
from gb10check.stages import STAGES as COMMANDS

__all__ = [
    "ABOUT",
    "MARK",
    "SHOWN_PER_HINT",
    "TEMPLATE",
    "Cell",
    "Change",
    "Failure",
    "GridRow",
    "HintGroup",
    "Listed",
    "Page",
    "Stage",
    "StageChecks",
    "hint_order",
    "page",
    "render",
    "where_of",
    "write",
]

TEMPLATE = Path(__file__).parent / "templates" / "report.html.j2"
ABOUT = {
    **{name: COMMANDS[name][1] for name in ("preflight", "network", "service")},
    "trends": "each measured figure against its last runs (--history)",
    "run": "the run itself",
}
MARK = {"passed": "✓", "failed": "✗", "error": "!", "skipped": "–", "interrupted": "⏸"}
SHOWN_PER_HINT = 6  # a hint's failures listed, the rest behind "and N more"


@dataclass
class Stage:
    name: str
    about: str
    counts: dict[str, int]
    state: str  # failed / passed / skipped / none (did not run)
    note: str = ""  # why it did not run

    @property
    def summary(self) -> str:
        if self.state == "none":
            return self.note
        bad = sum(self.counts.get(v, 0) for v in BAD)
        parts = [f"{bad} of {sum(self.counts.values())} failed"] if bad else [f"{self.counts.get('passed', 0)} passed"]
        if self.counts.get("skipped"):
            parts.append(f"{self.counts['skipped']} skipped")
        return ", ".join(parts)


@dataclass
class Failure:
    anchor: str  # "f3"
    row: dict[str, Any]
    stage: str
    title: str
    where: str
    items: list[dict[str, Any]]  # the comparisons that did not hold
    message: str  # when there are none: the failure's one line
    own: list[tuple[str, str]]  # (hint id, its text with this failure's own commands)
    same: list[Failure] = field(default_factory=list)  # other checks about the same place with the same finding

    @property
    def finding(self) -> str:
        """What it found, whatever it asked: eleven requests that each got `HTTP 404: the model does not
        exist` found one thing."""
        return self.message or "; ".join(str(e.get("found")) for e in self.items)

    @property
    def label(self) -> str:
        """Its title and what tells it from its siblings: "Compose rule ipc-host"."""
        param = _param_without(self.row["check"], self.row.get("nodes") or [])
        return f"{self.title} {param}".strip()

    @property
    def count(self) -> int:
        return 1 + len(self.same)


@dataclass
class HintGroup:
    hint: str | None
    heading: str
    text: str  # cause, fix, the commands filled for the nodes of its failures
    failures: list[Failure] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(f.count for f in self.failures)

    @property
    def shown(self) -> list[Failure]:
        return self.failures[:SHOWN_PER_HINT]

    @property
    def more(self) -> list[Failure]:
        return self.failures[SHOWN_PER_HINT:]


@dataclass
class Cell:
    verdict: str
    href: str  # the failure's anchor, when it failed
    tip: str


@dataclass
class GridRow:
    title: str
    param: str  # what tells its rows apart: a netdev, a rule, a canary
    cells: dict[str, Cell] = field(default_factory=dict)


@dataclass
class Listed:
    """A check about no one node, or about two: one line, its verdict, the failing ones named."""

    title: str
    state: str
    counts: dict[str, int]
    failures: list[Failure]
    param: str = ""


@dataclass
class StageChecks:
    stage: Stage
    columns: list[str]
    grid: list[GridRow]
    between: list[Listed]
    cluster: list[Listed]


@dataclass
class Change:
    kind: str  # regression / trend / recovery
    test: str
    title: str
    text: str
    href: str = ""
    where: str = ""  # the node, pair or rail


def _params(check: str) -> str:
    return check.split("[", 1)[1].rstrip("]") if "[" in check else ""


def _param_without(check: str, names: Sequence[str]) -> str:
    """A check's parameters without the node names it is about: test_x[node-enp1s0f0np0] -> enp1s0f0np0."""
    rest = _params(check)
    for name in names:
        if rest == name:
            return ""
        rest = rest.removeprefix(f"{name}-")
    return rest


def where_of(row: dict[str, Any], netdevs: dict[tuple[str, str], str]) -> str:
    """Which node, pair or rail a check is about, as the page names it."""
    nodes, rail = row.get("nodes") or [], row.get("rail")
    if len(nodes) == 2:
        return f"{nodes[0]} and {nodes[1]}" + (f" over rail {rail}" if rail else "")
    if len(nodes) == 1 and rail:
        netdev = netdevs.get((nodes[0], rail), rail)
        return f"{nodes[0]} {netdev}" + ("" if netdev == rail else f" (rail {rail})")
    if nodes:
        return str(nodes[0])
    node = row.get("node")
    if node:
        return str(node)
    return f"rail {rail}" if rail else "the cluster"


def _failure(anchor: str, row: dict[str, Any], netdevs: dict[tuple[str, str], str], where: str = "") -> Failure:
    """`where`: what it is about when its row does not say (a trend check: its figure's check's nodes)."""
    items = [e for e in row.get("evidence") or [] if not e.get("ok")]
    message = "" if items else (row.get("message") or "").strip()
    own = list((row.get("troubleshooting") or {}).items())
    title = row.get("title") or title_of(None, row["check"])
    return Failure(anchor, row, stage_of(row["test"]), title, where or where_of(row, netdevs), items, message, own)


def hint_order(summary: dict[str, Any]) -> list[str]:
    """The hints of the run's failures, root cause first (gb10check/judging/root_cause.py)."""
    return root_cause.hint_order(summary.get("troubleshooting") or {}, summary.get("checks", []))


def _groups(failures: list[Failure], summary: dict[str, Any], troubleshooting: dict[str, str]) -> list[HintGroup]:
    order = hint_order(summary)
    groups: dict[str | None, HintGroup] = {}
    for hint in order:
        text = troubleshooting.get(hint, "")
        heading, _, body = text.partition("\n")
        groups[hint] = HintGroup(hint, heading.strip() or f"[{hint}]", body.rstrip())
    for failure in failures:
        ids = [h for h in failure.row.get("hints") or [] if h in groups]
        first = min(ids, key=order.index) if ids else None
        if first is None and None not in groups:
            groups[None] = HintGroup(None, "Failed without a hint", "")
        groups[first].failures.append(failure)
    for group in groups.values():
        group.failures = _merged(group.failures)
    return [g for g in groups.values() if g.failures]


def _merged(failures: list[Failure]) -> list[Failure]:
    """A hint's failures: a node's or a member's own before those between two nodes (a pair's ping or login
    follows from the end that is down); those about one place with the same finding and the same commands
    (the 45 checks of a node that cannot be reached, the requests that all got a 404) as one entry naming
    them all; and at one place, a finding of its own before one that many checks repeat (wrong-model: the
    served name that differs before the requests that failed for it)."""
    out: list[Failure] = []
    first: dict[tuple[str, str, str], Failure] = {}
    for failure in sorted(failures, key=lambda f: len(f.row.get("nodes") or []) >= 2):
        key = (failure.where, failure.finding, repr(failure.own))
        if key in first:
            first[key].same.append(failure)
        else:
            first[key] = failure
            out.append(failure)
    places = list(dict.fromkeys(f.where for f in out))
    return sorted(out, key=lambda f: (len(f.row.get("nodes") or []) >= 2, places.index(f.where), f.count))


def _stages(summary: dict[str, Any]) -> list[Stage]:
    by_stage: dict[str, dict[str, int]] = {}
    for row in summary.get("checks", []):
        counts = by_stage.setdefault(stage_of(row["test"]), {})
        counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
    selection = summary.get("selection") or {}
    chosen = " ".join(f"{flag} {selection[key]!r}" for flag, key in (("-m", "markers"), ("-k", "keywords"))
                      if selection.get(key))  # fmt: skip
    out = []
    for name in ("preflight", "network", "service", "trends"):
        counts = by_stage.get(name, {})
        verdicts = [v for v, n in counts.items() if n]
        state = state_of(verdicts) if verdicts else "none"
        note = ""
        if state == "none":
            if name == "trends":
                note = "not run: no --history=DIR" if "history" not in summary else "no figure to judge yet"
            elif summary.get("interrupted"):
                note = "not reached: the run was interrupted"
            else:
                note = f"not run: not selected ({chosen})" if chosen else "not run"
        out.append(Stage(name, ABOUT[name], counts, state, note))
    if "run" in by_stage:  # a row of no stage: the run cut short before its first check
        out.append(Stage("run", ABOUT["run"], by_stage["run"], state_of(by_stage["run"])))
    return out


def _stage_checks(
    stage: Stage, rows: list[dict[str, Any]], order: list[str], anchors: dict[str, Failure], about: dict[str, str]
) -> StageChecks:
    """A stage's checks: about one node in the grid, between nodes and about the cluster as lists (a trend
    check with what its figure is about, from `about`)."""
    columns = [n for n in order if any(n in (r.get("nodes") or []) and len(r.get("nodes") or []) == 1 for r in rows)]
    grid: dict[tuple[str, str], GridRow] = {}
    between: dict[str, Listed] = {}
    cluster: dict[tuple[str, str], Listed] = {}
    for row in rows:
        nodes = row.get("nodes") or []
        title = row.get("title") or title_of(None, row["check"])
        failure = anchors.get(row["test"])
        if len(nodes) == 1:
            param = _param_without(row["check"], nodes)
            line = grid.setdefault((title, param), GridRow(title, param))
            tip = row["verdict"] + (f": {row['message'].strip().splitlines()[0][:200]}" if row.get("message") else "")
            line.cells[nodes[0]] = Cell(row["verdict"], f"#{failure.anchor}" if failure else "", tip)
            continue
        if len(nodes) >= 2:
            listed = between.setdefault(title, Listed(title, "none", {}, []))
        else:
            param = about.get(row["check"]) or row.get("rail") or _params(row["check"])
            listed = cluster.setdefault((title, param), Listed(title, "none", {}, [], param))
        listed.counts[row["verdict"]] = listed.counts.get(row["verdict"], 0) + 1
        listed.state = state_of(listed.counts)
        if failure:
            listed.failures.append(failure)
    return StageChecks(stage, columns, list(grid.values()), list(between.values()), list(cluster.values()))


def _changes(
    summary: dict[str, Any], failures: list[Failure], by_test: dict[str, dict[str, Any]], wheres: dict[str, str]
) -> list[Change]:
    """Regressions, the trend checks that failed, recoveries: what the header's counts hold that changed."""
    history = summary.get("history") or {}
    anchors = {f.row["test"]: f.anchor for f in failures}

    def change(kind: str, c: dict[str, Any]) -> Change:
        test, row = c["test"], by_test.get(c["test"])
        title = (row.get("title") if row else "") or title_of(None, test.split("::")[-1])
        href = f"#{anchors[test]}" if test in anchors else ""
        return Change(kind, test, title, f"{c['was']} → {c['now']}", href, wheres.get(test, ""))

    out = [change("regression", c) for c in history.get("regressions", [])]
    out += [
        Change(
            "trend", f.row["test"], f.title, (f.items[0]["found"] if f.items else f.message), f"#{f.anchor}", f.where
        )
        for f in failures
        if f.stage == "trends"
    ]
    out += [change("recovery", c) for c in history.get("recoveries", [])]
    return out


def _verdict(summary: dict[str, Any]) -> tuple[str, str]:
    counts = summary.get("counts") or {}
    bad = sum(counts.get(v, 0) for v in BAD)
    total = sum(counts.values())
    if summary.get("interrupted"):
        i = summary.get("interruption") or {}
        return "failed", f"Interrupted by {i.get('signal', 'a signal')} during {i.get('during', 'the run')}"
    if not total:
        return "none", "No check ran"
    if bad:
        return "failed", f"{bad} of {total} checks failed"
    skipped = counts.get("skipped", 0)
    return "passed", f"All {total - skipped} checks passed" + (f", {skipped} skipped" if skipped else "")


@dataclass
class Page:
    verdict: str
    headline: str
    stages: list[Stage]
    changes: list[Change]
    groups: list[HintGroup]
    picture: Picture | None
    checks: list[StageChecks]
    plots: list[Plot]
    history_runs: int
    failures: list[Failure]
    node_names: list[str]
    anchor_of: dict[str, str]  # a failed check's test id -> its anchor in "What failed"
    label_of: dict[str, str]  # a failed check's test id -> its title and what tells it from its siblings
    where_of: dict[str, str]  # a check's test id -> the node, pair or rail it is about, in words
    plot_titles: dict[str, tuple[str, str]]  # a figure's key -> (its check's title, what it is about)


def page(
    summary: dict[str, Any], troubleshooting: dict[str, str], history: Sequence[Run] = (), trends: Sequence[Trend] = ()
) -> Page:
    """The page's model from summary.json (and the history's runs and trends, when --history)."""
    rows = list(summary.get("checks", []))
    cluster = summary.get("cluster") or {}
    netdevs = {(m["node"], r["name"]): m["netdev"] for r in cluster.get("rails", []) for m in r.get("members", [])}
    about = {  # a trend check is about its figure's check's nodes
        trend_check(figure_key(r["check"], name)): where_of(r, netdevs) for r in rows for name in r.get("figures") or {}
    }
    failures = [
        _failure(f"f{i}", r, netdevs, about.get(r["check"], "") if stage_of(r["test"]) == "trends" else "")
        for i, r in enumerate(r for r in rows if r["verdict"] in BAD)
    ]
    anchors = {f.row["test"]: f for f in failures}
    order = [n["name"] for n in sorted(cluster.get("nodes", []), key=lambda n: n["rank"])]
    order += sorted({n for r in rows for n in r.get("nodes") or [] if n not in order})
    stages = _stages(summary)
    by_stage: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_stage.setdefault(stage_of(row["test"]), []).append(row)
    checks = [_stage_checks(s, by_stage[s.name], order, anchors, about) for s in stages if s.name in by_stage]
    by_check = {r["check"]: r["verdict"] for r in by_stage.get("trends", [])}
    current = figures_of(rows)
    verdicts = {key: by_check.get(trend_check(key), "none") for key in current}
    charts = plots(history, current, summary.get("started", ""), trends, verdicts)
    verdict, headline = _verdict(summary)
    wheres = {r["test"]: where_of(r, netdevs) for r in rows}
    return Page(
        verdict,
        headline,
        stages,
        _changes(summary, failures, {r["test"]: r for r in rows}, wheres),
        _groups(failures, summary, troubleshooting),
        picture(cluster, rows, summary.get("matrix") or []),
        checks,
        charts,
        len(history),
        failures,
        order,
        {f.row["test"]: f.anchor for f in failures},
        {f.row["test"]: f.label for f in failures},
        wheres,
        {
            figure_key(r["check"], name): (r.get("title") or title_of(None, r["check"]), where_of(r, netdevs))
            for r in rows
            for name in r.get("figures") or {}
        },
    )


def render(
    summary: dict[str, Any],
    troubleshooting: dict[str, str],
    history: Sequence[Run] = (),
    trends: Sequence[Trend] = (),
) -> str:
    # escaped as HTML by jinja2; a node's control characters shown too (a `cat report.html` replays nothing)
    summary, troubleshooting = neutralise_tree(summary), neutralise_tree(troubleshooting)  # type: ignore[assignment]
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE.parent)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template(TEMPLATE.name).render(
        summary=summary, page=page(summary, troubleshooting, history, trends), mark=MARK
    )


def write(
    path: Path,
    summary: dict[str, Any],
    troubleshooting: dict[str, str],
    history: Sequence[Run] = (),
    trends: Sequence[Trend] = (),
) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write(path, render(summary, troubleshooting, history, trends))
