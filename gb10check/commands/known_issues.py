"""`gb10check known-issues`: the catalogue of known issues the preflight stage checks every node against
(gb10check/judging/known_issues.toml, and a site's own files): each entry's id, outcome, what it matches, what
happens, the fix and its sources. Offline: no inventory, no node."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gb10check.errors import GB10Error
from gb10check.judging.known_issues import FACTS, KnownIssue, load
from gb10check.safe_text.neutralise import neutralise

__all__ = ["as_json", "main", "render"]


def as_json(entries: list[KnownIssue]) -> list[dict[str, object]]:
    return [
        {
            "id": e.id,
            "title": e.title,
            "outcome": e.outcome,
            "match": {c.fact: c.text for c in e.match},
            "what": e.what,
            "fix": e.fix,
            "commands": list(e.commands),
            "sources": [{"url": s.url, "date": s.date.isoformat(), "said": s.said} for s in e.sources],
            "added": e.added.isoformat(),
            "file": e.file,
        }
        for e in entries
    ]


def render(entries: list[KnownIssue], verbose: bool) -> str:
    out = [f"gb10check known-issues: {len(entries)} entries (preflight's test_no_known_issue checks every node)"]
    for e in entries:
        out += [
            "",
            f"[{e.id}] {e.title}",
            f"  {e.outcome}, when {e.conditions} (added {e.added.isoformat()}, {e.file})",
        ]
        if verbose:
            out += [f"  what: {e.what}", f"  fix:  {e.fix}"]
            out += [f"    $ {c}" for c in e.commands]
        out += [f"  source: {s.shown}" + (f": {s.said}" if verbose else "") for s in e.sources]
    if verbose:
        out += ["", "facts an entry may match on (match = { FACT = CONDITION }):"]
        out += [f"  {name:15} {f.kind:8} {f.about}" for name, f in FACTS.items()]
    return neutralise("\n".join(out)) + "\n"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="gb10check known-issues",
        description="List the known issues preflight checks every node against: versions and combinations the "
        "field reported broken, each with its fix and public sources. Offline.",
        epilog="exit status: 0 listed, 4 a catalogue file could not be read or is malformed, or a bad option",
    )
    p.add_argument("--known-issues", action="append", default=[], metavar="FILE", help="your site's own entries, added")
    p.add_argument("-v", "--verbose", action="store_true", help="each entry's what, fix and commands; the facts")
    p.add_argument("--json", action="store_true", help="the entries as JSON, for tools")
    return p


def main(args: list[str]) -> int:
    try:
        opts = _parser().parse_args(args)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 4
    try:
        entries = load(Path(f).expanduser() for f in opts.known_issues)
    except GB10Error as exc:
        print(f"gb10check known-issues: {exc}", file=sys.stderr)
        return 4
    if opts.json:
        print(json.dumps(as_json(entries), indent=2))
    else:
        sys.stdout.write(render(entries, opts.verbose))
    return 0
