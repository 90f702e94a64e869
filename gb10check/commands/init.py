"""`gb10check init`: the inventory, discovered (read-only), written with where every value came from.

Run on rank 0, alone or with the other nodes' names or addresses (`gb10check init spark-02 spark-03`):
rank 0 is read here, each other node over SSH, one round trip each, in parallel. Of each node: its
hostname (the node's name), its netdevs and addresses (`ip -j -d addr`), its routes, the RDMA devices and
the netdevs they drive (sysfs), and the compose files that start vLLM at the usual places. Of that:
the rails, the topology and a ring's cable order (gb10check/reading/discover.py); then, when one compose file
starts vLLM on rank 0, each rank's launch plan as `gb10check plan` reads it (the model, its served name,
the API port, the parsers, the image, the container, the control plane from NCCL_SOCKET_IFNAME).

What it cannot infer it writes as a TODO line the inventory reader refuses until it is filled. It never
overwrites an inventory: with one at the path it prints the differences (a node, a rail, a moved cable,
the deployment) and exits 1 when there are any; `--check` does only that (a nightly's drift check).
With no node named, the other nodes are those that answer on rank 0's fabric (gb10check/reading/peers.py: a ping
sweep of each port's subnet, the neighbour table, then SSH to each address that answered), a ring's far
nodes through its near ones. Exit status: 0 written / no drift, 1 drift, 4 usage, a node that cannot be
read, an inventory at the path that cannot be read, or a path that cannot be written.
"""

from __future__ import annotations

import argparse
import ipaddress
import posixpath
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import tomli_w

from gb10check import inventory as inv
from gb10check.errors import GB10Error, InventoryError, clip
from gb10check.reading import discover, peers, probes
from gb10check.reading.node import NodeSession, make_transport
from gb10check.reading.parallel import map_parallel
from gb10check.reading.parsers.docker import Running, parse_docker_ps
from gb10check.reading.parsers.framed import parse_word
from gb10check.reading.snapshot import Probe, Read, Snapshot
from gb10check.reading.transport import LocalTransport
from gb10check.safe_text.neutralise import neutralise

__all__ = [
    "COMPOSE_FILES",
    "COMPOSE_PLACES",
    "CONTAINERS",
    "HEADER",
    "HF_TARGETS",
    "HOSTNAME",
    "IDENTITY",
    "LAUNCH_SCRIPTS",
    "MTU_RANGE",
    "ORDER",
    "READS",
    "TODO",
    "VLLM_PORT",
    "Found",
    "control_table",
    "deployment_tables",
    "differences",
    "discovered",
    "fabric_tables",
    "found_on_the_fabric",
    "main",
    "nodes_table",
    "read",
    "read_nodes",
    "reading_of",
    "render",
    "running_vllm",
]

TODO = "TODO"  # a value init could not find: the inventory reader refuses the file until it is replaced
HOSTNAME: Read[str] = Read("hostname", lambda _w: "hostname", lambda t: parse_word(t, "hostname"))
# the usual places of a deployment's files: a user's home, /root, /opt, /srv, three levels down
COMPOSE_PLACES = ("/home", "/root", "/opt", "/srv")


def _files_naming_vllm(name: str, kind: str, then: str = "") -> Read[tuple[str, ...]]:
    """The files of `kind` (find's tests) at the usual places that name vLLM, filtered by `then`, sorted."""
    return Read(
        name,
        lambda _w: (
            f"find {' '.join(COMPOSE_PLACES)} -maxdepth 3 -type f {kind} -exec grep -l -i vllm {{}} + 2>/dev/null "
            f"{then}| sort | head -n 20; exit 0"
        ),
        lambda t: tuple(line.strip() for line in t.splitlines() if line.strip()),
    )


COMPOSE_FILES = _files_naming_vllm("compose_files", "\\( -name '*compose*.yml' -o -name '*compose*.yaml' \\)")
# the launch scripts there that start vLLM (docker run, docker compose, Ray): named where no compose file
# decides, for the operator to choose (init cannot know each node's arguments)
LAUNCH_SCRIPTS = _files_naming_vllm(
    "launch_scripts", "-name '*.sh'", "| xargs -r -d '\\n' grep -l -E 'docker (run|compose)|ray start' 2>/dev/null "
)
# the containers that run (a vLLM one: the deployment, whatever started it: docker run, Ray, Compose)
CONTAINERS = "docker ps --no-trunc --format '{{json .}}'"
READS: tuple[Read[Any], ...] = (
    HOSTNAME, probes.IP_ADDR, probes.IP_ROUTE, probes.RDMA_PORTS, COMPOSE_FILES, LAUNCH_SCRIPTS
)  # fmt: skip
HF_TARGETS = ("/root/.cache/huggingface", "/root/.cache/huggingface/hub")
VLLM_PORT = 8000
MTU_RANGE = (576, 9216)  # inventory.Rail.mtu's bounds  # `vllm serve`'s default --port


