"""The run's summary: one row per check (and node), written as summary.json and summary.md."""

from __future__ import annotations

import fcntl
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from gb10check import atomic
from gb10check.errors import ReportsUnwritable
from gb10check.judging.root_cause import failures_in_order, hint_order
from gb10check.judging.verdict import Comparison
from gb10check.reporting.schema import SCHEMA_VERSION
from gb10check.safe_text.neutralise import neutralise, neutralise_tree
from gb10check.safe_text.redact import redact_known, redact_tree

if TYPE_CHECKING:
    from gb10check.inventory import Inventory

__all__ = [
    "BANDWIDTH",
    "RUN_LOCK",
    "SCHEMA_VERSION",
    "Row",
    "Summary",
    "bandwidth_matrix",
    "check_writable",
    "claim",
    "cluster_of",
    "first_line",
    "title_of",
    "whole_words",
    "write_interrupted_junit",
]


@dataclass
class Row:
    test: str  # pytest node id
    check: str  # the test's name with its parameters, as `pytest -k` takes it
    node: str | None
    verdict: str  # passed / failed / error / skipped
    evidence: list[Comparison] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    message: str = ""
    duration: float = 0.0
    rail: str | None = None  # the rail the check is about, when it is about one
    nodes: list[str] = field(default_factory=list)  # every node it is about (a pair: both; `node` is the first)
    figures: dict[str, float] = field(default_factory=dict)  # what the check measured (bandwidth, TTFT...)
    facts: dict[str, str] = field(default_factory=dict)  # what it found that is not a number (a version)
    troubleshooting: dict[str, str] = field(default_factory=dict)  # hint id -> its text for this failure alone
    title: str = ""  # what the check checks, in words: its docstring's first line (or its name, readable)
    # what works and costs speed (kind "advisory": why says what it costs), and advice ("advice": why the
    # suite would do otherwise): never failures (gb10check/judging/verdict.py Advisory, as a dict)
    advisories: list[dict[str, str]] = field(default_factory=list)


