"""The runs before this one (`--history=DIR`): regressions, recoveries and trends. Pure but for
reading and writing the folder.

Each run's summary.json is kept in DIR as `run-<UTC time>-<pid>.json` (retention by count, oldest
removed first; only files of that name are ever removed). Against them:
- a check that passed in the previous run and fails now is a regression, one that failed and
  passes now a recovery (a check the previous run did not have is neither);
- a trended figure worse than the median of its last runs by more than their spread allows (trends)
  is a trend failure (`figure-regressed`); fewer earlier runs than the minimum is too little history.
A file in DIR that is not a summary of this schema (corrupt, foreign, another version, hostile)
is skipped with one warning: never a crash, never deleted. Each file is read within a size bound
(MAX_RUN_BYTES), as strict JSON (no NaN or infinities, a bounded depth, numbers a float holds, no
lone surrogates), and the fields the history reads are validated with their types (pydantic,
strict: the verdicts and the time format of summary.schema.json), so nothing past `load` meets a
list where a mapping belongs.
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import pydantic_core
from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints, ValidationError

from gb10check import atomic
from gb10check.errors import InputFileError
from gb10check.reporting.schema import SCHEMA, SCHEMA_VERSION
from gb10check.textfile import read_text

__all__ = [
    "DEFAULT_KEEP",
    "DEFAULT_MIN_RUNS",
    "DEFAULT_SPREADS",
    "DEFAULT_WINDOW",
    "KINDS",
    "MAD_TO_SIGMA",
    "MAX_RUN_BYTES",
    "MOVED_FIGURES",
    "READABLE",
    "READABLE_VERSIONS",
    "RUN_FILE",
    "Change",
    "History",
    "Kind",
    "Move",
    "Rules",
    "Run",
    "Trend",
    "changes",
    "direction",
    "figure_key",
    "figure_of",
    "figures_of",
    "keep",
    "kind_of",
    "load",
    "moved_check",
    "moves",
    "trend_check",
    "trends",
]

# the schemas whose runs the history reads: what it reads of a run (test, check, verdict, figures,
# started) is the same in both (2 renamed a check's `link` to `rail` and added `nodes`)
READABLE_VERSIONS = (1, 2, SCHEMA_VERSION)  # what the history reads is the same in each
READABLE = ", ".join(map(str, READABLE_VERSIONS[:-1])) + f" or {SCHEMA_VERSION}"
RUN_FILE = re.compile(r"^run-\d{8}T\d{6}Z-\d+\.json$")
DEFAULT_KEEP = 60
DEFAULT_WINDOW = 7  # the median of the last this-many runs
DEFAULT_MIN_RUNS = 3  # fewer earlier runs with the figure: too little history to judge a trend
DEFAULT_SPREADS = 3.0  # how many spreads of its history a figure may be worse than its median
MAD_TO_SIGMA = 1.4826  # the median absolute deviation of normal noise times this is its standard deviation


@dataclass(frozen=True)
class Kind:
    """A kind of trended figure: its names (a name may end in _<link or node>), which way is better, and
    how much worse than its median (a fraction of it) a figure may be, at least and at most."""

    name: str
    figures: tuple[str, ...]
    sign: int  # +1: higher is better, -1: lower is better
    floor: float
    ceiling: float


# The floors: healthy runs of the simulated cluster on a busy machine vary by 30-40% and more (decode
# 225-410 tokens/s, up to 33% below its median; TPOT up to 58% and TTFT up to 36% above theirs:
# selftests/data/history); a figure whose runs vary that much must not fail on a quiet window. A time
# is the inverse of a rate: 40% fewer tokens/s is 67% more TPOT. The ceilings: a link at half speed
# (50%), decode at a third (67% fewer tokens/s, 200% more TPOT) fail whatever the spread. A real GB10
# varies far less (decode 22.6 vs 23.3 tokens/s, ib_write_bw within a few %): a site may tighten the
# floors ([history] floor); the checks' own minimums (min_gbps, min_decode_tokens_per_s) hold anyway.
KINDS = (
    # ib_write_bw per rail, NCCL across all (nccl-tests; the collective in the serving image, both operations)
    Kind(
        "bandwidth",
        ("bandwidth_gbps", "nccl_busbw_gbs", "collective_all_gather_busbw_gbs", "collective_all_reduce_busbw_gbs"),
        1,
        0.35,
        0.45,
    ),
    Kind("tokens_per_s", ("decode_tokens_per_s",), 1, 0.4, 0.6),
    Kind("memory", ("mem_available_gib",), 1, 0.35, 0.6),
    Kind("ttft", ("ttft_s",), -1, 0.75, 2.0),
    Kind("tpot", ("tpot_s",), -1, 0.7, 1.5),
)


def kind_of(figure: str) -> Kind | None:
    """The kind a figure is of, None: not trended."""
    return next((k for k in KINDS if any(figure == n or figure.startswith(n + "_") for n in k.figures)), None)


def direction(figure: str) -> int | None:
    """+1: higher is better, -1: lower is better, None: not trended."""
    kind = kind_of(figure)
    return kind.sign if kind else None


@dataclass(frozen=True)
class Rules:
    """How figures are judged against their history ([history] of the inventory)."""

    window: int = DEFAULT_WINDOW
    min_runs: int = DEFAULT_MIN_RUNS
    spreads: float = DEFAULT_SPREADS
    floor: dict[str, float] = field(default_factory=lambda: {k.name: k.floor for k in KINDS})  # by kind
    ceiling: dict[str, float] = field(default_factory=lambda: {k.name: k.ceiling for k in KINDS})


def figure_key(check: str, figure: str) -> str:
    """How a figure is known across runs: `<check>::<figure>`."""
    return f"{check}::{figure}"


def trend_check(key: str) -> str:
    """The name of a figure's trend check (`test_figure_trend[<check>-<figure>]`: one bracket pair, so the id
    stays a -k name)."""
    check, figure = key.rsplit("::", 1)
    return f"test_figure_trend[{check.replace('[', '-').rstrip(']')}-{figure}]"


def figure_of(key: str) -> str:
    return key.rsplit("::", 1)[-1]


def figures_of(checks: Iterable[dict[str, Any]]) -> dict[str, float]:
    """Every figure of a summary's checks, by its key."""
    return {
        figure_key(str(row["check"]), name): float(value)
        for row in checks
        for name, value in (row.get("figures") or {}).items()
    }