@dataclass
class Found:
    """The inventory init writes: its data, each value's source (a comment), and what is still TODO."""

    data: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # "service.model" -> "rank 0's compose, line 12"
    todo: list[str] = field(default_factory=list)  # "service.max_model_len: why"
    notes: list[str] = field(default_factory=list)

    def put(self, table: str, key: str, value: object, source: str) -> None:
        self.data.setdefault(table, {})[key] = value
        self.sources[f"{table}.{key}"] = source

    def missing(self, table: str, key: str, why: str) -> None:
        why = clip(why, 240)  # a tool's whole output has no place in a comment
        self.put(table, key, TODO, why)
        self.todo.append(f"[{table}] {key}: {why}")


def _probes(reads: Sequence[Read[Any]]) -> tuple[Probe, ...]:
    """The reads' probes: init's reads need no inventory (their commands ignore where they run)."""
    return tuple(Probe(r.name, cast(str, r.command(cast(Any, None)))) for r in reads)


def running_vllm(snap: Snapshot) -> list[Running]:
    """The node's running vLLM containers (none where docker is not there, or says nothing it can read)."""
    if snap.error is not None or "containers" not in snap.results:
        return []
    result = snap.results["containers"]
    if not result.ok:
        return []
    try:
        return [c for c in parse_docker_ps(result.stdout) if c.serves_vllm]
    except GB10Error:
        return []


def _ssh(opts: argparse.Namespace) -> inv.SshSettings:
    return inv.SshSettings(
        connect_timeout=opts.connect_timeout,
        host_key_policy="accept-new" if opts.accept_new else "known_hosts",
        known_hosts=opts.known_hosts,
        use_ssh_config=not opts.no_ssh_config,
    )


def read(asks: Sequence[tuple[str, tuple[Probe, ...]]], opts: argparse.Namespace) -> list[Snapshot]:
    """Each (host, probes) read in one round trip, in parallel: "local" here, any other over SSH."""
    ssh = _ssh(opts)
    nodes = []
    for rank, (host, probes_) in enumerate(asks):
        spec = _node_spec(rank, host, opts)
        transport = LocalTransport(spec.name) if spec.transport == "local" else make_transport(spec, ssh)
        nodes.append(NodeSession(spec, transport, opts.command_timeout, probes_))
    try:
        return map_parallel(lambda n: n.probe(n.probes), nodes, name="gb10check-init")
    finally:
        for n in nodes:
            n.transport.close()


def read_nodes(hosts: Sequence[str], opts: argparse.Namespace) -> list[Snapshot]:
    """Each node's reading: rank 0 here (or over SSH with --rank0), the others over SSH; in parallel."""
    own = (*_probes(READS), Probe("containers", CONTAINERS))
    return read([(host, own) for host in hosts], opts)


IDENTITY = (HOSTNAME, probes.IP_ADDR, probes.RDMA_PORTS)  # who a node found on the fabric is, and its ports


