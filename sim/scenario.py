"""Scenarios: one TOML file describing the simulated cluster's actual state (see sim/README.md)."""

from __future__ import annotations

import copy
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gb10check.errors import SimError

BUILTIN_DIR = Path(__file__).parent / "scenarios"
NODE_KEYS = {
    "rank",
    "hostname",
    "lan_address",
    "driver",
    "meminfo",
    "down",
    "stubs",
    "gpu_uuid",
    "powered_off",
    "users",
    "docker",
    "ufw",
    "netplan",
    "env",
    "hf",
    "ssh_key",
    "compose_edits",
    "unprivileged",
    "sudo",
}
TOP_KEYS = {"description", "base", "nodes", "links", "unused_ports", "service", "deployment", "inventory"}
STUB_KEYS = {"tool", "match", "stdout", "stderr", "rc", "delay"}
STUB_TOOLS = {"nvidia-smi", "ibdev2netdev", "modinfo", "docker"}


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
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SimError(f"{path}: cannot read scenario: {exc}") from exc
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise SimError(f"{path}: unknown key(s) {unknown}; allowed: {sorted(TOP_KEYS)}")
    base = data.pop("base", None)
    if base is None:
        return data
    base_path = _locate(base) if not base.endswith(".toml") else (path.parent / base)
    return merge(_load_raw(base_path, (*seen, path.resolve())), data)


@dataclass(frozen=True)
class Scenario:
    name: str
    source: Path
    data: dict[str, Any]

    @property
    def nodes(self) -> dict[str, dict[str, Any]]:
        return dict(sorted(self.data["nodes"].items(), key=lambda kv: kv[1]["rank"]))

    @property
    def links(self) -> dict[str, dict[str, Any]]:
        return dict(self.data.get("links", {}))

    @property
    def service(self) -> dict[str, Any]:
        return dict(self.data.get("service", {}))


def load_scenario(name_or_path: str) -> Scenario:
    path = _locate(name_or_path)
    data = _load_raw(path)
    nodes = data.get("nodes")
    if not isinstance(nodes, dict) or not nodes:
        raise SimError(f"{path}: a scenario needs [nodes.<name>] tables (directly or through 'base')")
    for name, node in nodes.items():
        unknown = sorted(set(node) - NODE_KEYS)
        if unknown:
            raise SimError(f"{path}: nodes.{name}: unknown key(s) {unknown}; allowed: {sorted(NODE_KEYS)}")
        if "rank" not in node:
            raise SimError(f"{path}: nodes.{name}: missing 'rank'")
        for i, stub in enumerate(node.get("stubs", [])):
            bad = sorted(set(stub) - STUB_KEYS)
            if bad or stub.get("tool") not in STUB_TOOLS:
                raise SimError(
                    f"{path}: nodes.{name}.stubs[{i}]: needs tool in {sorted(STUB_TOOLS)}, "
                    f"keys from {sorted(STUB_KEYS)}"
                )
    for netdev, link in data.get("links", {}).items():
        missing = sorted(set(nodes) - set(link.get("addresses", {})))
        if missing or "rdma_device" not in link:
            raise SimError(
                f"{path}: links.{netdev}: needs rdma_device and an address for every node (missing {missing})"
            )
    return Scenario(name=path.stem, source=path, data=data)