@dataclass(frozen=True)
class Run:
    path: Path
    started: str
    verdicts: dict[str, str]  # test id -> verdict
    figures: dict[str, float]  # "<check>::<figure>" -> value


@dataclass
class History:
    runs: list[Run] = field(default_factory=list)  # oldest first
    warnings: list[str] = field(default_factory=list)


# a kept run of 2 nodes and 144 checks is about 140 kB; of 8 nodes, about 1 MB
MAX_RUN_BYTES = 8 * 1024 * 1024
_VERDICTS = frozenset(SCHEMA["$defs"]["verdict"]["enum"])
_Started = Annotated[str, StringConstraints(pattern=SCHEMA["properties"]["started"]["pattern"])]
_Name = Annotated[str, StringConstraints(min_length=1)]


def _verdict(word: str) -> str:
    if word not in _VERDICTS:
        raise ValueError(f"not a verdict (one of {', '.join(sorted(_VERDICTS))})")
    return word


_Verdict = Annotated[str, AfterValidator(_verdict)]


class _Kept(BaseModel):
    """What the history reads of a kept run, with the types summary.schema.json gives them."""

    model_config = ConfigDict(strict=True, allow_inf_nan=False, extra="ignore", frozen=True)


class _KeptCheck(_Kept):
    test: _Name
    check: _Name
    verdict: _Verdict
    figures: dict[str, float]


class _KeptRun(_Kept):
    started: _Started
    checks: list[_KeptCheck]


_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}