def found_on_the_fabric(opts: argparse.Namespace) -> tuple[list[str], list[str]]:
    """No node named: the other nodes that answer on the fabric (gb10check/reading/peers.py), each at the first address
    it answered at, by hostname in natural order; and what to say of them."""
    rank0_host = opts.rank0 or "local"
    (rank0,) = read([(rank0_host, _probes(IDENTITY))], opts)
    if rank0.error is not None:
        raise InventoryError(f"rank 0 ({rank0_host}) could not be read: {rank0.error}")
    if not any(port.address for port in discover.ports_of(rank0.fact(probes.IP_ADDR), rank0.fact(probes.RDMA_PORTS))):
        raise InventoryError(
            f"rank 0 ({rank0.fact(HOSTNAME)}) has no fabric port with an address (a netdev an RDMA device drives, "
            "in /sys/class/infiniband): nothing to find the other nodes on. Name them (gb10check init spark-02 "
            "spark-03), or one node alone: gb10check init --single"
        )
    found = peers.find(
        rank0, lambda asks: read(asks, opts), _probes(IDENTITY), lambda s: s.fact(HOSTNAME).split(".")[0]
    )
    names = sorted(found.hosts, key=lambda n: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", n)])
    notes = [f"{n} answered on the fabric at {', '.join(found.seen_at[n])}; read at {found.hosts[n]}" for n in names]
    notes += [f"not a node: {n}" for n in found.not_nodes] + found.notes
    if not names:
        raise InventoryError(
            f"no other node answered on rank 0's fabric ({found.rank0}'s ports with an address were swept, a subnet "
            "larger than a /24, such as a link-local 169.254/16, only over the /24 around its address"
            + (f"; {'; '.join(notes)}" if notes else "")
            + "): name them (gb10check init spark-02 spark-03), or one node alone: gb10check init --single"
        )
    user = f"{opts.user}@" if opts.user else ""
    return [rank0_host, *(f"{user}{found.hosts[n]}" for n in names)], notes


def _node_spec(rank: int, host: str, opts: argparse.Namespace) -> inv.Node:
    if host == "local":
        return inv.Node(name=f"rank{rank}", rank=rank, transport="local")
    user, at, address = host.rpartition("@")
    return inv.Node(
        name=f"rank{rank}",
        rank=rank,
        transport="ssh",
        host=address,
        user=(user if at else None) or opts.user,
        port=opts.port,
        key=opts.key,
    )


def reading_of(snap: Snapshot, host: str) -> tuple[discover.NodeReading, tuple[str, ...]]:
    """A node's snapshot as discover reads it, and its compose files (GB10Error: it could not be read)."""
    if snap.error is not None:
        raise snap.error
    netdevs = snap.fact(probes.IP_ADDR)
    ports = discover.ports_of(netdevs, snap.fact(probes.RDMA_PORTS))
    address = host.rpartition("@")[2]
    reading = discover.NodeReading(address, snap.fact(HOSTNAME), ports, netdevs, snap.fact(probes.IP_ROUTE))
    return reading, snap.fact(COMPOSE_FILES)


def _named(readings: Sequence[discover.NodeReading]) -> list[str]:
    names = [r.hostname.split(".")[0] for r in readings]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InventoryError(f"two nodes call themselves {', '.join(dupes)} (hostname): give each its own name")
    return names


def fabric_tables(found: Found, fabric: discover.Fabric, readings: Sequence[discover.NodeReading]) -> None:
    """[cluster]'s topology and [[rails]] from the fabric, every value's source."""
    n = len(fabric.nodes)
    if fabric.topology is None:
        found.missing("cluster", "topology", "the rails make no pair, ring or switch: " + "; ".join(fabric.notes[-1:]))
    else:
        how = {"pair": "two nodes", "switch": "every rail holds every node", "single": "one node"}.get(
            fabric.topology, "every rail joins two nodes; the cables make one cycle: " + _cycle_text(fabric)
        )
        found.put("cluster", "topology", fabric.topology, f"from the rails: {how}")
    found.put("cluster", "tensor_parallel_size", n, "one GPU per node, every node a rank")
    if fabric.topology == "switch" and len(fabric.rails) == 1:
        found.missing("cluster", "rails", "one rail found: half of each port's bandwidth. Write 1 if one rail is "
                      "meant; else address the ports' other half and run init again")  # fmt: skip
    rails = []
    for rail in fabric.rails:
        out: dict[str, Any] = {}
        if rail.alike and rail.name == rail.members[0].port.netdev:  # a ring's rails keep their cable names
            port = rail.members[0].port
            out = {"netdev": port.netdev, "rdma_device": port.rdma_device}
            out["addresses"] = {m.node: m.port.address for m in rail.members}
        else:
            out = {"name": rail.name}
            out["members"] = [
                {"node": m.node, "netdev": m.port.netdev, "rdma_device": m.port.rdma_device, "address": m.port.address}
                for m in rail.members
            ]
        gids = {m.port.gid_index for m in rail.members}
        if len(gids) == 1 and None not in gids:
            out["gid_index"] = gids.pop()
        mtus = {m.port.mtu for m in rail.members}
        if len(mtus) == 1 and MTU_RANGE[0] <= min(mtus) <= MTU_RANGE[1]:
            out["mtu"] = mtus.pop()
        elif len(mtus) == 1:
            found.notes.append(f"rail {rail.name}'s MTU {min(mtus)} is outside what the inventory checks "
                               f"({MTU_RANGE[0]}-{MTU_RANGE[1]}): not written")  # fmt: skip
        rails.append(out)
    found.data["rails"] = rails
    found.notes += list(fabric.notes)


def _cycle_text(fabric: discover.Fabric) -> str:
    return " - ".join([*(a for a, _ in fabric.cables), fabric.cables[0][0]]) if fabric.cables else ""


def control_table(
    found: Found, fabric: discover.Fabric, readings: Sequence[discover.NodeReading], socket_ifname: str | None
) -> None:
    """[control]: the netdev the deployment names (`socket_ifname`: the one NCCL_SOCKET_IFNAME selects), else a
    ring's or a switch's LAN port; a pair's is its first rail (no [control] written)."""
    rail_netdevs = {m.port.netdev for r in fabric.rails for m in r.members}
    names = fabric.nodes
    if socket_ifname is not None:
        netdev, source = socket_ifname, "rank 0's NCCL_SOCKET_IFNAME (the launch plan)"
    elif fabric.topology in ("pair", "single"):
        return  # the first rail, as the inventory reads a pair without [control]
    else:
        lans = {r.lan() for r in readings}
        netdevs = {lan[0] for lan in lans if lan is not None}
        if len(netdevs) != 1 or None in lans:
            found.missing("control", "netdev", "no deployment was read and the nodes share no LAN port")
            return
        netdev, source = netdevs.pop(), "the port each node was reached on (no deployment read)"
    found.put("control", "netdev", netdev, source)
    if netdev not in rail_netdevs:
        addresses = {}
        for name, reading in zip(names, readings, strict=True):
            nd = reading.netdevs.get(netdev)
            v4 = [a for a in (nd.addresses if nd else ()) if ipaddress.ip_interface(a).version == 4]
            if not v4:
                found.missing("control", "addresses", f"{name} has no IPv4 address on {netdev}")
                return
            addresses[name] = v4[0]
        found.put("control", "addresses", addresses, f"each node's address on {netdev} (ip addr)")


def _named_netdev(ifname: str, readings: Sequence[discover.NodeReading]) -> str | None:
    """The one netdev NCCL_SOCKET_IFNAME selects on every node (NCCL: a prefix list, `=` exact, `^` excluding):
    None for an exclude list, several names, or a prefix that matches more than one netdev or not everywhere."""
    if "," in ifname or ifname.startswith("^") or not ifname.strip("="):
        return None
    exact, want = ifname.startswith("="), ifname.lstrip("=")
    matches = set()
    for reading in readings:
        here = [n for n in reading.netdevs if n == want or (not exact and n.startswith(want))]
        if len(here) != 1:
            return None
        matches.add(here[0])
    return matches.pop() if len(matches) == 1 else None


def nodes_table(found: Found, names: Sequence[str], hosts: Sequence[str], opts: argparse.Namespace) -> None:
    entries = []
    for rank, (name, host) in enumerate(zip(names, hosts, strict=True)):
        entry: dict[str, Any] = {"name": name, "rank": rank}
        if host == "local":
            entry["transport"] = "local"
        else:
            user, at, address = host.rpartition("@")
            entry |= {"transport": "ssh", "host": address}
            if (user if at else None) or opts.user:
                entry["user"] = (user if at else None) or opts.user
            if opts.port:
                entry["port"] = opts.port
            if opts.key:
                entry["key"] = opts.key
        entries.append(entry)
    found.data["nodes"] = entries
    ssh: dict[str, Any] = {"connect_timeout": opts.connect_timeout}
    ssh["host_key_policy"] = "accept-new" if opts.accept_new else "known_hosts"
    if opts.known_hosts:
        ssh["known_hosts"] = opts.known_hosts
    if opts.no_ssh_config:
        ssh["use_ssh_config"] = False
    found.data["ssh"] = ssh


def deployment_tables(
    found: Found,
    compose_files: Sequence[tuple[str, ...]],
    names: Sequence[str],
    running: Sequence[Running] = (),
    scripts: Sequence[str] = (),
) -> str | None:
    """[deployment] and [service] from the compose file rank 0 starts vLLM with, read as `gb10check plan` reads
    it on every node; returns rank 0's NCCL_SOCKET_IFNAME (None: no plan, or it sets none)."""
    on_rank0 = compose_files[0] if compose_files else ()
    if len(on_rank0) != 1 and len(running) == 1:  # no one compose file: the vLLM container that runs says
        return _from_running(found, running[0], names[0], scripts)
    if len(on_rank0) != 1:
        why = (
            f"no compose file naming vLLM under {', '.join(COMPOSE_PLACES)} on rank 0 (three levels down)"
            if not on_rank0
            else f"{len(on_rank0)} compose files name vLLM on rank 0: {', '.join(on_rank0)}"
        )
        if len(running) > 1:
            why += f"; {len(running)} vLLM containers run on rank 0 ({', '.join(c.name for c in running)})"
        if scripts:  # the action first: a TODO's text is clipped
            why = (
                f'a launch script starts vLLM? launch = {{ script = "{scripts[0]}" }} (each node\'s launch.args)'
                + (f", or {', '.join(scripts[1:])}" if scripts[1:] else "")
                + f"; {why}"
            )
        else:
            why += ' (a launch script: launch = { script = "PATH" })'
        found.missing("deployment", "compose_file", why)
        for key in ("container", "image", "hf_cache"):
            found.missing("deployment", key, "read from the compose file once it is named")
        for key in ("served_model_name", "model", "max_model_len"):
            found.missing("service", key, "read from the compose file once it is named")
        found.put("service", "base_url", f"http://localhost:{VLLM_PORT}", "vllm serve's default port (no plan read)")
        return None
    compose = on_rank0[0]
    found.put("deployment", "compose_file", compose, f"the one compose file naming vLLM on rank 0 ({names[0]})")
    lacking = [n for n, files in zip(names, compose_files, strict=True) if compose not in files]
    if lacking:
        found.notes.append(
            f"{', '.join(lacking)} {'has' if len(lacking) == 1 else 'have'} no {compose}: preflight says so"
        )
    return _from_plan(found, compose)


def _from_running(found: Found, container: Running, rank0: str, scripts: Sequence[str] = ()) -> str | None:
    """[deployment] and [service] from the vLLM container that runs on rank 0, as `gb10check plan --running`
    reads it (its inspect and its process): whatever started it (docker run, Ray, Compose elsewhere)."""
    where = f"the vLLM container running on rank 0 ({rank0})"
    found.put("deployment", "container", container.name, f"{where}, as docker ps names it")
    found.put("deployment", "image", container.image, f"{where}, as docker ps names it")
    if container.compose_files:
        found.put("deployment", "compose_file", container.compose_files, f"{where}: its Compose label")
    else:
        script = f'"{scripts[0]}"' if scripts else '"/path/launch.sh"'
        found.missing(
            "deployment", "launch",
            f"{container.name} runs, started without Compose: launch = {{ script = {script} }} (the script that "
            "starts it on every node, each node's launch.args)"
            + (f"; launch scripts naming vLLM on rank 0: {', '.join(scripts)}" if scripts else ""),
        )  # fmt: skip
    deployment: dict[str, Any] = {"container": container.name, "image": container.image, "hf_cache": "-"}
    if container.compose_files:
        deployment["compose_file"] = container.compose_files
    else:
        deployment["launch"] = {"script": "/-"}  # a stand-in: the running plan reads the container, not a script
    return _from_plan(found, deployment, running=True)


def _from_plan(found: Found, deployment: str | dict[str, Any], *, running: bool = False) -> str | None:
    from gb10check.commands.plan import plans

    if isinstance(deployment, str):
        deployment = {"compose_file": deployment, "container": "-", "image": "-", "hf_cache": "-"}
    data = {
        **{k: v for k, v in found.data.items() if k not in ("service", "deployment")},
        "deployment": deployment,
    }
    if TODO in data.get("control", {}).values() or ("control" not in data and found.data["cluster"].get("topology")
                                                     in ("ring", "switch")):  # fmt: skip
        # a stand-in to read the plan with (the plan's NCCL_SOCKET_IFNAME may name the control plane)
        rails = found.data.get("rails") or [{}]
        first = rails[0].get("netdev") or (rails[0].get("members") or [{"netdev": "lo"}])[0]["netdev"]
        data["control"] = {"netdev": first}
    try:
        inventory = inv.Inventory.model_validate(data)
    except Exception as exc:  # the fabric made no valid inventory (already said in its TODO lines)
        found.notes.append(f"the launch plan was not read: the fabric found is not yet an inventory ({exc})")
        return _unread(found, "the fabric found is not yet an inventory")
    assert inventory.deployment is not None
    if not running:  # the container is what init looks for: the compose's only service is the one
        inventory = inventory.model_copy(
            update={"deployment": inventory.deployment.model_copy(update={"container": None})}
        )
    rank0 = inventory.by_rank(0).name
    report = plans(inventory, running=running, offline=False, only=[rank0])[0]
    if report.plan is None:
        return _unread(found, f"rank 0's launch plan could not be read: {report.error}")
    plan, where = report.plan, f"{rank0}'s launch plan (read by {report.plan.read_by})"
    _put_setting(found, "deployment", "container", plan.container_name.value, where)
    _put_setting(found, "deployment", "image", plan.image.value, where)
    hub = [m.source for m in plan.container.mounts if m.target.rstrip("/") in HF_TARGETS and m.kind == "bind"]
    if hub:
        found.put("deployment", "hf_cache", hub[0], f"{where}: the bind onto {HF_TARGETS[0]}")
    else:
        found.missing("deployment", "hf_cache", f"{where} binds no host folder onto {HF_TARGETS[0]}")
    try:
        vllm = plan.vllm
        model = vllm.model_name
        options = {o: vllm.value(o) for o in ("--served-model-name", "--port", "--max-model-len")}
        parsers = {o: vllm.value(o) for o in ("--reasoning-parser", "--tool-call-parser")}
        keyed = vllm.has("--api-key")
    except GB10Error as exc:
        return _unread(found, f"{where}: {exc}", keep_deployment=True)
    _put_setting(found, "service", "model", model, f"{where}: the model `vllm serve` loads")
    served = options["--served-model-name"] or model
    _put_setting(found, "service", "served_model_name", served, f"{where}: --served-model-name, else the model")
    port = options["--port"] or str(VLLM_PORT)
    found.put("service", "base_url", f"http://localhost:{port}", f"{where}: --port (init runs on rank 0)")
    length = _length(options["--max-model-len"])
    if length is not None:
        found.put("service", "max_model_len", length, f"{where}: --max-model-len {options['--max-model-len']}")
    elif options["--max-model-len"]:
        found.missing(
            "service", "max_model_len", f"{where}: --max-model-len {options['--max-model-len']} is not a length"
        )
    else:
        found.missing("service", "max_model_len", f"{where} gives no --max-model-len (vLLM takes the model's own)")
    for option, key in (("--reasoning-parser", "reasoning_parser"), ("--tool-call-parser", "tool_call_parser")):
        if parsers[option]:
            found.put("service", key, parsers[option], f"{where}: {option}")
    if keyed or "VLLM_API_KEY" in plan.environment:
        found.put("service", "api_key_env", "VLLM_API_KEY", f"{where} sets an API key: export it before a run")
    ifname = plan.environment.get("NCCL_SOCKET_IFNAME")
    value = ifname.value if ifname is not None else None
    return value if isinstance(value, str) and value else None


def _length(text: str | None) -> int | None:
    """--max-model-len as vLLM reads it: a number, or with k/m (x1000) or K/M (x1024), e.g. 32k, 1M."""
    if not text:
        return None
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmM]?)", text.strip())
    if not match:
        return None
    scale = {"": 1, "k": 1000, "m": 1000**2, "K": 1024, "M": 1024**2}[match[2]]
    value = float(match[1]) * scale
    return int(value) if value >= 1 and value == int(value) else None