@dataclass
class Summary:
    started: float
    inventory: str
    scenario: str | None
    rows: list[Row] = field(default_factory=list)
    transports: dict[str, dict[str, object]] = field(default_factory=dict)
    interrupted: bool = False
    interruption: dict[str, str] = field(default_factory=dict)  # signal, during (stage or test id)
    # seconds: start_up (options, inventory, the sim's bring-up), session (collection and checks), snapshot
    timings: dict[str, float] = field(default_factory=dict)
    history: dict[str, Any] = field(default_factory=dict)  # --history: regressions, recoveries, earlier runs
    troubleshooting: dict[str, str] = field(default_factory=dict)  # hint id -> its text, filled for this run
    cluster: dict[str, Any] = field(default_factory=dict)  # the inventory's shape (cluster_of): nodes, rails
    selection: dict[str, str] = field(default_factory=dict)  # markers (-m) and keywords (-k) the run was given
    stopped: str = ""  # why the run stopped before its last check (-x, --maxfail), when it did

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for row in self.rows:
            out[row.verdict] = out.get(row.verdict, 0) + 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(self.started)),
            "duration": round(time.time() - self.started, 3),
            "inventory": self.inventory,
            "scenario": self.scenario,
            "interrupted": self.interrupted,
            **({"interruption": self.interruption} if self.interrupted else {}),
            "counts": self.counts(),
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "transports": self.transports,
            **({"history": self.history} if self.history else {}),
            "troubleshooting": self.troubleshooting,
            **({"cluster": self.cluster} if self.cluster else {}),
            "selection": self.selection,
            **({"stopped": self.stopped} if self.stopped else {}),
            "matrix": bandwidth_matrix(self.rows),
            "checks": [asdict(r) for r in self.rows],
        }

    def _interrupted_note(self) -> str:
        if not self.interrupted:
            return ""
        i = self.interruption
        return f" (interrupted by {i.get('signal', 'a signal')} during {i.get('during')})"

    def to_markdown(self) -> str:
        """What failed and what to do first (one line per failed check, root cause first; each hint's
        cause, fix and commands), then what was measured (figures, the bandwidth matrix), each node's
        connections and commands, and the whole table of checks."""
        counts = ", ".join(f"{n} {v}" for v, n in sorted(self.counts().items()))
        lines = [
            "# gb10check summary",
            "",
            (
                f"- inventory: the simulated cluster's, scenario `{self.scenario}` (made for the run, removed with it)"
                if self.scenario
                else f"- inventory: `{self.inventory}`"
            ),
            f"- result: {counts or 'no checks ran'}" + self._interrupted_note() + self._stopped_note(),
            "",
        ]
        lines += self._changes() + self._failures() + self._advisories() + self._measured() + self._matrix()
        lines += self._nodes()
        lines += [
            "## Checks",
            "",
            "| check | node | verdict | what | expected | found | hint |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in self.rows:
            cells = [
                r.check,
                r.node or "",
                r.verdict,
                _each(m.what for m in r.evidence),
                _each(m.expected for m in r.evidence),
                _each(m.found for m in r.evidence) or first_line(r.message),
                " ".join(f"[{h}]" for h in r.hints),
            ]
            lines.append(_cells(cells))
        return "\n".join(lines) + "\n"

    def _stopped_note(self) -> str:
        return f"; the run stopped early ({self.stopped}): the checks after it did not run" if self.stopped else ""

    def _failures(self) -> list[str]:
        """The failed checks, one line each, root cause first; then each hint once, with its commands."""
        checks = [asdict(r) for r in self.rows]
        order = hint_order(self.troubleshooting, checks)
        failed = failures_in_order(checks, order)
        if not failed:
            return []
        lines = ["## What failed", ""]
        for row in failed:
            where = f" ({', '.join(row['nodes']) or row['node']})" if row["nodes"] or row["node"] else ""
            message = row["message"].strip().splitlines()[0] if row["message"].strip() else ""
            lines.append(f"- **{row['verdict']}** `{row['check']}`{where}: {message}")  # whole: a cable move too
        lines += ["", "## What to do", ""]
        for hint in order:
            if hint in self.troubleshooting:
                lines += ["```", self.troubleshooting[hint].rstrip(), "```", ""]
        return lines

    def _advisories(self) -> list[str]:
        """What works and costs speed, then advice: a line each, with what to change and where."""
        lines: list[str] = []
        for kind, heading in (("advisory", "## Advisories (it works, and costs speed)"), ("advice", "## Advice")):
            found = [(r, a) for r in self.rows for a in r.advisories if a.get("kind") == kind]
            if not found:
                continue
            lines += [heading, ""]
            for row, a in found:
                where = f" ({a['where']})" if a.get("where") else ""
                lines.append(f"- `{row.check}`: {a['found']}: {a['why']}{where}")
            lines.append("")
        return lines

    def _matrix(self) -> list[str]:
        """Each pair's RDMA write bandwidth, Gb/s: a row per pair, a column per rail (alone) and all at once."""
        cells = bandwidth_matrix(self.rows)
        if not cells:
            return []
        rails = list(dict.fromkeys(c["rail"] for c in cells if not c["at_once"]))
        pairs = list(dict.fromkeys((c["a"], c["b"]) for c in cells))

        def value(pair: tuple[str, str], rail: str | None, at_once: bool) -> str:
            found = [
                c["gbps"] for c in cells if (c["a"], c["b"]) == pair and c["rail"] == rail and c["at_once"] is at_once
            ]
            return f"{found[0]:g}" if found else "–"

        lines = ["## Bandwidth (Gb/s, RDMA write)", "", _cells(["pair", *rails, "all rails at once"])]
        lines.append("|" + "---|" * (len(rails) + 2))
        lines += [
            _cells([f"{a} – {b}", *(value((a, b), r, False) for r in rails), value((a, b), None, True)])
            for a, b in pairs
        ]
        return [*lines, ""]

    def _nodes(self) -> list[str]:
        """Per node: the SSH connections and commands the run cost it (every command sent: summary.json)."""
        if not self.transports:
            return []
        lines = [
            "## Nodes",
            "",
            "| node | connections | connect attempts | commands | snapshot reads |",
            "|---|---|---|---|---|",
        ]
        for name, t in self.transports.items():
            lines.append(
                _cells(
                    [
                        name,
                        *(
                            str(t.get(k, ""))
                            for k in ("connections", "connect_attempts", "commands", "snapshot_probes")
                        ),
                    ]
                )
            )
        return [*lines, "", "Every command sent to each node: summary.json, `transports.<node>.sent`.", ""]

    def _changes(self) -> list[str]:
        """Against the previous run (--history): first, since they are what changed."""
        regressions, recoveries = self.history.get("regressions", []), self.history.get("recoveries", [])
        if not regressions and not recoveries:
            return []
        lines = ["## Since the previous run", ""]
        lines += [f"- **regression**: `{c['test']}` {c['was']} -> {c['now']}" for c in regressions]
        lines += [f"- recovery: `{c['test']}` {c['was']} -> {c['now']}" for c in recoveries]
        return [*lines, ""]

    def _measured(self) -> list[str]:
        """What the checks measured and found (figures, versions), ahead of the table of checks."""
        rows: list[tuple[Row, str, float | str]] = [(r, k, v) for r in self.rows for k, v in r.facts.items()]
        rows += [(r, k, v) for r in self.rows for k, v in r.figures.items()]
        if not rows:
            return []
        table = [f"| {r.check} | {r.node or ''} | {name} | {_value(value)} |" for r, name, value in rows]
        return ["## Measured", "", "| check | node | what | value |", "|---|---|---|---|", *table, ""]

    def write(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        # the last line of defence: a registered value or a shaped token a check or an error quoted leaves
        # masked (what they quoted from a node was masked where it was quoted; their own words stay)
        data = redact_tree(self.to_json())  # each string before serialising: the JSON escapes stay intact
        data = neutralise_tree(data)  # and a node's control characters shown, never replayed by a reader
        atomic.write(directory / "summary.json", json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        atomic.write(directory / "summary.md", redact_known(neutralise(self.to_markdown())))


def cluster_of(inventory: Inventory) -> dict[str, Any]:
    """summary.json's `cluster`: the shape the run checked (what report.html draws), from the inventory."""
    return {
        "name": inventory.cluster.name,
        "topology": inventory.topology,
        "api_node": inventory.api_node.name,
        "nodes": [{"name": n.name, "rank": n.rank} for n in sorted(inventory.nodes, key=lambda n: n.rank)],
        "rails": [
            {
                "name": rail.name,
                "min_gbps": rail.min_gbps,
                "members": [{"node": m.node, "netdev": m.netdev, "address": m.address} for m in rail.members],
            }
            for rail in inventory.rails
        ],
    }


def title_of(doc: str | None, name: str) -> str:
    """What a check checks, in words: its docstring's first sentence (a summary that runs on to the next
    line is taken whole, up to the blank line or the full stop); with no docstring,
    the test's name made readable (`test_rdma_port_active` -> "Rdma port active")."""
    summary = " ".join(line.strip() for line in (doc or "").strip().split("\n\n", 1)[0].splitlines()).strip()
    summary = summary.split(". ", 1)[0]  # its first sentence: what follows explains it
    if summary:
        return summary.removesuffix(".")
    words = name.split("[", 1)[0].removeprefix("test_").replace("_", " ").strip()
    return words[:1].upper() + words[1:]


BANDWIDTH = "bandwidth_gbps"  # the figure of the bandwidth checks: a rail alone, or the sum of all rails at once


def bandwidth_matrix(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """summary.json's `matrix`: each pair's RDMA write bandwidth in Gb/s, from the checks about two nodes that
    measured `bandwidth_gbps`: each rail alone (`at_once` false), and with every rail the two share at once
    (`at_once` true: each rail's share as `bandwidth_gbps_<rail>`, their sum with `rail` null)."""
    out: list[dict[str, Any]] = []
    for row in rows:
        if len(row.nodes) != 2 or BANDWIDTH not in row.figures:
            continue
        a, b = row.nodes
        if row.rail is not None:
            out.append({"a": a, "b": b, "rail": row.rail, "at_once": False, "gbps": row.figures[BANDWIDTH]})
            continue
        prefix = BANDWIDTH + "_"
        out += [
            {"a": a, "b": b, "rail": name.removeprefix(prefix), "at_once": True, "gbps": value}
            for name, value in row.figures.items()
            if name.startswith(prefix)
        ]
        out.append({"a": a, "b": b, "rail": None, "at_once": True, "gbps": row.figures[BANDWIDTH]})
    return out


def write_interrupted_junit(path: Path, message: str, hint_id: str) -> None:
    """A JUnit file for a run cut short before its first check: one error case saying so."""
    import xml.etree.ElementTree as ET

    suites = ET.Element("testsuites", name="pytest tests")
    suite = ET.SubElement(
        suites, "testsuite", name="gb10check", errors="1", failures="0", skipped="0", tests="1", time="0.000"
    )
    case = ET.SubElement(suite, "testcase", classname="gb10check", name="session", time="0.000")
    props = ET.SubElement(case, "properties")
    ET.SubElement(props, "property", name="hints", value=hint_id)
    message = neutralise(message)
    ET.SubElement(case, "error", message=redact_known(message)).text = redact_known(message)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write(path, '<?xml version="1.0" encoding="utf-8"?>' + ET.tostring(suites, encoding="unicode"))


RUN_LOCK = ".gb10check-run.lock"


def claim(directory: Path) -> IO[str]:
    """This run's hold on its reports folder, kept open until the process ends (the kernel lets go of it
    then, killed or not). Two runs writing one folder would replace each other's reports, the last to
    finish winning without a word: the second is refused, naming the first."""
    path = directory / RUN_LOCK
    try:  # never through a symlink planted there (as no report is written through one: atomic.py)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise ReportsUnwritable(
            f"cannot hold {path} ({exc.strerror or type(exc).__name__}): a symlink or another file there? remove it"
        ) from None
    handle = os.fdopen(fd, "r+", encoding="utf-8")  # held for the run's life
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        other = neutralise(handle.read(300).strip()) or "another process"
        handle.close()
        raise ReportsUnwritable(
            f"another gb10check run writes its reports into {directory} ({other}): the last to finish would "
            f"replace the other's; wait for it, or give this run its own --reports-dir"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}: {' '.join(sys.argv[1:])[:200]}\n")
    handle.flush()
    return handle


def check_writable(*directories: Path) -> None:
    """Fail before the run, not after it: every folder a report goes to exists or can be made, and takes a file."""
    for directory in dict.fromkeys(directories):
        try:
            directory.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=directory, prefix=".gb10check-probe-"):
                pass
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise ReportsUnwritable(
                f"cannot write reports to {directory}: {reason}"
                + (f" ({exc.filename})" if exc.filename and str(exc.filename) != str(directory) else "")
                + "; give a writable folder with --reports-dir=DIR (and --junitxml=PATH)"
            ) from exc


def _value(value: float | str) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value).replace("|", "\\|").replace("\n", " ")


def _each(values: Iterable[str]) -> str:
    # one line per comparison inside a markdown table cell
    return "<br>".join(values)


def first_line(text: str, cap: int = 200) -> str:
    """A message's first line, at most `cap` characters."""
    return text.strip().splitlines()[0][:cap] if text.strip() else ""


def whole_words(line: str, cap: int, rest: str) -> str:
    """At most about `cap` characters of a line, never cut inside a clause where one ends before the cap
    (`; `: a cable move, a finding) nor inside a word (a netdev, a path, a command): what follows is
    said to be `rest` (where the whole line is)."""
    if len(line) <= cap:
        return line
    head = line[:cap]
    end = head.rfind("; ")
    if end < cap // 2:  # no clause ends in the second half: the last whole word
        end = head.rstrip().rfind(" ")
    if end <= 0:
        end = cap
    return f"{line[:end].rstrip(' ;,')} … ({rest})"


def _cells(cells: Iterable[str]) -> str:
    """One row of a markdown table: a `|` inside a cell escaped, a line break a space."""
    return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"
