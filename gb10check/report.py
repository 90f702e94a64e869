"""The run's summary: one row per check (and node), written as summary.json and summary.md."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Measured:
    """One comparison a check made (gb10check.verdict.Evidence.expect)."""

    what: str
    expected: str
    found: str
    ok: bool


@dataclass
class Row:
    test: str  # pytest node id
    check: str  # the test's name with its parameters, as `pytest -k` takes it
    node: str | None
    verdict: str  # passed / failed / error / skipped
    evidence: list[Measured] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    message: str = ""
    duration: float = 0.0


@dataclass
class Summary:
    started: float
    inventory: str
    scenario: str | None
    rows: list[Row] = field(default_factory=list)
    transports: dict[str, dict[str, int]] = field(default_factory=dict)
    interrupted: bool = False

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for row in self.rows:
            out[row.verdict] = out.get(row.verdict, 0) + 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(self.started)),
            "duration": round(time.time() - self.started, 3),
            "inventory": self.inventory,
            "scenario": self.scenario,
            "interrupted": self.interrupted,
            "counts": self.counts(),
            "transports": self.transports,
            "checks": [asdict(r) for r in self.rows],
        }

    def to_markdown(self) -> str:
        counts = ", ".join(f"{n} {v}" for v, n in sorted(self.counts().items()))
        lines = [
            "# gb10check summary",
            "",
            f"- inventory: `{self.inventory}`"
            + (f" (simulated cluster, scenario `{self.scenario}`)" if self.scenario else ""),
            f"- result: {counts or 'no checks ran'}" + (" (interrupted)" if self.interrupted else ""),
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
                _each(m.found for m in r.evidence) or _first_line(r.message),
                " ".join(f"[{h}]" for h in r.hints),
            ]
            lines.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
        return "\n".join(lines) + "\n"

    def write(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "summary.json").write_text(json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n")
        (directory / "summary.md").write_text(self.to_markdown())


def _each(values: Iterable[str]) -> str:
    # one line per comparison inside a markdown table cell
    return "<br>".join(values)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:200] if text.strip() else ""