def _put_setting(found: Found, table: str, key: str, value: object, where: str) -> None:
    if isinstance(value, str) and value:
        found.put(table, key, value, where)
    else:
        found.missing(table, key, f"{where} does not set it (or it is decided at start)")


def _unread(found: Found, why: str, *, keep_deployment: bool = False) -> str | None:
    keys = [] if keep_deployment else [("deployment", k) for k in ("container", "image", "hf_cache")]
    for table, key in [*keys, *(("service", k) for k in ("served_model_name", "model", "max_model_len"))]:
        if key not in found.data.get(table, {}):
            found.missing(table, key, why)
    found.data.setdefault("service", {}).setdefault("base_url", f"http://localhost:{VLLM_PORT}")
    return None


_UNREAD_PREFIX = re.compile(r"^rank\d+ \([^)]*\): ")  # the transport's "NAME (WHERE): ": said once, as typed


def discovered(hosts: Sequence[str], opts: argparse.Namespace) -> tuple[Found, discover.Fabric]:
    """Every node read, the inventory made of what they said (GB10Error: a node could not be read)."""
    snaps = read_nodes(hosts, opts)
    failed = [
        f"{h} (rank {rank}): {_UNREAD_PREFIX.sub('', str(s.error))}"
        for rank, (h, s) in enumerate(zip(hosts, snaps, strict=True))
        if s.error is not None
    ]
    if failed:
        raise InventoryError(
            "cannot read every node:\n  "
            + "\n  ".join(neutralise(f) for f in failed)
            + "\nName each node as this machine reaches it over SSH (a name or an address, USER@HOST or --user), "
            "then run again"
        )
    read = [reading_of(s, h) for s, h in zip(snaps, hosts, strict=True)]
    readings, compose_files = [r for r, _ in read], [c for _, c in read]
    names = _named(readings)
    fabric = discover.infer(readings, names)
    found = Found()
    found.put("cluster", "name", opts.name or f"{names[0]}-cluster", "--name" if opts.name else "rank 0's hostname")
    nodes_table(found, names, hosts, opts)
    fabric_tables(found, fabric, readings)
    control_table(found, fabric, readings, None)  # the LAN's, until the launch plan names it
    scripts = snaps[0].fact(LAUNCH_SCRIPTS)
    ifname = deployment_tables(found, compose_files, names, running_vllm(snaps[0]), scripts)
    named = _named_netdev(ifname, readings) if ifname is not None else None
    if named is not None:
        found.data.pop("control", None)
        found.todo = [t for t in found.todo if not t.startswith("[control]")]
        control_table(found, fabric, readings, named)
    elif ifname is not None:
        found.notes.append(
            f"rank 0's NCCL_SOCKET_IFNAME={ifname} names no one netdev every node has (an exclude list, or a prefix "
            "of several): the control plane written is init's guess; check it"
        )
    return found, fabric


