"""Scenarios: one TOML file describing the simulated cluster's actual state (see sim/README.md)."""

from __future__ import annotations

import copy
import tomllib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gb10check import inventory as inv
from gb10check.errors import SimError
from gb10check.textfile import read_text
from sim import inventory_file, layout, spec
from sim.tables import merge

__all__ = [
    "BUILTIN_DIR",
    "STARTS",
    "TOP_KEYS",
    "Scenario",
    "builtin_names",
    "load_scenario",
    "merge_rails",
    "split_rebase",
]

BUILTIN_DIR = Path(__file__).parent / "scenarios"
TOP_KEYS = {
    "description",
    "base",
    "topology",
    "size",
    "nodes",
    "rails",
    "wired",
    "links",  # the older form of rails (read as rails: sim/spec.py rails_from_links)
    "unused_ports",
    "service",
    "deployment",
    "inventory",
    "expect",
}


def builtin_names() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.toml"))


def split_rebase(ref: str) -> tuple[str, str | None]:
    """`NAME@BASE` -> (NAME, BASE): the scenario NAME's own tables over BASE instead of its own base."""
    name, at, base = ref.rpartition("@")
    return (name, base) if at and name and base else (ref, None)


def _locate(name_or_path: str, here: Path | None = None) -> Path:
    """A builtin scenario's file, or a .toml path (relative to `here`: the folder of the file naming it)."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or "/" in name_or_path:
        if here is not None and not path.is_absolute():
            path = here / path
        if not path.is_file():
            raise SimError(f"scenario file {path} not found")
        return path
    builtin = BUILTIN_DIR / f"{name_or_path}.toml"
    if not builtin.is_file():
        raise SimError(
            f"unknown scenario {name_or_path!r}; builtin: {', '.join(builtin_names())}, or give a .toml path"
        )
    return builtin


def _read(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(read_text(path, "the scenario"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SimError(f"{path}: cannot read scenario: {exc}") from exc
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise SimError(f"{path}: unknown key(s) {unknown}; allowed: {sorted(TOP_KEYS)}")
    if "links" in data:
        if "rails" in data:
            raise SimError(f"{path}: give the fabric as [[rails]] or as the older [links.<name>], not both")
        try:
            rails, wired = spec.rails_from_links(data.pop("links"), str(path))
        except ValueError as exc:
            raise SimError(str(exc)) from exc
        if rails:
            data["rails"] = rails
        if wired:
            data["wired"] = merge(wired, data.get("wired", {}))
    return data


def _load_raw(ref: str, here: Path | None, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The scenario `ref` names, merged over its base chain, its rank keys resolved (not yet expanded)."""
    name, rebase = split_rebase(ref)
    path = _locate(name, here)
    if path.resolve() in seen:
        raise SimError(f"{path}: 'base' chain loops back on itself")
    data = _read(path)
    base = data.pop("base", None)
    base_here: Path | None = path.parent
    if rebase is not None:  # NAME@BASE: NAME's own tables over BASE (named where NAME@BASE was written)
        base, base_here = rebase, here
    if base is None:
        _says_its_shape(data, path)
        return _over({}, data, path)
    if not isinstance(base, str):
        raise SimError(f"{path}: base = {base!r}: give a scenario name or a .toml path")
    inherited = _load_raw(base, base_here, (*seen, path.resolve()))
    inherited.pop("expect", None)  # what the base scenario must fail is not what this one must
    inherited.pop("description", None)
    return _over(inherited, data, path)


STARTS = (
    'start from another scenario, base = "healthy" (or "healthy-switch4", a file), or say the shape, '
    'topology = "switch" and size = 4, or list every node with its rank and every link'
)


def _says_its_shape(data: dict[str, Any], path: Path) -> None:
    """A file without `base` says its own shape: a topology, or every node with its rank. A fault
    written as if over healthy (its nodes' rank keys or a few changed keys) says what it lacks."""
    if "topology" in data or "size" in data:
        return
    nodes = data.get("nodes")
    if not isinstance(nodes, dict) or not nodes:
        raise SimError(f"{path}: no base, no topology and no nodes: {STARTS}")
    partial = [n for n, t in nodes.items() if layout.RANK_KEY.match(n) or not (isinstance(t, dict) and "rank" in t)]
    if partial:
        raise SimError(f"{path}: [nodes.{partial[0]}] changes a node, but the file has no base to change: {STARTS}")


