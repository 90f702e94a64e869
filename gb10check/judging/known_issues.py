"""The catalogue of known issues: versions and combinations the field has reported broken, as data.

Each entry of gb10check/judging/known_issues.toml (and of a site's own file, `--known-issues FILE`, same
format) says what it matches (conditions on a node's facts, every one must hold), what happens,
the fix, the public sources it comes from with their dates, and the date it was added:

    [[known_issue]]
    id = "kernel-6-17-0-1008-panics"     # lowercase words joined by '-'; also its hint's id
    title = "..."                        # one line
    outcome = "failure"                  # failure: it breaks; advisory: it costs speed; advice: a risk
    added = 2026-12-07
    what = "..."                         # what happens on a node that matches
    fix = "..."                          # what to do
    commands = ["..."]                   # optional: commands that show or fix it (hint fields allowed)
    match = { kernel = "==6.17.0-1008" } # fact = condition (FACTS below)
    [[known_issue.sources]]
    url = "https://..."                  # public: https only
    date = 2026-03-02                    # when the source said it
    said = "..."                         # what it says, in our words

A condition on a version fact is a comma-separated list of comparisons that must all hold
(`>=2.28.9,<2.30.4`, `==6.17.0-1008`); versions compare number by number (`6.17.0-1008-nvidia` is
6, 17, 0, 1008; a version shorter than the bound is padded with zeros). A condition on a word fact is
the word, or several joined by `|`. Pure: text in, entries out; `judge` takes a node's facts.
"""

from __future__ import annotations

import datetime as dt
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from gb10check.errors import HintCatalogueError, InputFileError
from gb10check.textfile import read_text

__all__ = [
    "BUILTIN",
    "FACTS",
    "OUTCOMES",
    "Condition",
    "Fact",
    "Judged",
    "KnownIssue",
    "Source",
    "judge",
    "load",
    "parse_known_issues",
    "version_key",
]

BUILTIN = "gb10check/judging/known_issues.toml"
OUTCOMES = ("failure", "advisory", "advice")


@dataclass(frozen=True)
class Fact:
    kind: str  # "version" or "word"
    about: str  # what it is and where the suite reads it
    words: tuple[str, ...] = ()  # a word fact's values


# The facts an entry may match on: the vocabulary of `match`, each read per node by
# gb10check/judging/known_issue_facts.py (its docstring says from where).
FACTS: dict[str, Fact] = {
    "driver": Fact("version", "the loaded NVIDIA kernel module (/proc/driver/nvidia/version)"),
    "kernel": Fact("version", "the kernel release (/proc/sys/kernel/osrelease, uname -r)"),
    "os": Fact("word", "the OS release's PRETTY_NAME (/etc/os-release)"),
    "dgx_os": Fact("version", "DGX OS's version (/etc/dgx-release: DGX_OTA_VERSION, else DGX_SWBUILD_VERSION)"),
    "cx_firmware": Fact("version", "the ConnectX firmware of an RDMA device (/sys/class/infiniband/*/fw_ver)"),
    "nccl": Fact("version", "the NCCL library vLLM loads in the container (its version string)"),
    "nccl_from": Fact(
        "word", "where that library comes from: torch's pip wheel or the system's", ("pip-wheel", "system")
    ),
    "libmlx5_dmabuf": Fact(
        "word", "whether the container's libmlx5 exports mlx5dv_reg_dmabuf_mr (rdma-core)", ("yes", "no")
    ),
    "image_driver": Fact(
        "word",
        "whether the image asks for a newer driver than the node's (its CUDA_DRIVER_VERSION ENV)",
        ("newer", "not-newer"),
    ),
    "cuda_graphs": Fact("word", "whether vLLM captures CUDA graphs (the launch plan's vllm serve)", ("yes", "no")),
}
_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_COMPARISON = re.compile(r"^(==|!=|>=|<=|>|<)\s*(\d[\w.+-]*)$")
_NUMBERS = re.compile(r"\d+")
_KEYS = {"id", "title", "outcome", "added", "what", "fix", "commands", "match", "sources"}
_SOURCE_KEYS = {"url", "date", "said"}


def version_key(version: str) -> tuple[int, ...]:
    """The numbers of a version, in order: `6.17.0-1008-nvidia` -> (6, 17, 0, 1008); `2.28.9+cuda13.0`
    -> (2, 28, 9): what follows a `+` (a build's label) is not part of the version."""
    return tuple(int(n) for n in _NUMBERS.findall(version.split("+", 1)[0]))