def _briefly(value: Any) -> str:
    """A JSON value said in a few words whatever it is: a small whole number as itself, else its type."""
    if type(value) is int and abs(value) < 10**6:
        return str(value)
    return _JSON_TYPES.get(type(value), "a number")


def _first_error(exc: ValidationError) -> str:
    """The first thing wrong, where it is (its path in the file, each part clipped), never the value."""
    errors = exc.errors(include_url=False, include_input=False, include_context=False)
    first = errors[0]
    where = ".".join(str(part)[:40] for part in first["loc"])
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"


def _run_of(path: Path, text: str) -> Run:
    """A run file's text as a Run; ValueError (saying what and where) for anything else."""
    try:  # strict JSON: NaN, infinities, a depth past 200, numbers out of range and lone surrogates refused
        data = pydantic_core.from_json(text, allow_inf_nan=False, cache_strings=False)
    except ValueError as exc:
        raise ValueError(f"not JSON: {str(exc)[:160]}") from None
    if not isinstance(data, dict):
        raise ValueError(f"not a gb10check summary (the file holds {_briefly(data)}, not an object)")
    if "schema_version" not in data:
        raise ValueError(f"not a gb10check summary of schema {READABLE} (no schema_version)")
    found = data["schema_version"]
    if type(found) is not int or found not in READABLE_VERSIONS:
        raise ValueError(f"not a gb10check summary of schema {READABLE} (found {_briefly(found)})")
    try:
        kept = _KeptRun.model_validate(data)
    except ValidationError as exc:
        raise ValueError(_first_error(exc)) from None
    verdicts = {row.test: row.verdict for row in kept.checks}
    return Run(path, kept.started, verdicts, figures_of(row.model_dump() for row in kept.checks))