def _ranks(data: dict[str, Any], path: Path) -> dict[int, str]:
    """Rank -> node name: the topology's nodes, or the file's own (each table's `rank`)."""
    if "topology" in data or "size" in data:
        topology, size = data.get("topology"), data.get("size")
        problem = layout.size_problem(topology, size)
        if problem:
            raise SimError(f"{path}: {problem}")
        low, _ = layout.SIZES[str(topology)]
        return {k: layout.node_name(k) for k in range(size or low)}
    nodes = data.get("nodes", {})
    return {
        t["rank"]: name
        for name, t in (nodes.items() if isinstance(nodes, dict) else [])
        if isinstance(t, dict) and isinstance(t.get("rank"), int)
    }


def _over(inherited: dict[str, Any], own: dict[str, Any], path: Path) -> dict[str, Any]:
    """`own` (one file's tables) over `inherited`, its `rank<k>` keys first resolved to the node of
    rank k among the nodes the two make together."""
    shape = {k: v for k, v in own.items() if k in ("topology", "size")}
    if "topology" in own and "topology" not in inherited and inherited.get("rails"):
        raise SimError(
            f"{path}: topology = {own['topology']!r} over a base that lists its own nodes and rails: start from a "
            "scenario with a topology (healthy-ring3, healthy-switch4, ...) or from none"
        )
    nodes = own.get("nodes")
    named = {k: v for k, v in nodes.items() if not layout.RANK_KEY.match(k)} if isinstance(nodes, dict) else {}
    by_rank = _ranks(merge(inherited, {**shape, "nodes": named}), path)
    return _merged(inherited, _resolve_ranks(own, by_rank, path))


def _rail_key(rail: object) -> object:
    return rail.get("name", rail.get("netdev")) if isinstance(rail, dict) else None