# -- writing ------------------------------------------------------------------------------------------
ORDER = ("cluster", "ssh", "nodes", "control", "rails", "service", "deployment")
HEADER = """\
# gb10check inventory, written by `gb10check init` on {when} (read-only discovery). Every value says
# where it came from; a TODO line is what init could not find: the suite refuses this file until each
# is filled. Keys it did not write keep their defaults (see the examples beside cluster.example.toml).
"""


def _value(value: object) -> str:
    """A value as TOML writes it, a table inline (`{ a = "x", b = 1 }`: tomli_w quotes and escapes)."""
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }"
    return tomli_w.dumps({"v": value}).split("=", 1)[1].strip()


def _key(key: str) -> str:
    return tomli_w.dumps({key: 0}).rsplit("=", 1)[0].strip()


def _comment(text: str) -> str:
    return neutralise(text).replace("\n", " ")


def render(found: Found, when: str) -> str:
    """The inventory as TOML with a comment per value (node text in comments neutralised, values quoted)."""
    lines = [HEADER.format(when=when)]
    for note in found.notes:
        lines.append(f"# found: {_comment(note)}")
    if found.notes:
        lines.append("")
    for table in ORDER:
        if table not in found.data:
            continue
        value = found.data[table]
        if table == "nodes":
            for entry in value:
                lines += ["[[nodes]]", *(f"{k} = {_value(v)}" for k, v in entry.items()), ""]
            continue
        if table == "rails":
            for rail in value:
                lines.append("[[rails]]")
                for k, v in rail.items():
                    if k == "members":
                        lines += ["members = [", *(f"  {_value(m)}," for m in v), "]"]
                    else:
                        lines.append(f"{k} = {_value(v)}")
                lines.append("")
            continue
        lines.append(f"[{table}]")
        for key, v in value.items():
            source = found.sources.get(f"{table}.{key}", "")
            mark = "TODO: " if v == TODO else ""
            lines.append(f"{key} = {_value(v)}" + (f"  # {mark}{_comment(source)}" if source else ""))
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


