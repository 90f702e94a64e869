"""`gb10check explain [FILE|-]`: a vLLM log as its operator has it (a file, `docker logs` piped in, text
pasted from an issue thread) read by the service stage's own reader (gb10check/reading/parsers/vllm_log.py) and
judged by its own rules (gb10check/judging/diagnosis.py): the troubleshooting rows it shows, each with the line
that shows it and what to do; how far the start got; NCCL's network and channels; the rank that stopped
first; the known issues (gb10check/judging/known_issues.toml) whose every fact a log can show (NCCL's version,
the CUDA graph mode, NCCL's failed dma-buf probe). Offline: no inventory, no node. Never refuses a log
(no timestamps, Compose, Ray or vLLM prefixes, colours, a terminal's wrapping): a text that is no vLLM
log reads as one that shows nothing.

Exit status: 0 no row matched, 1 a row matched, 4 the file could not be read or an option was wrong.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gb10check.errors import GB10Error
from gb10check.judging.diagnosis import findings_in
from gb10check.judging.hint_context import render_command
from gb10check.judging.hints import Catalogue
from gb10check.judging.known_issues import KnownIssue, judge
from gb10check.judging.known_issues import load as load_known_issues
from gb10check.reading.parsers.vllm_log import (
    LogLine,
    graph_mode,
    milestones,
    nccl_channels,
    nccl_version,
    nccl_version_at,
    no_dmabuf_at,
    parse_docker_log,
    stops,
    tuning,
    uses_graphs,
)
from gb10check.safe_text.neutralise import neutralise, neutralise_tree
from gb10check.safe_text.redact import redact

__all__ = ["MAX_BYTES", "Explanation", "Row", "explain", "known_issues_in", "main", "render"]

MAX_BYTES = 64 * 1024 * 1024  # a log bigger than this is read from its last MAX_BYTES (as --tail does)


@dataclass(frozen=True)
class Row:
    hint: str
    title: str
    line: int  # where it shows in the text read, 1-based (0: the log as a whole)
    text: str  # that line, secrets masked
    process: str | None  # the process that logged it ("EngineCore_DP0 pid=93"), where the line says
    fix: str
    commands: list[str]


@dataclass(frozen=True)
class Explanation:
    source: str
    lines: int  # log lines read (a wrapped line counts once)
    rows: list[Row]
    reached: list[str]  # the start's milestones, in the order reached
    graph_mode: str | None
    nccl_version: str | None
    network: str | None  # "IB over 4 channels (NET/IB)", "Socket", where NCCL logged it
    first_stop: str | None  # the first collective or RPC timeout: which process, where
    notes: list[str] = field(default_factory=list)


def _row(catalogue: Catalogue, hint: str, line: LogLine | None, text: str) -> Row:
    h = catalogue[hint]
    commands = [c for template in h.commands for c in render_command(template, {})]
    return Row(hint, h.title, line.number if line else 0, text, line.process if line else None, h.fix, commands)


def known_issues_in(lines: list[LogLine], entries: list[KnownIssue]) -> list[tuple[KnownIssue, int]]:
    """The known issues a log alone shows: those whose every fact it names (NCCL's version, the graph mode in
    force, NCCL's failed dma-buf probe), each with the line of its first fact. An entry needing a fact no log
    shows (where NCCL's library comes from, the kernel) is left to preflight, which reads the node."""
    facts: dict[str, str | list[str] | None] = {}
    at: dict[str, int] = {}
    version = nccl_version_at(lines)
    if version is not None:
        at["nccl"], facts["nccl"] = version
    mode = graph_mode(lines)
    if mode is not None:
        facts["cuda_graphs"] = "yes" if uses_graphs(mode) else "no"
    dmabuf = no_dmabuf_at(lines)
    if dmabuf is not None:
        at["libmlx5_dmabuf"], facts["libmlx5_dmabuf"] = dmabuf, "no"
    matched = judge(entries, facts, {}).matched
    return [(e, min((at[c.fact] for c in e.match if c.fact in at), default=0)) for e, _ in matched]


def explain(text: str, source: str, catalogue: Catalogue, known_issues: list[KnownIssue] | None = None) -> Explanation:
    lines = parse_docker_log(text)
    rows = []
    for f in findings_in(source, lines, catalogue):
        line = lines[f.index] if f.index is not None else None
        rows.append(_row(catalogue, f.hint, line, f.line))
    advice = []
    for entry, index in known_issues_in(lines, load_known_issues() if known_issues is None else known_issues):
        if entry.outcome == "advice":  # a risk the log cannot confirm: a note, not a row
            advice.append(f"advice, known issue {entry.id}: {entry.title} ({entry.fix})")
        elif entry.id in catalogue and all(r.hint != entry.id for r in rows):
            line = lines[index] if lines else None
            rows.append(_row(catalogue, entry.id, line, redact(line.text) if line else ""))
    reached = milestones(lines)
    tuned = tuning(lines)
    notes = advice
    if tuned is not None and all(r.hint != "startup-retuning" for r in rows):
        rows.append(_row(catalogue, "startup-retuning", lines[tuned.index], redact(tuned.line)))
        notes.append("the log ends while the start compiles and tunes kernels: it is progressing, not hung")
    channels = nccl_channels(lines)
    network = None
    if channels is not None:
        via = ", ".join(f"{n} channel(s) via {v}" for v, n in sorted(channels.via.items()))
        network = f"{channels.network or 'network not named'}" + (f" ({via})" if via else "")
    timeouts = sorted(stops(lines), key=lambda s: (s.at is None, s.at, s.index))
    first_stop = None
    if timeouts:
        s = timeouts[0]
        who = lines[s.index].process or "the log's first"
        first_stop = f"{s.shown()} by {who}, line {lines[s.index].number}"
    return Explanation(
        source,
        len(lines),
        rows,
        [r.milestone for r in reached],
        graph_mode(lines),
        nccl_version(lines),
        network,
        first_stop,
        notes,
    )


def render(e: Explanation) -> str:
    out = [f"gb10check explain: {e.source}: {e.lines} log lines read"]
    if e.reached:
        out.append(f"  the start reached: {', '.join(e.reached)}")
    facts = [
        f"NCCL {e.nccl_version}" if e.nccl_version else "",
        f"NCCL's network: {e.network}" if e.network else "",
        f"CUDA graphs: {e.graph_mode}" if e.graph_mode else "",
        f"stopped first: {e.first_stop}" if e.first_stop else "",
    ]
    out += [f"  {f}" for f in facts if f]
    out += [f"  note: {n}" for n in e.notes]
    if not e.rows:
        out.append("no row of the troubleshooting table matches this log")
    for r in e.rows:
        where = f"line {r.line}" + (f" ({r.process})" if r.process else "") if r.line else "the log"
        out += ["", f"[{r.hint}] {r.title}", f"  {where}: {r.text}", f"  fix: {r.fix}"]
        out += [f"    $ {c}" for c in r.commands]
    return neutralise("\n".join(out)) + "\n"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="gb10check explain",
        description="Read a vLLM log (a file, or - for stdin: docker logs piped in, pasted text) and print "
        "the troubleshooting rows it matches, each with its line and what to do. Offline.",
        epilog="exit status: 0 no row matched, 1 a row matched, 4 the file could not be read or a bad option",
    )
    p.add_argument("file", nargs="?", default="-", help="the log file; - or nothing: standard input")
    p.add_argument("--json", action="store_true", help="the explanation as JSON, for tools")
    p.add_argument("--hints", action="append", default=[], metavar="FILE", help="your site's own hints, added")
    p.add_argument(
        "--known-issues", action="append", default=[], metavar="FILE", help="your site's own known issues, added"
    )
    return p


def _read(name: str) -> str:
    if name == "-":
        data = sys.stdin.buffer.read()
    else:
        path = Path(name).expanduser()
        with path.open("rb") as f:
            size = path.stat().st_size
            if size > MAX_BYTES:
                f.seek(size - MAX_BYTES)
            data = f.read(MAX_BYTES)
    return data[-MAX_BYTES:].decode("utf-8", errors="replace")


def main(args: list[str]) -> int:
    parser = _parser()
    try:
        opts = parser.parse_args(args)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 4
    try:
        text = _read(opts.file)
    except OSError as exc:
        print(f"gb10check explain: cannot read {opts.file}: {exc.strerror or exc}", file=sys.stderr)
        return 4
    try:
        known = [Path(f).expanduser() for f in opts.known_issues]
        catalogue = Catalogue.load([Path(h) for h in opts.hints], known)
        entries = load_known_issues(known)
    except GB10Error as exc:
        print(f"gb10check explain: {exc}", file=sys.stderr)
        return 4
    e = explain(text, "stdin" if opts.file == "-" else opts.file, catalogue, entries)
    if opts.json:
        print(json.dumps(neutralise_tree(asdict(e)), indent=2))
    else:
        sys.stdout.write(render(e))
    return 1 if e.rows else 0