def load(directory: Path) -> History:
    """Every earlier run in DIR, oldest first; what cannot be read is one warning per file."""
    history = History()
    try:
        entries = sorted(directory.iterdir()) if directory.is_dir() else []
    except OSError as exc:
        history.warnings.append(f"{directory}: cannot list it ({exc.strerror or type(exc).__name__})")
        return history
    for path in entries:
        if path.name.startswith(".") or not path.is_file():
            continue
        if not RUN_FILE.match(path.name):
            history.warnings.append(f"{path}: not a run file of gb10check (left alone)")
            continue
        try:
            history.runs.append(_run_of(path, read_text(path, "a kept run", MAX_RUN_BYTES)))
        except InputFileError as exc:  # too big, not UTF-8, a NUL byte: the message names the file
            history.warnings.append(f"{path}: skipped, cannot read it as a run ({str(exc).removeprefix(f'{path}: ')})")
        except (OSError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            history.warnings.append(f"{path}: skipped, cannot read it as a run ({why})")
    return history


def keep(directory: Path, summary: dict[str, Any], retain: int = DEFAULT_KEEP) -> Path:
    """This run into DIR (atomically), then the oldest runs beyond `retain` removed: only files it reads
    as runs of its own; one it cannot read (foreign, corrupt, hostile) stays, with its warning each run."""
    directory.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = directory / f"run-{stamp}-{os.getpid()}.json"
    atomic.write(path, json.dumps(summary, indent=1, ensure_ascii=False) + "\n")
    runs = [run.path for run in load(directory).runs]
    for old in sorted(runs)[: max(0, len(runs) - retain)]:
        old.unlink()
    return path


@dataclass(frozen=True)
class Change:
    test: str
    was: str
    now: str


def changes(previous: Run | None, verdicts: dict[str, str]) -> tuple[list[Change], list[Change]]:
    """(regressions, recoveries) against the previous run: passed -> failed/error, and back."""
    if previous is None:
        return [], []
    bad = ("failed", "error")
    regressions, recoveries = [], []
    for test, now in verdicts.items():
        was = previous.verdicts.get(test)
        if was == "passed" and now in bad:
            regressions.append(Change(test, was, now))
        elif was in bad and now == "passed":
            recoveries.append(Change(test, was, now))
    return regressions, recoveries


@dataclass(frozen=True)
class Trend:
    key: str  # "<check>::<figure>"
    today: float
    median: float | None  # None: too little history
    runs: int  # earlier runs with this figure (within the window)
    worse_by: float  # the fraction today is worse than the median (<= 0: as good or better)
    regressed: bool
    kind: str = ""
    spread: float = 0.0  # how much the window's values move run to run, ± a fraction of the median (_spread)
    by_spread: float = 0.0  # how much worse than the median `spreads` spreads are (a fraction of the median)
    allowed: float = 0.0  # how much worse than the median it may be: by_spread, within floor and ceiling
    floor: float = 0.0
    ceiling: float = 0.0


def _spread(values: list[float], median: float) -> float:
    """How much the values move run to run, as one standard deviation of their ratio to the median: 1.4826 x
    the median absolute deviation of their logarithms (robust to an odd night; a rate and its inverse, decode
    tokens/s and TPOT, spread alike). Values at or below 0 have no logarithm: their deviation over the median."""
    if median > 0 and all(v > 0 for v in values):
        return MAD_TO_SIGMA * statistics.median(abs(math.log(v / median)) for v in values)
    return MAD_TO_SIGMA * statistics.median(abs(v - median) for v in values) / abs(median)


def trends(history: Iterable[Run], figures: dict[str, float], rules: Rules | None = None) -> list[Trend]:
    """Each trended figure of this run against the median and the spread of its last `window` earlier values.

    How much worse than the median a figure may be follows how much it moves from run to run: `spreads` times
    the spread of the window (_spread), never less than its kind's floor (the noise every healthy run of that
    kind has) nor more than its ceiling (a drop no spread excuses), fractions of the median."""
    rules = rules or Rules()
    earlier = list(history)
    out = []
    for key, today in sorted(figures.items()):
        kind = kind_of(figure_of(key))
        if kind is None:
            continue
        values = [run.figures[key] for run in earlier if key in run.figures][-rules.window :]
        if len(values) < rules.min_runs:
            out.append(Trend(key, today, None, len(values), 0.0, False, kind.name))
            continue
        median = statistics.median(values)
        floor, ceiling = rules.floor[kind.name], rules.ceiling[kind.name]
        if median == 0:  # nothing to be a fraction of (a figure at 0 cannot fall further)
            out.append(Trend(key, today, median, len(values), 0.0, False, kind.name, 0.0, 0.0, floor, floor, ceiling))
            continue
        spread = _spread(values, median)
        # k spreads from the median, in the direction that is worse: a factor of e^(k x spread) up or down
        reach = min(rules.spreads * spread, 50.0)
        by_spread = 1 - math.exp(-reach) if kind.sign > 0 else math.exp(reach) - 1
        allowed = min(ceiling, max(floor, by_spread))
        worse = (median - today) / abs(median) * kind.sign
        out.append(Trend(key, today, median, len(values), worse, worse > allowed, kind.name,
                         math.exp(spread) - 1, by_spread, allowed, floor, ceiling))  # fmt: skip
    return out


# -- figures that name a place, not an amount: a change since the previous kept run is named ------------------
MOVED_FIGURES = {"gid_index": "gid-index-moved"}  # the figure -> the hint of its move


@dataclass(frozen=True)
class Move:
    key: str  # "<check>::<figure>"
    today: float
    was: float | None  # None: the previous run did not record it
    since: str  # the previous run's start ("" without one)

    @property
    def moved(self) -> bool:
        return self.was is not None and self.was != self.today


def moved_check(key: str) -> str:
    """The name of a figure's move check (`test_figure_moved[<check>-<figure>]`, like trend_check)."""
    return trend_check(key).replace("test_figure_trend[", "test_figure_moved[", 1)


def moves(previous: Run | None, figures: dict[str, float]) -> list[Move]:
    """Each figure of MOVED_FIGURES in this run against its value in the previous kept run."""
    return [
        Move(key, today, previous.figures.get(key) if previous else None, previous.started if previous else "")
        for key, today in sorted(figures.items())
        if figure_of(key) in MOVED_FIGURES
    ]