# -- drift --------------------------------------------------------------------------------------------
def differences(found: Found, fabric: discover.Fabric, existing: inv.Inventory) -> list[str]:
    """What the cluster is now against what the inventory says: nodes, topology, rails, cable order, control."""
    out: list[str] = []
    names = [n["name"] for n in found.data["nodes"]]
    had = [n.name for n in sorted(existing.nodes, key=lambda n: n.rank)]
    out += [f"node {n} answers but is not in the inventory" for n in names if n not in had]
    out += [f"node {n} is in the inventory but was not read (not given, or renamed)" for n in had if n not in names]
    hosts = {n["name"]: n.get("host") for n in found.data["nodes"]}
    out += [
        f"node {n.name} is reached at {hosts[n.name]}; the inventory has host {n.host}"
        for n in existing.nodes
        if n.name in hosts and hosts[n.name] is not None and n.host is not None and hosts[n.name] != n.host
    ]
    two = len(names) == 2 and {fabric.topology, existing.topology} <= {"pair", "switch"}  # two nodes: either
    if fabric.topology != existing.topology and not two:
        out.append(f"topology: the inventory says {existing.topology}, the rails make {fabric.topology or 'none'}")
    now = {
        r.subnet: {(m.node, f"{m.port.netdev} ({m.port.rdma_device})", m.port.address) for m in r.members}
        for r in fabric.rails
    }
    then = {
        str(r.subnet): {
            (m.node, f"{m.netdev} ({m.rdma_device})", str(ipaddress.ip_interface(m.address))) for m in r.members
        }
        for r in existing.rails
    }
    for subnet in sorted(set(now) | set(then)):
        a, b = then.get(subnet, set()), now.get(subnet, set())
        if a == b:
            continue
        if not a:
            out.append(f"a rail on {subnet} is new: {_ends(b)}")
        elif not b:
            out.append(f"the rail on {subnet} is gone: the inventory has {_ends(a)}")
        else:
            out.append(f"the rail on {subnet} changed: the inventory has {_ends(a - b)}, the cluster {_ends(b - a)}")
    if existing.topology == "ring" and fabric.topology == "ring":
        then_cables = {frozenset(r.nodes) for r in existing.rails}  # which nodes a cable joins, not the file's order
        now_cables = {frozenset(c) for c in fabric.cables}
        if then_cables != now_cables:
            out.append(
                "the ring's cables moved: the inventory joins "
                + ", ".join(sorted("-".join(sorted(c)) for c in then_cables - now_cables))
                + "; the cluster "
                + ", ".join(sorted("-".join(sorted(c)) for c in now_cables - then_cables))
            )
    control = found.data.get("control", {}).get("netdev")
    if control not in (None, TODO) and control != existing.control_netdev(existing.api_node.name):
        said = found.sources.get("control.netdev", "init's reading")
        out.append(f"the control plane: the inventory has {existing.control_netdev(existing.api_node.name)}, "
                   f"{said} says {control}")  # fmt: skip
    compose = found.data.get("deployment", {}).get("compose_file")
    was = existing.deployment.compose_file if existing.deployment is not None else None
    if compose not in (None, TODO) and was is not None and compose != was:  # (a launch script's deployment: no compose)
        out.append(f"the compose file: the inventory has {was}, rank 0 has {compose}")
    return [neutralise(line) for line in out]


