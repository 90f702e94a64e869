"""The runs before this one (`--history=DIR`): regressions, recoveries and trends. Pure but for
reading and writing the folder.

Each run's summary.json is kept in DIR as `run-<UTC time>-<pid>.json` (retention by count, oldest
removed first; only files of that name are ever removed). Against them:
- a check that passed in the previous run and fails now is a regression, one that failed and
  passes now a recovery (a check the previous run did not have is neither);
- a trended figure worse than the median of its last runs by more than the tolerance is a trend
  failure (`figure-regressed`); fewer earlier runs than the minimum is too little history.
A file in DIR that is not a summary of this schema (corrupt, foreign, another version) is
skipped with a warning: never a crash, never deleted.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gb10check.report import SCHEMA_VERSION

RUN_FILE = re.compile(r"^run-\d{8}T\d{6}Z-\d+\.json$")
DEFAULT_KEEP = 60
DEFAULT_WINDOW = 7  # the median of the last this-many runs
DEFAULT_MIN_RUNS = 3  # fewer earlier runs with the figure: too little history to judge a trend
DEFAULT_TOLERANCE = 0.10

# figures whose trend is judged, and which way is better (a name may end in _<link or node>)
HIGHER_IS_BETTER = ("bandwidth_gbps", "decode_tokens_per_s", "mem_available_gib")
LOWER_IS_BETTER = ("ttft_s", "tpot_s")


def direction(figure: str) -> int | None:
    """+1: higher is better, -1: lower is better, None: not trended."""
    for names, sign in ((HIGHER_IS_BETTER, 1), (LOWER_IS_BETTER, -1)):
        if any(figure == n or figure.startswith(n + "_") for n in names):
            return sign
    return None


def figure_key(check: str, figure: str) -> str:
    """How a figure is known across runs: `<check>::<figure>`."""
    return f"{check}::{figure}"


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


def _run_of(path: Path, data: Any) -> Run:
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
        found = data.get("schema_version") if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"not a gb10check summary of schema {SCHEMA_VERSION} (found {found!r})")
    checks = data.get("checks")
    if not isinstance(checks, list):
        raise ValueError("no 'checks' list")
    verdicts = {str(row["test"]): str(row["verdict"]) for row in checks}
    return Run(path, str(data.get("started", "")), verdicts, figures_of(checks))


def load(directory: Path) -> History:
    """Every earlier run in DIR, oldest first; what cannot be read is a warning."""
    history = History()
    if not directory.is_dir():
        return history
    for path in sorted(directory.iterdir()):
        if not path.is_file() or path.name.startswith("."):
            continue
        if not RUN_FILE.match(path.name):
            history.warnings.append(f"{path}: not a run file of gb10check (left alone)")
            continue
        try:
            history.runs.append(_run_of(path, json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, ValueError, KeyError, TypeError) as exc:
            history.warnings.append(f"{path}: skipped, cannot read it as a run ({exc})")
    return history


def keep(directory: Path, summary: dict[str, Any], retain: int = DEFAULT_KEEP) -> Path:
    """This run into DIR (atomically), then the oldest run files beyond `retain` removed."""
    directory.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = directory / f"run-{stamp}-{os.getpid()}.json"
    tmp = directory / f".{path.name}.tmp"
    tmp.write_text(json.dumps(summary, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    runs = sorted(p for p in directory.iterdir() if p.is_file() and RUN_FILE.match(p.name))
    for old in runs[: max(0, len(runs) - retain)]:
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


def trends(
    history: Iterable[Run],
    figures: dict[str, float],
    tolerance: float = DEFAULT_TOLERANCE,
    window: int = DEFAULT_WINDOW,
    min_runs: int = DEFAULT_MIN_RUNS,
) -> list[Trend]:
    """Each trended figure of this run against the median of its last `window` earlier values."""
    earlier = list(history)
    out = []
    for key, today in sorted(figures.items()):
        sign = direction(figure_of(key))
        if sign is None:
            continue
        values = [run.figures[key] for run in earlier if key in run.figures][-window:]
        if len(values) < min_runs:
            out.append(Trend(key, today, None, len(values), 0.0, False))
            continue
        median = statistics.median(values)
        worse = 0.0 if median == 0 else (median - today) / median * sign
        out.append(Trend(key, today, median, len(values), worse, worse > tolerance))
    return out
