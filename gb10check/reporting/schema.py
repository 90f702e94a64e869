"""The summary's format: its version and its JSON Schema (summary.schema.json), shared by the report that
writes summary.json and the history that reads earlier ones (so neither imports the other)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["SCHEMA", "SCHEMA_VERSION"]

# summary.json's layout (summary.schema.json describes it): raised when a field changes meaning or goes away;
# the history (gb10check/reporting/history.py) reads only the versions it knows
# 2: a check's `link` became `rail`, `nodes` names every node it is about;
# 3: `cluster`, `matrix`, `selection` and each check's `title` (report.html reads them)
SCHEMA_VERSION = 3
SCHEMA: dict[str, Any] = json.loads((Path(__file__).parent / "summary.schema.json").read_text(encoding="utf-8"))