def merge_rails(base: list[Any], over: list[Any]) -> list[Any]:
    """A file's [[rails]] over its base's, by rail (its `name`, or the short form's `netdev`): a rail that
    gives its members (`members`, or `addresses`) replaces the base's of that name, one that does not
    (`name = "c0a"`, `mtu = 9000`) changes only the keys it gives, a rail the base lacks is added."""
    out = [copy.deepcopy(r) for r in base]
    keys = [_rail_key(r) for r in out]
    for rail in over:
        key = _rail_key(rail)
        if key is None or key not in keys:
            out.append(copy.deepcopy(rail))
            keys.append(key)
            continue
        i = keys.index(key)
        whole = isinstance(rail, dict) and ("members" in rail or "addresses" in rail)
        out[i] = copy.deepcopy(rail) if whole else merge(out[i], rail)
    return out


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` on `base` (tables key by key), their rails by rail (merge_rails)."""
    out = merge(base, over)
    if isinstance(base.get("rails"), list) and isinstance(over.get("rails"), list):
        out["rails"] = merge_rails(base["rails"], over["rails"])
    return out


def _resolve_ranks(own: dict[str, Any], by_rank: dict[int, str], path: Path) -> dict[str, Any]:
    """Every `rank<k>` that names a node (a [nodes.*] key, a rail's member, a wired end, a bw_to peer) -> its name."""

    def name(key: str, where: str) -> str:
        m = layout.RANK_KEY.match(key)
        if m is None:
            return key
        if int(m[1]) not in by_rank:
            ranks = ", ".join(f"rank{k} = {n}" for k, n in sorted(by_rank.items())) or "none"
            raise SimError(f"{path}: {where}: no node has rank {m[1]} in this scenario ({ranks})")
        return by_rank[int(m[1])]

    own = copy.deepcopy(own)
    if isinstance(own.get("nodes"), dict):
        nodes: dict[str, Any] = {}
        for key, table in own["nodes"].items():
            node = name(key, f"nodes.{key}")
            if node in nodes:
                raise SimError(f"{path}: nodes.{key} and nodes.{node} are the same node: write one table")
            for netdev, port in (table.get("rdma", {}) if isinstance(table, dict) else {}).items():
                if isinstance(port, dict) and isinstance(port.get("bw_to"), dict):
                    where = f"nodes.{key}.rdma.{netdev}.bw_to"
                    port["bw_to"] = {name(k, f"{where}.{k}"): v for k, v in port["bw_to"].items()}
            nodes[node] = table
        own["nodes"] = nodes
    rails = own.get("rails")
    for r, rail in enumerate(rails if isinstance(rails, list) else []):
        if not isinstance(rail, dict):
            continue
        if isinstance(rail.get("addresses"), dict):
            rail["addresses"] = {name(k, f"rails[{r}].addresses.{k}"): v for k, v in rail["addresses"].items()}
        for i, member in enumerate(rail.get("members", []) if isinstance(rail.get("members"), list) else []):
            if isinstance(member, dict) and isinstance(member.get("node"), str):
                member["node"] = name(member["node"], f"rails[{r}].members[{i}].node")
    wired = own.get("wired")
    for rail_name, ends in wired.items() if isinstance(wired, dict) else []:
        for i, end in enumerate(ends if isinstance(ends, list) else []):
            if isinstance(end, list) and end and isinstance(end[0], str):
                end[0] = name(end[0], f"wired.{rail_name}[{i}]")
    return own


def _expand(data: dict[str, Any], path: Path) -> dict[str, Any]:
    """A scenario with a topology: the nodes, rails and unused ports it stands for, its tables over them."""
    if "topology" not in data:
        return data
    skeleton = layout.skeleton(data["topology"], data.get("size") or layout.SIZES[data["topology"]][0])
    for node, table in data.get("nodes", {}).items():
        if node not in skeleton["nodes"]:
            raise SimError(
                f"{path}: nodes.{node} is not a node of this {data['topology']} of {len(skeleton['nodes'])} "
                f"({', '.join(skeleton['nodes'])}); name a node by its rank: [nodes.rank<k>]"
            )
        rank = skeleton["nodes"][node]["rank"]
        if isinstance(table, dict) and table.get("rank", rank) != rank:
            raise SimError(f"{path}: nodes.{node}.rank = {table['rank']!r}, but {node} is rank {rank} here")
    return _merged(skeleton, data)


@dataclass(frozen=True)
class Scenario:
    name: str
    source: Path
    data: dict[str, Any]

    @cached_property
    def model(self) -> spec.Scenario:
        """The scenario, typed, with every default (validated at load)."""
        return spec.Scenario.model_validate(self.data)

    @property
    def nodes(self) -> dict[str, spec.Node]:
        """Node name -> its typed spec, in rank order."""
        return dict(sorted(self.model.nodes.items(), key=lambda kv: kv[1].rank))

    @property
    def topology(self) -> str:
        """pair, ring or switch: as the file says, else a pair (the nodes and rails it lists)."""
        return self.model.topology or "pair"

    def node_of_rank(self, rank: int) -> str:
        return next(name for name, node in self.model.nodes.items() if node.rank == rank)

    def placeholders(self) -> dict[str, str]:
        """`rank<k>` -> the node of rank k: what an [expect] test id writes as {rank<k>}."""
        return {f"rank{node.rank}": name for name, node in self.model.nodes.items()}

    @property
    def service(self) -> dict[str, Any]:
        return dict(self.data.get("service", {}))

    @property
    def expect(self) -> spec.Expect | None:
        """What a run against it must give (the self-tests' expectations), if the file says."""
        raw = self.data.get("expect")
        return spec.Expect.model_validate(raw) if raw is not None else None


def _validate(path: Path, data: dict[str, Any]) -> None:
    """As strict as an inventory: every key known, every netdev one a rail has (sim/spec.py), and the
    inventory the sim writes for it valid (the [inventory] overrides included)."""
    if not isinstance(data.get("nodes"), dict) or not data["nodes"]:
        raise SimError(f"{path}: a scenario needs [nodes.<name>] tables (directly or through 'base')")
    try:
        model = spec.Scenario.model_validate(data)
    except ValidationError as exc:
        raise SimError(f"{path}: invalid scenario:\n{inv.validation_problems(exc, data)}\nSee sim/README.md.") from exc
    written = inventory_file.written(model, Path("/run/gb10sim/0"))
    try:
        inv.Inventory.model_validate(written)
    except ValidationError as exc:
        problems = inv.validation_problems(exc, written)
        if not data.get("inventory"):
            raise SimError(f"{path}: the sim writes an invalid inventory for it (a sim bug):\n{problems}") from exc
        problems = problems.replace("  - key '", "  - key 'inventory.")
        raise SimError(f"{path}: invalid [inventory] overrides:\n{problems}") from exc


def load_scenario(ref: str) -> Scenario:
    """A builtin name or a .toml path, or `NAME@BASE`: NAME's own tables over the scenario BASE (its
    [expect], written for its own base, does not apply there)."""
    name, rebase = split_rebase(ref)
    path = _locate(name)
    data = _load_raw(ref, None)
    if rebase is not None:
        data.pop("expect", None)
    data = _expand(data, path)
    _validate(path, data)
    return Scenario(name=path.stem + (f"@{rebase}" if rebase else ""), source=path, data=data)