def _compare(found: tuple[int, ...], op: str, bound: tuple[int, ...]) -> bool:
    width = max(len(found), len(bound))
    a, b = found + (0,) * (width - len(found)), bound + (0,) * (width - len(bound))
    return {"==": a == b, "!=": a != b, ">=": a >= b, "<=": a <= b, ">": a > b, "<": a < b}[op]


@dataclass(frozen=True)
class Condition:
    fact: str
    text: str  # as written: `>=2.28.9,<2.30.4`, `pip-wheel`, `yes|no`

    def holds(self, value: str) -> bool:
        if FACTS[self.fact].kind == "word":
            return value in self.text.split("|")
        found = version_key(value)
        for clause in self.text.split(","):
            m = _COMPARISON.match(clause.strip())
            assert m is not None  # checked when read
            if not _compare(found, m[1], version_key(m[2])):
                return False
        return True


@dataclass(frozen=True)
class Source:
    url: str
    date: dt.date
    said: str

    @property
    def shown(self) -> str:
        return f"{self.url} ({self.date.isoformat()})"


@dataclass(frozen=True)
class KnownIssue:
    id: str
    title: str
    outcome: str
    added: dt.date
    what: str
    fix: str
    commands: tuple[str, ...]
    match: tuple[Condition, ...]
    sources: tuple[Source, ...]
    file: str  # the catalogue it came from

    @property
    def conditions(self) -> str:
        return ", ".join(f"{c.fact} {c.text}" if c.text[0] in "<>=!" else f"{c.fact} = {c.text}" for c in self.match)


def _text(raw: Mapping[str, object], key: str, where: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise HintCatalogueError(f"{where}: '{key}' must be a non-empty string")
    return value.strip()


def _date(raw: Mapping[str, object], key: str, where: str) -> dt.date:
    value = raw.get(key)
    if not isinstance(value, dt.date) or isinstance(value, dt.datetime):
        raise HintCatalogueError(f"{where}: '{key}' must be a date (YYYY-MM-DD, unquoted), not {value!r}")
    return value


def _condition(fact: str, text: object, where: str) -> Condition:
    if fact not in FACTS:
        raise HintCatalogueError(f"{where}: match names an unknown fact '{fact}'; known: {', '.join(FACTS)}")
    if not isinstance(text, str) or not text.strip():
        raise HintCatalogueError(f"{where}: match.{fact} must be a non-empty string")
    text = text.strip()
    spec = FACTS[fact]
    if spec.kind == "version":
        bad = [c for c in text.split(",") if not _COMPARISON.match(c.strip())]
        if bad:
            raise HintCatalogueError(
                f"{where}: match.{fact} = {text!r}: {bad[0].strip()!r} is not a comparison (==, !=, >=, <=, >, < "
                "and a version: '>=2.28.9,<2.30.4')"
            )
    elif spec.words:
        bad = [w for w in text.split("|") if w not in spec.words]
        if bad:
            raise HintCatalogueError(
                f"{where}: match.{fact} = {text!r}: {bad[0]!r} is not one of {', '.join(spec.words)}"
            )
    return Condition(fact, text)


def _source(raw: object, where: str) -> Source:
    if not isinstance(raw, dict):
        raise HintCatalogueError(f"{where}: each source is a table with url, date and said")
    unknown = sorted(set(raw) - _SOURCE_KEYS)
    if unknown:
        raise HintCatalogueError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: url, date, said")
    url = _text(raw, "url", where)
    if not url.startswith("https://"):
        raise HintCatalogueError(f"{where}: url {url!r} must be a public https:// address")
    return Source(url, _date(raw, "date", where), _text(raw, "said", where))


def _entry(raw: object, index: int, file: str) -> KnownIssue:
    where = f"{file}: known_issue {index + 1}"
    if not isinstance(raw, dict):
        raise HintCatalogueError(f"{where}: expected a table ([[known_issue]])")
    issue_id = raw.get("id")
    if not isinstance(issue_id, str) or not _ID.match(issue_id):
        raise HintCatalogueError(f"{where}: 'id' must be lowercase words joined by '-', not {issue_id!r}")
    where = f"{file}: known_issue {issue_id!r}"
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise HintCatalogueError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_KEYS))}")
    outcome = _text(raw, "outcome", where)
    if outcome not in OUTCOMES:
        raise HintCatalogueError(f"{where}: outcome {outcome!r} is one of {', '.join(OUTCOMES)}")
    match = raw.get("match")
    if not isinstance(match, dict) or not match:
        raise HintCatalogueError(f"{where}: 'match' must be a table naming at least one fact")
    sources = raw.get("sources")
    if not isinstance(sources, list) or not sources:
        raise HintCatalogueError(f"{where}: at least one public source ([[known_issue.sources]]) is needed")
    commands = raw.get("commands", [])
    if not isinstance(commands, list) or not all(isinstance(c, str) and c.strip() for c in commands):
        raise HintCatalogueError(f"{where}: 'commands' must be a list of non-empty strings")
    return KnownIssue(
        id=issue_id,
        title=_text(raw, "title", where),
        outcome=outcome,
        added=_date(raw, "added", where),
        what=_text(raw, "what", where),
        fix=_text(raw, "fix", where),
        commands=tuple(commands),
        match=tuple(_condition(fact, text, where) for fact, text in match.items()),
        sources=tuple(_source(s, f"{where}, source {i + 1}") for i, s in enumerate(sources)),
        file=file,
    )


