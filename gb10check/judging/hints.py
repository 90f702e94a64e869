"""The troubleshooting catalogue (hints.toml) and the matcher that attaches hints to failures."""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from gb10check.errors import HintCatalogueError
from gb10check.judging import known_issues
from gb10check.judging.hint_context import FIELDS, Context, fields_in, render_command
from gb10check.reading.parsers import bounded_chunks
from gb10check.textfile import read_text

__all__ = ["HAND_PLACEHOLDER", "Catalogue", "Hint", "hint_ids_in_source", "parse_catalogue"]

_ID_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
HAND_PLACEHOLDER = re.compile(r"<[A-Za-z][A-Za-z _-]*>")  # <user>, <path>: left for the reader to fill
# a command that names where it runs (`# on rank 0`, `# where gb10check runs`): never labelled with a node
_SAYS_WHERE = re.compile(r"#\s*(on|where)\b")
_FIELDS = {"title": str, "cause": str, "fix": str, "commands": list, "symptoms": list}
# optional: {tool = why} for a command the simulated cluster cannot run (selftests/e2e/test_hint_commands.py
# runs every other command a hint prints on the sim node it names)
_OPTIONAL = {"not_in_sim": dict}


@dataclass(frozen=True)
class Hint:
    id: str
    title: str
    cause: str
    fix: str
    commands: tuple[str, ...]
    symptoms: tuple[re.Pattern[str], ...]
    source: str
    not_in_sim: Mapping[str, str] = field(default_factory=dict)  # tool -> why the simulated cluster cannot run it

    def one_line(self) -> str:
        return f"[{self.id}] {self.title}. Fix: {self.fix}"

    def render(self, contexts: Sequence[Context] = ()) -> str:
        """Title, cause, fix and the commands filled for each failure's context: each line once, with
        the nodes of the failures it came from (`# on n1, n2`) unless the command says itself where it
        runs (`# on rank 0`, `# where gb10check runs`). A failure gives only the lines of its own items
        (gb10check/judging/hint_context.py)."""
        lines = [f"[{self.id}] {self.title}", f"  cause: {self.cause}", f"  fix:   {self.fix}"]
        for template in self.commands:
            by_line: dict[str, list[str]] = {}
            for ctx in contexts or [{}]:
                node = str(ctx.get("node", ""))
                for command in render_command(template, ctx):
                    nodes = by_line.setdefault(command, [])
                    if node and node not in nodes:
                        nodes.append(node)
            placed = _SAYS_WHERE.search(template) is not None
            lines += [
                f"    $ {command}" + (f"   # on {', '.join(nodes)}" if nodes and not placed else "")
                for command, nodes in by_line.items()
            ]
        return "\n".join(lines)


def _entry(hint_id: str, raw: object, source: str) -> Hint:
    where = f"{source}: [{hint_id}]"
    if not _ID_RE.match(hint_id):
        raise HintCatalogueError(f"{where}: id must be lowercase words joined by '-'")
    if not isinstance(raw, dict):
        raise HintCatalogueError(f"{where}: expected a table with {', '.join(_FIELDS)}")
    unknown = sorted(set(raw) - set(_FIELDS) - set(_OPTIONAL))
    if unknown:
        allowed = ", ".join([*_FIELDS, *_OPTIONAL])
        raise HintCatalogueError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {allowed}")
    not_in_sim = raw.get("not_in_sim", {})
    if not isinstance(not_in_sim, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in not_in_sim.items()
    ):
        raise HintCatalogueError(f"{where}: 'not_in_sim' must be a table of tool = \"why the sim cannot run it\"")
    for key, kind in _FIELDS.items():
        if key not in raw:
            raise HintCatalogueError(f"{where}: missing key '{key}' ({kind.__name__})")
        if not isinstance(raw[key], kind) or (kind is str and not raw[key].strip()):
            raise HintCatalogueError(f"{where}: '{key}' must be a non-empty {kind.__name__}")
    for key in ("commands", "symptoms"):
        if not all(isinstance(item, str) and item for item in raw[key]):
            raise HintCatalogueError(f"{where}: every item of '{key}' must be a non-empty string")
    for command in raw["commands"]:
        unknown = sorted(set(fields_in(command)) - set(FIELDS))
        if unknown:
            raise HintCatalogueError(
                f"{where}: command {command!r} names unknown field(s) {unknown}; known: {', '.join(sorted(FIELDS))}"
            )
        if HAND_PLACEHOLDER.search(command):
            raise HintCatalogueError(
                f"{where}: command {command!r} has a placeholder to fill by hand; name a field in braces instead "
                f"({', '.join(sorted(FIELDS))})"
            )
    patterns = []
    for pattern in raw["symptoms"]:
        try:
            patterns.append(re.compile(pattern, re.IGNORECASE | re.MULTILINE))
        except re.error as exc:
            raise HintCatalogueError(f"{where}: symptom {pattern!r} is not a valid regex: {exc}") from exc
    return Hint(
        id=hint_id,
        title=raw["title"].strip(),
        cause=raw["cause"].strip(),
        fix=raw["fix"].strip(),
        commands=tuple(raw["commands"]),
        symptoms=tuple(patterns),
        source=source,
        not_in_sim=dict(not_in_sim),
    )


