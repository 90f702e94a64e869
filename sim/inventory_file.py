"""The inventory the simulated cluster writes for the suite (pure): fixtures/cluster.example.toml's
expectations (service, deployment, thresholds) with the sim's nodes and how to reach them, its rails
(the short form where every end names the netdev and RDMA device alike, else `members`), its control
plane (a pair: the example's first rail; a ring or a switch: the LAN, enP7s7), its topology and
size, then the scenario's [inventory] overrides.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import tomli_w

from gb10check import inventory as inv
from sim import layout, spec
from sim.tables import merge

__all__ = ["EXAMPLE", "LAUNCH_SCRIPT", "dumps", "written"]

EXAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "cluster.example.toml"
_KEPT = ("gid_index", "min_gbps", "mtu")  # what a rail keeps of the example's rail of the same netdev


def _rail(rail: inv.Rail, examples: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The scenario's rail as the inventory writes it: the short form where every member names the
    netdev and RDMA device alike, else `members`; what the scenario's rail does not set of gid_index,
    min_gbps and mtu from the example's rail of the same netdev."""
    first = rail.members[0]
    example = examples.get(rail.name) or examples.get(first.netdev) or {}
    alike = len({(m.netdev, m.rdma_device) for m in rail.members}) == 1 and first.netdev == rail.name
    if alike:
        out: dict[str, Any] = {
            "netdev": rail.name,
            "rdma_device": first.rdma_device,
            "addresses": {m.node: m.address for m in rail.members},
        }
    else:
        out = {"name": rail.name, "members": [m.model_dump() for m in rail.members]}
    out |= {k: v for k, v in example.items() if k in _KEPT}
    out |= {k: getattr(rail, k) for k in sorted(rail.model_fields_set - {"name", "members"})}
    return out


LAUNCH_SCRIPT = "launch.sh"  # sim/deploy/docker-run.sh or compose-up.sh, beside where the compose is (or would be)


def written(model: spec.Scenario, run_dir: Path) -> dict[str, Any]:
    """The inventory's data for the scenario `model`, its files under `run_dir`."""
    overrides: dict[str, Any] = dict(model.inventory)
    data = merge(tomllib.loads(EXAMPLE.read_text(encoding="utf-8")), overrides)
    nodes = sorted(model.nodes.items(), key=lambda kv: kv[1].rank)
    data["ssh"] = {
        "connect_timeout": 5,
        **overrides.get("ssh", {}),  # a scenario may shorten the bound
        "host_key_policy": "known_hosts",
        "known_hosts": str(run_dir / "known_hosts"),
        "use_ssh_config": False,
    }
    data["nodes"] = [
        {
            "name": name,
            "rank": node.rank,
            "transport": "ssh",
            "host": node.ssh_host or node.lan().split("/")[0],
            "port": 22,
            "user": node.login_user if node.unprivileged else "root",
            "key": str(run_dir / "client_key"),
            **({"sudo": node.sudo} if node.sudo is not None else {}),
        }
        for name, node in nodes
    ]
    if model.deployment.launcher != "compose":  # each node runs the launch script, its rank its argument
        dep = data["deployment"]
        folder = dep["compose_file"].rsplit("/", 1)[0]
        if model.deployment.launcher == "docker-run":  # no compose at all
            del dep["compose_file"]
            dep.pop("env_file", None)
        dep["launch"] = {"script": f"{folder}/{LAUNCH_SCRIPT}", **dep.get("launch", {})}
        for entry in data["nodes"]:
            entry["launch"] = {"args": [str(entry["rank"])]}
    # a short bandwidth run: the sim's links are veths, the figures the scenario's
    data["thresholds"] = {"bandwidth_seconds": 1, **data.get("thresholds", {})}
    examples = {lk["netdev"]: lk for lk in data.pop("rails", data.pop("links", [])) if "netdev" in lk}
    data["rails"] = [_rail(rail, examples) for rail in model.rails]
    cluster = {k: v for k, v in data.get("cluster", {}).items() if k != "topology"}
    topology = model.topology or ("pair" if len(nodes) == 2 else None)
    if topology is not None:
        cluster["topology"] = topology
    if model.topology not in (None, "pair"):  # the control plane on the LAN, as on a real ring or switch
        data["control"] = {"netdev": layout.LAN_NETDEV, "addresses": {name: node.lan() for name, node in nodes}}
        cluster["name"] = f"gb10sim-{model.topology}{len(nodes)}"
    data["cluster"] = {**cluster, "tensor_parallel_size": len(nodes), **overrides.get("cluster", {})}
    return data


def _inline(table: dict[str, Any]) -> str:
    """A table of plain values written inline: { key = value, ... } (tomli_w quotes and escapes)."""
    return "{ " + ", ".join(tomli_w.dumps({k: v}).strip() for k, v in table.items()) + " }"


def dumps(data: dict[str, Any]) -> str:
    """The inventory as TOML, its [[rails]] as an operator writes them: `addresses = { ... }`, or
    `members = [ { node, netdev, rdma_device, address }, ... ]` one member a line."""
    out = [tomli_w.dumps({k: v for k, v in data.items() if k != "rails"})]
    for rail in data.get("rails", []):
        lines = ["[[rails]]"]
        for key, value in rail.items():
            if key == "members":
                lines += ["members = [", *(f"  {_inline(m)}," for m in value), "]"]
            elif isinstance(value, dict):
                lines.append(f"{key} = {_inline(value)}")  # a rail's own keys are bare words
            else:
                lines.append(tomli_w.dumps({key: value}).strip())
        out.append("\n".join(lines) + "\n")
    return "\n".join(out)