def parse_known_issues(text: str, file: str) -> list[KnownIssue]:
    """The entries of one catalogue file; HintCatalogueError naming the file and the entry otherwise."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise HintCatalogueError(f"{file}: not valid TOML: {exc}") from exc
    unknown = sorted(set(data) - {"known_issue"})
    if unknown:
        raise HintCatalogueError(f"{file}: unknown table(s) {', '.join(unknown)}; entries are [[known_issue]]")
    raw = data.get("known_issue", [])
    if not isinstance(raw, list):
        raise HintCatalogueError(f"{file}: known_issue must be an array of tables ([[known_issue]])")
    entries = [_entry(r, i, file) for i, r in enumerate(raw)]
    seen: set[str] = set()
    for e in entries:
        if e.id in seen:
            raise HintCatalogueError(f"{file}: known_issue {e.id!r} is there twice")
        seen.add(e.id)
    return entries


def load(extra_files: Iterable[Path] = ()) -> list[KnownIssue]:
    """The builtin catalogue, then each site file's entries (a site entry replaces a builtin of its id)."""
    text = resources.files("gb10check.judging").joinpath("known_issues.toml").read_text(encoding="utf-8")
    entries = {e.id: e for e in parse_known_issues(text, BUILTIN)}
    for path in extra_files:
        try:
            site = read_text(Path(path), "the known-issues file")
        except OSError as exc:
            raise HintCatalogueError(f"--known-issues {path}: cannot read: {exc.strerror}") from exc
        except InputFileError as exc:
            raise HintCatalogueError(f"--known-issues: {exc}") from exc
        entries.update({e.id: e for e in parse_known_issues(site, str(path))})
    return list(entries.values())


@dataclass(frozen=True)
class Judged:
    """A node's facts against the catalogue: the entries that match, and those that could not be judged
    (a fact they need was not read: with why), never taken as not matching."""

    matched: tuple[tuple[KnownIssue, str], ...]  # the entry and the facts that matched it, in words
    unjudged: tuple[tuple[KnownIssue, str], ...]  # the entry and the fact that is missing, with why


def judge(
    entries: Iterable[KnownIssue], facts: Mapping[str, str | list[str] | None], missing: Mapping[str, str]
) -> Judged:
    """Which entries this node's facts match. A fact may have several values (one firmware per RDMA
    device): a condition holds when one of them meets it; a fact that is None does not exist on the node
    (no DGX OS): no condition on it holds. A condition on a fact that was not read makes the entry
    unjudged, unless another of its conditions already fails on what was read."""
    matched, unjudged = [], []
    for entry in entries:
        found, lacking, holds = [], "", True
        for c in entry.match:
            if c.fact not in facts:
                lacking = lacking or f"{c.fact}: {missing.get(c.fact, 'not read')}"
                continue
            values = facts[c.fact]
            if values is None:
                holds = False
                break
            meeting = [v for v in ([values] if isinstance(values, str) else values) if c.holds(v)]
            if not meeting:
                holds = False
                break
            found.append(f"{c.fact} {meeting[0]}")
        if not holds:
            continue
        if lacking:
            unjudged.append((entry, lacking))
        else:
            matched.append((entry, ", ".join(found)))
    return Judged(tuple(matched), tuple(unjudged))