def _ends(ends: set[tuple[str, str, str]] | set[tuple[str, str, str | None]]) -> str:
    return ", ".join(f"{node} {netdev} {address}" for node, netdev, address in sorted(ends, key=str)) or "nothing"


# -- the command --------------------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="gb10check init",
        description="Discover the cluster (read-only) and write its inventory, every value with where it came "
        "from; with an inventory at the path, print how the cluster differs from it.",
        epilog="examples:\n  gb10check init                                 (on rank 0: the others found on the fabric)"
        "\n"
        "  gb10check init spark-02 spark-03 spark-04      (on rank 0, the others named in rank order)\n"
        "  gb10check init --check nvidia@spark-02          (a nightly's drift check: exit 1 on a difference)\n\n"
        "exit status: 0 written, or no difference; 1 the cluster differs from the inventory; 4 a node could not be\n"
        "read, the inventory there is unreadable, or the path unwritable",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "hosts",
        nargs="*",
        metavar="[USER@]HOST",
        help="the other nodes, in rank order (rank 0: this one); none: those that answer on the fabric",
    )
    p.add_argument("--single", action="store_true", help="a cluster of this one node (no other nodes to name)")
    p.add_argument("--rank0", metavar="[USER@]HOST", help="read rank 0 over SSH too, at this address")
    p.add_argument("--output", "-o", metavar="PATH", default="cluster.toml", help="where (default ./cluster.toml)")
    p.add_argument("--check", action="store_true", help="only compare with the inventory at --output; never write")
    p.add_argument("--name", help="the cluster's name (default: rank 0's hostname and -cluster)")
    p.add_argument("--user", help="the SSH user for every node (USER@HOST for one)")
    p.add_argument("--port", type=int, help="the SSH port for every node")
    p.add_argument("--key", metavar="PATH", help="the SSH key (default: the agent and ~/.ssh)")
    p.add_argument("--known-hosts", metavar="PATH", help="the known_hosts file (default: ~/.ssh/known_hosts)")
    p.add_argument("--accept-new", action="store_true", help="record unknown host keys (reject changed ones)")
    p.add_argument("--no-ssh-config", action="store_true", help="ignore ~/.ssh/config")
    p.add_argument("--connect-timeout", type=float, default=5.0, metavar="SECONDS")
    p.add_argument("--command-timeout", type=float, default=10.0, metavar="SECONDS")
    return p


