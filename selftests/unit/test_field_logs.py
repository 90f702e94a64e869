"""`gb10check explain` on the field corpus: real vLLM multi-node logs as their authors pasted them into
public GitHub threads (selftests/data/logs/field, provenance and expected rows in its SOURCES.toml).

Every log is read (never refused, exit status 0 or 1) and shows exactly the rows its thread's outcome
calls for; where the reader cannot yet be right, the entry says what it gets wrong (xfail, strict: a fix
turns it into a failure to update here)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from gb10check.commands.explain import explain, main
from gb10check.judging.hints import Catalogue
from selftests.conftest import DATA

FIELD = DATA / "logs" / "field"
SOURCES: list[dict[str, Any]] = tomllib.loads((FIELD / "SOURCES.toml").read_text(encoding="utf-8"))["log"]
REQUIRED = {"file", "url", "repository", "title", "retrieved", "excerpt", "outcome", "expect"}
CATALOGUE = Catalogue.load()


def _cases(with_xfail: bool) -> list[Any]:
    """One case per log; with_xfail: an entry's known misreading (its `xfail`) marks it, strictly."""
    return [
        pytest.param(
            e,
            id=e["file"],
            marks=[pytest.mark.xfail(strict=True, reason=e["xfail"])] if with_xfail and "xfail" in e else [],
        )
        for e in SOURCES
    ]


def test_every_log_has_its_sources_entry_and_every_entry_its_log() -> None:
    listed = [e["file"] for e in SOURCES]
    assert len(listed) == len(set(listed)), "a file listed twice in SOURCES.toml"
    assert sorted(listed) == sorted(p.name for p in FIELD.glob("*.log"))
    for e in SOURCES:
        assert e.keys() >= REQUIRED, f"{e.get('file')}: missing {sorted(REQUIRED - e.keys())}"
        assert e["url"].startswith(f"https://github.com/{e['repository']}/"), e["file"]
        assert e["retrieved"] == "2026-12-06" and isinstance(e["excerpt"], bool), e["file"]
        assert all(h in CATALOGUE for h in e["expect"]), f"{e['file']}: a hint id not in the catalogue"


@pytest.mark.parametrize("entry", _cases(with_xfail=False))
def test_explain_reads_the_log(entry: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    rc = main([str(FIELD / entry["file"]), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc in (0, 1)  # 4: refused
    assert out["lines"] > 0
    assert rc == (1 if out["rows"] else 0)


@pytest.mark.parametrize("entry", _cases(with_xfail=True))
def test_explain_shows_the_rows_the_outcome_calls_for(entry: dict[str, Any]) -> None:
    path: Path = FIELD / entry["file"]
    e = explain(path.read_text(encoding="utf-8"), entry["file"], CATALOGUE)
    assert [r.hint for r in e.rows] == entry["expect"], entry["outcome"]
