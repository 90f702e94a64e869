"""The wheel's build hook: the suite's rootdir (plugin, checks, simulated cluster) goes inside the package,
in gb10check/_suite/, so an installed gb10check runs as the clone does. An editable install gets nothing:
there the clone is the suite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SUITE = ("fixtures", "sim", "tests_preflight", "tests_network", "tests_service", "conftest.py", "pytest.ini")


class SuiteInsidePackage(BuildHookInterface):  # type: ignore[type-arg]
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "editable":
            return
        root = Path(self.root)
        for name in SUITE:
            path = root / name
            files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
            for file in files:
                if "__pycache__" in file.parts or file.suffix == ".pyc":
                    continue
                build_data["force_include"][str(file)] = f"gb10check/_suite/{file.relative_to(root).as_posix()}"