def main(args: list[str], print_: Callable[[str], object] = sys.stdout.write, when: str | None = None) -> int:
    from datetime import UTC, datetime

    parser = _parser()
    opts = parser.parse_args(args)
    out = Path(opts.output).expanduser()
    hosts = [opts.rank0 or "local", *opts.hosts]
    existing: inv.Inventory | None = None
    if out.exists() or opts.check:
        try:
            existing = inv.load_inventory(out, "--output")
        except InventoryError as exc:  # init compares with what is there, never writes over it
            print(
                f"gb10check init: {neutralise(str(exc))}\ninit compares the cluster with the inventory at {out} and "
                "never writes over it: fix it, move it away, or write elsewhere with -o PATH",
                file=sys.stderr,
            )
            return 4
    try:
        sweep_notes: list[str] = []
        if not opts.hosts and not opts.single:  # none named: the nodes that answer on the fabric
            hosts, sweep_notes = found_on_the_fabric(opts)
        found, fabric = discovered(hosts, opts)
        found.notes[:0] = sweep_notes
    except GB10Error as exc:  # a node that cannot be read: set-up, not drift
        print(f"gb10check init: {neutralise(str(exc))}", file=sys.stderr)
        return 4
    if existing is not None:
        diff = differences(found, fabric, existing)
        if not diff:
            print_(f"{out}: the cluster is as the inventory says ({len(hosts)} nodes, {fabric.topology})\n")
            return 0
        print_(f"{out}: the cluster differs from the inventory ({len(diff)}); it was not changed:\n")
        print_("".join(f"  - {d}\n" for d in diff))
        return 1
    stamp = when or datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    text = render(found, stamp)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("x", encoding="utf-8") as fh:  # never over a file that appeared meanwhile
            fh.write(text)
    except OSError as exc:
        print(f"gb10check init: cannot write {out}: {exc.strerror or exc}", file=sys.stderr)
        return 4
    shown = posixpath.relpath(out) if not out.is_absolute() else str(out)
    print_(f"wrote {shown}: {len(hosts)} nodes, {fabric.topology or 'no topology'}, {len(fabric.rails)} rails\n")
    for note in found.notes:
        print_(f"  found: {neutralise(note)}\n")
    if found.todo:
        print_(f"  {len(found.todo)} TODO line(s) to fill before the suite reads it:\n")
        print_("".join(f"    {neutralise(t)}\n" for t in found.todo))
    else:
        print_(f"  next: gb10check preflight --cluster {shown}\n")
    return 0
