"""Scenarios: one TOML file describing the simulated cluster's actual state (see sim/README.md)."""

from __future__ import annotations

import copy
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gb10check import inventory as inv
from gb10check.errors import SimError
from gb10check.textfile import read_text
from sim import spec

BUILTIN_DIR = Path(__file__).parent / "scenarios"
EXAMPLE_INVENTORY = Path(__file__).resolve().parent.parent / "fixtures" / "cluster.example.toml"
TOP_KEYS = {"description", "base", "nodes", "links", "unused_ports", "service", "deployment", "inventory", "expect"}


def builtin_names() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.toml"))


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _locate(name_or_path: str) -> Path:
    path = Path(name_or_path)
    if path.suffix == ".toml" or "/" in name_or_path:
        if not path.is_file():
            raise SimError(f"scenario file {path} not found")
        return path
    builtin = BUILTIN_DIR / f"{name_or_path}.toml"
    if not builtin.is_file():
        raise SimError(
            f"unknown scenario {name_or_path!r}; builtin: {', '.join(builtin_names())}, or give a .toml path"
        )
    return builtin


def _load_raw(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    if path.resolve() in seen:
        raise SimError(f"{path}: 'base' chain loops back on itself")
    try:
        data = tomllib.loads(read_text(path, "the scenario"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SimError(f"{path}: cannot read scenario: {exc}") from exc
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise SimError(f"{path}: unknown key(s) {unknown}; allowed: {sorted(TOP_KEYS)}")
    base = data.pop("base", None)
    if base is None:
        return data
    base_path = _locate(base) if not base.endswith(".toml") else (path.parent / base)
    inherited = _load_raw(base_path, (*seen, path.resolve()))
    inherited.pop("expect", None)  # what the base scenario must fail is not what this one must
    inherited.pop("description", None)
    return merge(inherited, data)


@dataclass(frozen=True)
class Scenario:
    name: str
    source: Path
    data: dict[str, Any]

    @property
    def model(self) -> spec.Scenario:
        """The scenario, typed, with every default (validated at load)."""
        return spec.Scenario.model_validate(self.data)

    @property
    def nodes(self) -> dict[str, spec.Node]:
        """Node name -> its typed spec, in rank order."""
        return dict(sorted(self.model.nodes.items(), key=lambda kv: kv[1].rank))

    @property
    def links(self) -> dict[str, dict[str, Any]]:
        return dict(self.data.get("links", {}))

    @property
    def service(self) -> dict[str, Any]:
        return dict(self.data.get("service", {}))

    @property
    def expect(self) -> spec.Expect | None:
        """What a run against it must give (the self-tests' expectations), if the file says."""
        raw = self.data.get("expect")
        return spec.Expect.model_validate(raw) if raw is not None else None


def _validate(path: Path, data: dict[str, Any]) -> None:
    """As strict as an inventory: every key known, every netdev one a link has (sim/spec.py)."""
    if not isinstance(data.get("nodes"), dict) or not data["nodes"]:
        raise SimError(f"{path}: a scenario needs [nodes.<name>] tables (directly or through 'base')")
    try:
        spec.Scenario.model_validate(data)
    except ValidationError as exc:
        raise SimError(f"{path}: invalid scenario:\n{inv.validation_problems(exc, data)}\nSee sim/README.md.") from exc
    overrides = data.get("inventory", {})
    if overrides:  # the [inventory] table must leave a valid inventory (the sim replaces nodes and links)
        example = tomllib.loads(EXAMPLE_INVENTORY.read_text(encoding="utf-8"))
        merged = merge(example, overrides)
        try:
            inv.Inventory.model_validate(merged)
        except ValidationError as exc:
            problems = inv.validation_problems(exc, merged).replace("  - key '", "  - key 'inventory.")
            raise SimError(f"{path}: invalid [inventory] overrides:\n{problems}") from exc


def load_scenario(name_or_path: str) -> Scenario:
    path = _locate(name_or_path)
    data = _load_raw(path)
    _validate(path, data)
    return Scenario(name=path.stem, source=path, data=data)