def parse_catalogue(text: str, source: str) -> dict[str, Hint]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise HintCatalogueError(f"{source}: not valid TOML: {exc}") from exc
    return {hint_id: _entry(hint_id, raw, source) for hint_id, raw in data.items()}


class Catalogue:
    def __init__(self, hints: dict[str, Hint]) -> None:
        self._hints = dict(hints)

    @classmethod
    def load(cls, extra_files: Iterable[Path] = (), known_issue_files: Iterable[Path] = ()) -> Catalogue:
        """The builtin hints and the site's (--hints), then one hint per known issue (gb10check/judging/known_issues.py:
        the builtin catalogue and the site's --known-issues files), its id the entry's."""
        builtin = resources.files("gb10check.judging").joinpath("hints.toml").read_text(encoding="utf-8")
        hints = parse_catalogue(builtin, "gb10check/judging/hints.toml")
        for path in extra_files:
            try:
                text = read_text(Path(path), "the hints file")
            except OSError as exc:
                raise HintCatalogueError(f"--hints {path}: cannot read: {exc.strerror}") from exc
            hints.update(parse_catalogue(text, str(path)))
        for issue in known_issues.load(known_issue_files):
            if issue.id in hints and hints[issue.id].source != issue.file:
                raise HintCatalogueError(
                    f"{issue.file}: known_issue {issue.id!r} has the id of the hint in {hints[issue.id].source}: "
                    "give it another"
                )
            sources = "; ".join(s.shown for s in issue.sources)
            raw = {
                "title": issue.title,
                "cause": f"{issue.what} (known issue, from {sources})",
                "fix": issue.fix,
                "commands": list(issue.commands),
                "symptoms": [],
            }
            hints[issue.id] = _entry(issue.id, raw, issue.file)
        return cls(hints)

    def __contains__(self, hint_id: object) -> bool:
        return hint_id in self._hints

    def __getitem__(self, hint_id: str) -> Hint:
        return self._hints[hint_id]

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(self._hints)

    def match(self, text: str) -> list[Hint]:
        """Hints whose symptom patterns occur in text, in catalogue order. Each line is read as its first
        MAX_LINE characters (gb10check/reading/parsers: a symptom's `.*` costs up to the square of a line's length),
        in stretches of lines: no search holds the GIL long, whatever a node printed."""
        chunks = bounded_chunks(text)
        return [h for h in self._hints.values() if any(p.search(c) for p in h.symptoms for c in chunks)]

    def resolve(self, named: Iterable[str], text: str) -> list[Hint]:
        """Named hints first (in the order given), then symptom matches not already named."""
        out: list[Hint] = []
        for hint_id in named:
            if hint_id not in self._hints:
                raise HintCatalogueError(f"unknown hint id '{hint_id}' (not in the catalogue)")
            if self._hints[hint_id] not in out:
                out.append(self._hints[hint_id])
        out += [h for h in self.match(text) if h not in out]
        return out


# -- where hint ids are named in code --------------------------------------------------------
_NAMING_KEYWORDS = {"hints", "hint_ids", "hint"}


def _id_strings(node: ast.AST) -> list[tuple[str, int]]:
    return [
        (n.value, n.lineno)
        for n in ast.walk(node)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and _ID_RE.match(n.value)
    ]


def hint_ids_in_source(text: str) -> list[tuple[str, int]]:
    """Hint ids a module names, with their lines: `@pytest.mark.hints(...)`, `hints=` / `hint_ids=` /
    `hint=` arguments, and `hint` / `hint_ids` assignments (class attributes, a chosen hint)."""
    found: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.keyword) and node.arg in _NAMING_KEYWORDS:
            found += _id_strings(node.value)
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id in _NAMING_KEYWORDS for t in targets):
                found += _id_strings(node.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "hints":
            found += [item for arg in node.args for item in _id_strings(arg)]
    return found
