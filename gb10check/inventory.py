"""cluster.toml -> a typed, validated model of the cluster.

Errors name the file, the key and what to write; unknown keys are errors (a typo must not
silently fall back to a default).
"""

from __future__ import annotations

import ipaddress
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gb10check import topology
from gb10check.errors import GB10Error, InventoryError, clip
from gb10check.reporting import history as hist
from gb10check.textfile import read_text

__all__ = [
    "DEFAULT_PATH",
    "ENV_VAR",
    "EXAMPLE",
    "MISSING_HELP",
    "NAME",
    "TOLERANCE_GONE",
    "ApiSpec",
    "Cluster",
    "Control",
    "Deployment",
    "HistoryRules",
    "Inventory",
    "Launch",
    "Member",
    "NcclTests",
    "Node",
    "Rail",
    "RuleSettings",
    "SecretShape",
    "SshSettings",
    "Thresholds",
    "Topology",
    "default_path",
    "load_inventory",
    "parse_inventory",
    "validation_problems",
]

ENV_VAR = "GB10_CLUSTER"
DEFAULT_PATH = "cluster.toml"
EXAMPLE = "fixtures/cluster.example.toml"


NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"  # a node, netdev, RDMA device or rail name


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class SshSettings(_Strict):
    connect_timeout: float = Field(5.0, gt=0, le=120)
    host_key_policy: Literal["known_hosts", "accept-new"] = "known_hosts"
    known_hosts: str | None = None  # default: ~/.ssh/known_hosts and the system file
    use_ssh_config: bool = True
    boot_timeout: float = Field(600.0, gt=0, le=7200)  # --after-boot: how long every node gets to answer SSH


class Launch(_Strict):
    """How a node starts its rank, as its launcher does it: `[deployment] launch = {...}` for every node,
    `launch = {...}` on a node for its own (its keys win, its env is added). Each key is optional."""

    service: str | None = None  # the compose service the node starts (`docker compose up -d SERVICE`)
    # the launcher's shell variables, which docker compose interpolates (`NODE_RANK=1 HEADLESS=1 docker compose up`)
    env: dict[str, str] = {}
    env_file: str | None = None  # the env file the node's compose reads (`--env-file`), when not the deployment's
    script: str | None = None  # a launch script on the node (docker run, Ray, docker compose), read with bash's grammar
    args: list[str] = []  # the script's arguments, as the operator runs it
    # the node the script is on and run from, where that is another node: a head's script that starts this
    # node's container over SSH (`ssh WORKER "docker run ..."`); read there, what it sends this node is its plan
    runs_on: str | None = Field(None, pattern=NAME)


class Node(_Strict):
    name: str = Field(pattern=NAME)
    rank: int = Field(ge=0)
    transport: Literal["ssh", "local"] = "ssh"
    host: str | None = None
    port: int | None = Field(None, ge=1, le=65535)
    user: str | None = None
    key: str | None = None
    sudo: bool = True  # may the suite use `sudo -n` for root-only reads on this node
    launch: Launch | None = None  # how this node starts its rank, where it differs from [deployment] launch

    @model_validator(mode="after")
    def _ssh_needs_host(self) -> Node:
        if self.transport == "ssh" and not self.host:
            raise ValueError("transport 'ssh' needs host = \"<address or ssh_config alias>\"")
        return self


Topology = Literal["single", "pair", "ring", "switch"]


def _interface(where: str, value: str) -> ipaddress.IPv4Interface | ipaddress.IPv6Interface:
    try:
        interface = ipaddress.ip_interface(value)
    except ValueError as exc:
        raise ValueError(f'{where} = {value!r} is not an address/prefix like "169.254.94.252/16"') from exc
    if "/" not in value:
        raise ValueError(f'{where} = {value!r} needs a prefix length, like "{value}/16"')
    return interface


class Member(_Strict):
    """One node's end of a rail: its netdev, its RDMA device and its address there."""

    node: str
    netdev: str = Field(pattern=NAME)
    rdma_device: str = Field(pattern=NAME)
    address: str  # "address/prefix"

    @field_validator("address")
    @classmethod
    def _cidr(cls, value: str) -> str:
        _interface("address", value)
        return value

    @property
    def ip(self) -> str:
        """The address without its prefix length."""
        return str(ipaddress.ip_interface(self.address).ip)


class Rail(_Strict):
    """One L2 segment and subnet of the fabric with two or more members: one half of a direct cable
    (a pair, a ring's neighbours) or one half of every node's port on a switch.

    Written in one of two forms: `netdev`, `rdma_device` and `addresses = {node = "addr/prefix"}`
    when every member names them alike (the pair's [[links]]), or `members = [{node, netdev,
    rdma_device, address}]` when they differ (a ring's cable joins port 0 of one node to port 1 of
    the next); `name` defaults to the common netdev."""

    name: str = Field(pattern=NAME)
    members: tuple[Member, ...] = Field(strict=False)  # a tuple: a rail is hashable (a test parameter)
    gid_index: int = Field(3, ge=0)
    mtu: int | None = Field(None, ge=576, le=9216)  # every member must have it, when set
    rate_gbps: float = Field(200.0, gt=0)  # the rate each member's RDMA port must have negotiated
    # ib_write_bw's average, Gb/s: the lowest healthy figure published for one half of a GB10 cable
    # (NVIDIA's guide: 92.57) less run-to-run noise; the field report's tuned pair reached 109
    min_gbps: float = Field(90.0, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _written(cls, data: Any) -> Any:
        """Either form as written -> members; the name from the common netdev."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        netdev, device, addresses = data.pop("netdev", None), data.pop("rdma_device", None), data.pop("addresses", None)
        if addresses is not None and "members" in data:
            raise ValueError("give either addresses = {node = ...} or members = [...], not both")
        if addresses is not None:
            if not isinstance(addresses, dict):
                raise ValueError('addresses must be a table: { node-a = "addr/prefix", node-b = "addr/prefix" }')
            for node, value in addresses.items():
                if not isinstance(value, str):
                    raise ValueError(f'addresses.{node} must be a string like "169.254.94.252/16"')
                _interface(f"addresses.{node}", value)
            data["members"] = [{"node": n, "address": a} for n, a in addresses.items()]
        members = data.get("members")
        if not isinstance(members, list):
            raise ValueError(
                'needs its members: addresses = { node-a = "addr/prefix", ... } with netdev and rdma_device, '
                "or members = [{ node, netdev, rdma_device, address }, ...]"
            )
        filled = []
        for i, member in enumerate(members):
            if not isinstance(member, dict):
                raise ValueError(f"members[{i}] must be a table {{ node, netdev, rdma_device, address }}")
            member = dict(member)
            for key, default in (("netdev", netdev), ("rdma_device", device)):
                if key not in member:
                    if default is None:
                        raise ValueError(
                            f"members[{i}] ({member.get('node', '?')}) names no {key}, and the rail gives none"
                        )
                    member[key] = default
            filled.append(member)
        data["members"] = filled
        if len(filled) < 2:
            raise ValueError(
                f"a rail joins two or more nodes; this one has {len(filled)} "
                f"({', '.join(str(m.get('node')) for m in filled) or 'none'})"
            )
        if "name" not in data:
            netdevs = {m.get("netdev") for m in filled}
            if len(netdevs) != 1:
                shown = ", ".join(f"{m.get('node')} {m.get('netdev')}" for m in filled)
                raise ValueError(
                    f"its members are on different netdevs ({shown}): give the rail a name, "
                    'e.g. name = "c0a" (cable 0, first half)'
                )
            data["name"] = netdevs.pop()
        return data

    @model_validator(mode="after")
    def _one_subnet(self) -> Rail:
        nodes = [m.node for m in self.members]
        twice = sorted({n for n in nodes if nodes.count(n) > 1})
        if twice:
            raise ValueError(f"rail {self.name} lists {', '.join(twice)} twice: one member per node")
        networks = {str(ipaddress.ip_interface(m.address).network) for m in self.members}
        if len(networks) > 1:
            shown = ", ".join(f"{m.node} {m.address}" for m in self.members)
            raise ValueError(
                f"rail {self.name} is one subnet, but its members' addresses are on {len(networks)}: {shown}"
            )
        return self

    def member(self, node: str) -> Member | None:
        return next((m for m in self.members if m.node == node), None)

    def ip(self, node: str) -> str:
        """The node's address on this rail, without the prefix length."""
        member = self.member(node)
        if member is None:
            raise KeyError(f"{node} is not on rail {self.name}")
        return member.ip

    @property
    def nodes(self) -> list[str]:
        return [m.node for m in self.members]

    @property
    def subnet(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        return ipaddress.ip_interface(self.members[0].address).network

    def pairs(self) -> list[tuple[Member, Member]]:
        """Every two members that talk over this rail (a switch: all of them), in member order."""
        return [(a, b) for i, a in enumerate(self.members) for b in self.members[i + 1 :]]


class Control(_Strict):
    """[control]: the control plane. The interface NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME and the
    master address use: a rail's netdev on a pair (the seed's enp1s0f0np0), usually the LAN port on
    a ring or a switch (enP7s7)."""

    netdev: str = Field(pattern=NAME)
    addresses: dict[str, str] = {}  # node -> address/prefix, when the netdev is not a rail's

    @field_validator("addresses")
    @classmethod
    def _cidr(cls, value: dict[str, str]) -> dict[str, str]:
        for node, addr in value.items():
            _interface(node, addr)
        return value


class ApiSpec(_Strict):
    """[service]: the API rank 0 serves, as clients call it."""

    base_url: str = Field(pattern=r"^https?://")
    served_model_name: str
    model: str
    max_model_len: int = Field(gt=0)
    api_key_env: str | None = None
    reasoning_parser: str | None = None  # the --reasoning-parser rank 0 must run with, if any
    tool_call_parser: str | None = None  # the --tool-call-parser rank 0 must run with, if any
    # output tokens/s of one streamed request alone, as `vllm bench serve` computes it; the field report
    # measured 22.62 (eager) and 23.32 (decode CUDA graphs) with its count-to-80 prompt
    min_decode_tokens_per_s: float = Field(20.0, gt=0)
    request_timeout: float = Field(60.0, gt=0, le=3600)  # one request, all of it (a stream read to its end)
    connect_timeout: float = Field(5.0, gt=0, le=120)
    read_timeout: float = Field(15.0, gt=0, le=3600)  # the longest a stream may go silent
    max_concurrent_requests: int = Field(64, ge=1, le=1024)  # the load check's cap on --max-num-seqs
    # --after-boot's wait for /health when --wait-ready is not given: weights load in ~850 s on the slower node
    ready_timeout: float = Field(1200.0, gt=0, le=7200)


class Deployment(_Strict):
    compose_file: str | None = None  # the compose file every node starts (absent: a launch script starts them)
    env_file: str | None = None  # the .env beside it (absent: the compose folder's .env, if it has one)
    container: str
    image: str
    hf_cache: str
    launch: Launch = Launch()
    # whether NCCL must run with GPU Direct RDMA on every HCA (the service stage reads NCCL's own word on it);
    # unset: not asked (GB10's inbox rdma-core often runs without it: recorded, never failed)
    gpu_direct_rdma: bool | None = None

    @model_validator(mode="after")
    def _started_somehow(self) -> Deployment:
        if self.compose_file is None and self.launch.script is None:
            raise ValueError(
                'say how the nodes start vLLM: compose_file = "/path/compose.yml", or launch = { script = '
                '"/path/launch.sh" } (a docker run, Ray or docker compose launcher, read with bash\'s grammar)'
            )
        return self

    @property
    def compose_dir(self) -> str | None:
        return None if self.compose_file is None else (self.compose_file.rsplit("/", 1)[0] or "/")

    @property
    def dotenv(self) -> str | None:
        """The .env the compose is interpolated with: the deployment's, else the compose folder's."""
        if self.env_file is not None:
            return self.env_file
        return None if self.compose_dir is None else f"{self.compose_dir.rstrip('/')}/.env"


class Thresholds(_Strict):
    command_timeout: float = Field(10.0, gt=0, le=600)
    nvidia_smi_timeout: float = Field(10.0, gt=0, le=600)
    docker_run_timeout: float = Field(120.0, gt=0, le=1800)
    min_mem_available_gib: float = Field(100.0, ge=0)
    stop_mem_available_gib: float = Field(5.0, ge=0)
    max_swap_used_gib: float = Field(1.0, ge=0)  # before start: swap in use means memory pressure already
    container_headroom_gib: float = Field(8.0, ge=0)
    min_distributed_timeout_s: float = Field(1800.0, gt=0)
    # each ib_write_bw run (-D): whole seconds, as perftest reads it (strtol: 2.5 runs 2 s, 0.5 refuses to run)
    bandwidth_seconds: int = Field(5, ge=1, le=600)
    # run ib_write_bw while the deployment's container runs (it competes with NCCL for the links): for
    # a cluster whose deployment runs but serves nobody (a test window); --bandwidth does it for one run
    bandwidth_while_serving: bool = False
    # NCCL in the serving image (tests_network/test_collective.py): each rank as it will run, every node at once
    collective: bool = True  # false: not run (the check skips, saying so)
    collective_join_timeout: float = Field(60.0, gt=0, le=1800)  # every rank joins within this (torch's timeout)
    collective_timeout: float = Field(180.0, gt=0, le=3600)  # the whole run, every node; then each is removed
    collective_max_buffer_gib: float = Field(1.0, gt=0, le=16)  # the largest buffer, also within MemAvailable / 8


class NcclTests(_Strict):
    """[nccl_tests]: an NCCL collective between the nodes with nccl-tests (optional; absent: skipped)."""

    # what runs the collective from rank 0, as the site runs it (mpirun -np 2 -H ... all_gather_perf);
    # gb10check adds -b SIZE -e SIZE -f 2 -g 1 with SIZE bounded by the nodes' MemAvailable
    command: str = Field(min_length=1)
    # GB/s of bus bandwidth; unset: NVIDIA's all_gather minimum for the topology (topology.nccl_busbw_floor:
    # 21.875 direct or through a switch, 10 on a ring)
    min_busbw_gbs: float | None = Field(None, gt=0)
    max_buffer_gib: float = Field(4.0, gt=0, le=64)  # never more (a 16 GiB buffer has frozen a node)
    timeout: float = Field(300.0, gt=0, le=3600)


TOLERANCE_GONE = (
    "history.tolerance is no longer read: a fixed band failed healthy runs whose figures vary more than it. "
    "Each figure is now judged against the spread of its own history (spreads = {spreads}: how many spreads "
    "worse than its median it may be), within a floor and a ceiling per kind of figure (fractions of the median; "
    "{kinds}). Delete tolerance; to keep a fixed band of {tolerance} for every figure anyway, write "
    "floor = {{ {same} }} and ceiling = {{ {same} }}"
)


class HistoryRules(_Strict):
    """[history]: how --history=DIR keeps runs and judges trends (gb10check/reporting/history.py)."""

    keep: int = Field(60, ge=1, le=10000)  # runs kept in DIR (the oldest go first)
    window: int = Field(hist.DEFAULT_WINDOW, ge=1, le=365)  # the median and spread of the last this-many runs
    min_runs: int = Field(hist.DEFAULT_MIN_RUNS, ge=1, le=365)  # fewer earlier runs: too little history
    # a figure may be this many spreads of its history worse than its median (within its kind's floor and ceiling)
    spreads: float = Field(hist.DEFAULT_SPREADS, gt=0, le=100)
    floor: dict[str, float] = {}  # kind -> the least it may be worse, a fraction of the median (default: KINDS)
    ceiling: dict[str, float] = {}  # kind -> the most it may be worse: a drop beyond fails whatever the spread

    @model_validator(mode="before")
    @classmethod
    def _tolerance_gone(cls, data: Any) -> Any:
        if isinstance(data, dict) and "tolerance" in data:
            kinds = ", ".join(f"{k.name} {k.floor:g}..{k.ceiling:g}" for k in hist.KINDS)
            same = ", ".join(f"{k.name} = {data['tolerance']!r}" for k in hist.KINDS)
            spreads = data.get("spreads", hist.DEFAULT_SPREADS)
            raise ValueError(
                TOLERANCE_GONE.format(spreads=spreads, kinds=kinds, tolerance=data["tolerance"], same=same)
            )
        return data

    @model_validator(mode="after")
    def _bands(self) -> HistoryRules:
        names = [k.name for k in hist.KINDS]
        for table, values in (("floor", self.floor), ("ceiling", self.ceiling)):
            for name, value in values.items():
                if name not in names:
                    raise ValueError(f"{table}: unknown kind of figure {name!r}; the kinds: {', '.join(names)}")
                if value <= 0:
                    raise ValueError(f"the {table} of {name} must be above 0 (found {value!r})")
        rules = self.judging()
        for kind in hist.KINDS:
            floor, ceiling = rules.floor[kind.name], rules.ceiling[kind.name]
            if kind.sign > 0 and ceiling >= 1:
                raise ValueError(
                    f"the ceiling of {kind.name} must be below 1 (found {ceiling!r}): a figure where higher is "
                    "better cannot fall by all of its median or more, so it would never fail"
                )
            if floor > ceiling:
                raise ValueError(f"the floor of {kind.name} ({floor!r}) is above its ceiling ({ceiling!r})")
        return self

    def judging(self) -> hist.Rules:
        """The rules gb10check/reporting/history.py judges by: the defaults per kind, with this table's own."""
        defaults = hist.Rules()
        return hist.Rules(
            window=self.window,
            min_runs=self.min_runs,
            spreads=self.spreads,
            floor={**defaults.floor, **self.floor},
            ceiling={**defaults.ceiling, **self.ceiling},
        )


class RuleSettings(_Strict):
    """[rules]: how the launch plan's rules judge (gb10check/deployment/launch/rules.py). An advisory (it works
    and costs speed) is a failure only for the rules `strict` names (or every rule: strict = ["all"])."""

    strict: list[str] = []

    def is_strict(self, rule: str) -> bool:
        return "all" in self.strict or rule in self.strict


class Cluster(_Strict):
    name: str = "gb10"
    # single: one node (no fabric); pair: two nodes, direct cables; ring: 3-8 nodes, each cabled to two
    # neighbours; switch: 2-8 nodes, every node on every rail. Omitted: single or pair by the node count.
    topology: Topology | None = None
    tensor_parallel_size: int = Field(2, ge=1)
    # a switch cabled on one half of each port only: said on purpose (one rail carries half a port's bandwidth)
    rails: int | None = Field(None, ge=1, le=2)


class SecretShape(_Strict):
    """[[secret_shapes]]: a site's own token kind, masked wherever it stands (an internal token prefix).
    Written as its prefix, the characters that follow it and how many at least: a regex built from those
    is linear by construction (a regex of the site's own could make every masking call hang)."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    prefix: str = Field(min_length=3, max_length=64)
    alphabet: str = Field("A-Za-z0-9_-", pattern=r"^[A-Za-z0-9_.+/=-]+$")  # the inside of a bracket expression
    length: int = Field(16, ge=8, le=4096)  # at least this many characters after the prefix

    @property
    def regex(self) -> str:
        return f"{re.escape(self.prefix)}[{self.alphabet}]{{{self.length},}}+"


class Inventory(_Strict):
    cluster: Cluster = Cluster()
    ssh: SshSettings = SshSettings()
    nodes: list[Node] = Field(min_length=1)
    rails: list[Rail] = []
    control: Control | None = None
    service: ApiSpec | None = None
    deployment: Deployment | None = None
    thresholds: Thresholds = Thresholds()
    history: HistoryRules = HistoryRules()
    nccl_tests: NcclTests | None = None
    rules: RuleSettings = RuleSettings()
    secret_shapes: list[SecretShape] = []
    source: str = Field("<memory>", exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _links_are_rails(cls, data: Any) -> Any:
        """[[links]], the pair's older name for [[rails]], is read as it."""
        if isinstance(data, dict) and "links" in data:
            if "rails" in data:
                raise ValueError("give the fabric as [[rails]] or as [[links]] (its older name), not both")
            data = {**data, "rails": data["links"]}
            del data["links"]
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Inventory:
        names = [n.name for n in self.nodes]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"node names must be unique; repeated: {', '.join(dupes)}")
        ranks = sorted(n.rank for n in self.nodes)
        if ranks != list(range(len(ranks))):
            raise ValueError(f"node ranks must be 0..{len(ranks) - 1}, each once; found {ranks}")
        rank = {n.name: n.rank for n in self.nodes}
        problems: list[str] = []
        for rail in self.rails:
            unknown = sorted({m.node for m in rail.members} - set(names))
            if unknown:
                problems.append(f"rail {rail.name} names unknown node(s) {unknown}; the nodes are {names}")
        if problems:
            raise ValueError(_lines(problems))
        # each rail's members in rank order: ids, reports and bandwidth pairs read lower rank first
        rails = [
            r.model_copy(update={"members": tuple(sorted(r.members, key=lambda m: rank[m.node]))}) for r in self.rails
        ]
        object.__setattr__(self, "rails", rails)
        problems += _rail_problems(rails)
        if self.cluster.topology is None and len(self.nodes) > 2:
            raise ValueError(
                f'say the cluster\'s shape: [cluster] topology = "ring" or "switch" ({len(self.nodes)} nodes; '
                "fixtures/cluster.ring.example.toml and cluster.switch.example.toml show each)"
            )
        by_rank = [n.name for n in sorted(self.nodes, key=lambda n: n.rank)]
        problems += topology.problems(self.topology, by_rank, [(r.name, r.nodes) for r in rails])
        problems += self._control_problems()
        problems += self._rail_count_problems()
        problems += self._runs_on_problems()
        if problems:
            raise ValueError(_lines(problems))
        return self

    def _runs_on_problems(self) -> list[str]:
        problems = []
        for n in self.nodes:
            launch = self.launch_of(n.name)
            if launch.runs_on is None:
                continue
            where = f"nodes {n.name}: launch.runs_on = {launch.runs_on!r}"
            if launch.runs_on == n.name:
                problems.append(f"{where} names the node itself: leave runs_on out for a script the node runs")
            elif launch.runs_on not in {m.name for m in self.nodes}:
                problems.append(f"{where} names no node of the inventory")
            elif launch.script is None:
                problems.append(f"{where}, but no launch script is named: runs_on says where the script runs")
            elif self.launch_of(launch.runs_on).script != launch.script:
                problems.append(
                    f"{where}: the script is read there, and {launch.runs_on}'s launch script is "
                    f"{self.launch_of(launch.runs_on).script or 'not named'}, not {launch.script}"
                )
        return problems

    def addresses_of(self, node: str) -> list[str]:
        """What a script may name the node by (`ssh HOST`): its name, its SSH host, its rails' and its control
        plane's addresses (without their prefix)."""
        spec = self.node(node)
        out = [spec.name, *([spec.host] if spec.host else [])]
        out += [m.address.split("/")[0] for _, m in self.members_of(node)]
        if self.control is not None and node in self.control.addresses:
            out.append(self.control.addresses[node].split("/")[0])
        return list(dict.fromkeys(out))

    def _rail_count_problems(self) -> list[str]:
        """A switch on one rail is refused unless [cluster] rails = 1 says it is meant; a count said is the count."""
        said, have = self.cluster.rails, len(self.rails)
        if said is not None and said != have:
            return [f"[cluster] rails = {said}, but the inventory has {have} [[rails]]: write the rails, or the count"]
        if self.topology == "switch" and have == 1 and said is None:
            return [
                "a switch with one rail: each node's QSFP port has two halves, one rail (subnet) each, and NCCL "
                "spreads its traffic over both; on one rail the cluster has half each port's bandwidth. Add the "
                "second half's [[rails]], or say one is meant: [cluster] rails = 1"
            ]
        return []

    def _control_problems(self) -> list[str]:
        if self.control is None:
            if self.topology in ("ring", "switch"):
                return [
                    'name the control plane: [control] netdev = "enP7s7" (the interface NCCL_SOCKET_IFNAME and '
                    "GLOO_SOCKET_IFNAME name, where the master address is; on a ring or a switch usually the LAN port)"
                ]
            return []
        unknown = sorted(set(self.control.addresses) - {n.name for n in self.nodes})
        if unknown:
            return [f"control.addresses names unknown node(s) {unknown}"]
        on_rail = [r for r in self.rails if any(m.netdev == self.control.netdev for m in r.members)]
        if on_rail and self.control.addresses:
            return [
                f"control.netdev {self.control.netdev} is on rail {on_rail[0].name}: its addresses are the rail's, "
                "leave control.addresses out"
            ]
        return []

    @property
    def topology(self) -> Topology:
        """The cluster's shape: as [cluster] says, else single (one node) or pair (two); more nodes
        must say it (refused at load otherwise)."""
        if self.cluster.topology is not None:
            return self.cluster.topology
        return "single" if len(self.nodes) == 1 else "pair" if len(self.nodes) == 2 else "switch"

    @property
    def size(self) -> int:
        return len(self.nodes)

    def nccl_busbw_floor(self) -> tuple[float, str]:
        """The nccl-tests bus bandwidth (GB/s) the collective must reach, and where it comes from:
        [nccl_tests] min_busbw_gbs when set, else the topology's (topology.nccl_busbw_floor)."""
        set_here = self.nccl_tests.min_busbw_gbs if self.nccl_tests else None
        if set_here is not None:
            return set_here, "[nccl_tests] min_busbw_gbs"
        return topology.nccl_busbw_floor(self.topology, self.size)

    @property
    def api_node(self) -> Node:
        return self.by_rank(0)

    def by_rank(self, rank: int) -> Node:
        return next(n for n in self.nodes if n.rank == rank)

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)

    def launch_of(self, node: str) -> Launch:
        """How `node` starts its rank: [deployment] launch, with the node's own launch over it."""
        base = self.deployment.launch if self.deployment else Launch()
        own = self.node(node).launch
        if own is None:
            return base
        given = own.model_fields_set
        return Launch(
            service=own.service if "service" in given else base.service,
            env={**base.env, **own.env},
            env_file=own.env_file if "env_file" in given else base.env_file,
            script=own.script if "script" in given else base.script,
            args=own.args if "args" in given else base.args,
            runs_on=own.runs_on if "runs_on" in given else base.runs_on,
        )

    def env_file_of(self, node: str) -> str | None:
        """The env file `node`'s compose reads: its launch's, else the deployment's (or the compose folder's)."""
        own = self.launch_of(node).env_file
        return own if own is not None else (self.deployment.dotenv if self.deployment else None)

    def members_of(self, node: str) -> list[tuple[Rail, Member]]:
        """The node's ends of the fabric: each rail it is on, with its member there."""
        return [(rail, m) for rail in self.rails for m in rail.members if m.node == node]

    def peers(self, node: str) -> list[str]:
        """The nodes that share a rail with `node`, in rank order."""
        near = {m.node for rail, _ in self.members_of(node) for m in rail.members}
        return [n.name for n in sorted(self.nodes, key=lambda n: n.rank) if n.name in near and n.name != node]

    def node_pairs(self) -> list[tuple[str, str]]:
        """Every two nodes that share a rail (they talk over the fabric), lower rank first."""
        seen = [(a.node, b.node) for rail in self.rails for a, b in rail.pairs()]
        return list(dict.fromkeys(seen))

    def rails_between(self, a: str, b: str) -> list[Rail]:
        return [rail for rail in self.rails if rail.member(a) and rail.member(b)]

    def control_netdev(self, node: str) -> str | None:
        """The interface the node's socket and Gloo traffic use ([control], else a pair's first rail)."""
        if self.control is not None:
            return self.control.netdev
        if self.rails and self.topology in ("pair", "single"):
            member = self.rails[0].member(node)
            return member.netdev if member else None
        return None

    def control_address(self, node: str) -> str | None:
        """The node's address on the control plane (no prefix), when the inventory knows it."""
        netdev = self.control_netdev(node)
        for rail, member in self.members_of(node):
            if member.netdev == netdev:
                return rail.ip(node)
        if self.control is not None and node in self.control.addresses:
            return str(ipaddress.ip_interface(self.control.addresses[node]).ip)
        return None

    @property
    def master_address(self) -> str | None:
        """Where every rank finds rank 0: its control-plane address."""
        return self.control_address(self.api_node.name)


def _lines(problems: list[str]) -> str:
    """Several problems of one inventory: one line each (validation_problems indents the first)."""
    return "\n  - ".join(problems)


def _rail_problems(rails: list[Rail]) -> list[str]:
    """Across rails: an address twice, two rails on one subnet, a node's netdev or device on two rails."""
    out: list[str] = []
    where: dict[str, list[str]] = {}
    for rail in rails:
        for m in rail.members:
            where.setdefault(m.ip, []).append(f"{m.node} on rail {rail.name}")
    out += [f"address {ip} is given twice ({'; '.join(w)})" for ip, w in where.items() if len(w) > 1]
    for i, a in enumerate(rails):
        for b in rails[i + 1 :]:
            if a.subnet.overlaps(b.subnet):
                out.append(
                    f"rails {a.name} and {b.name} share a subnet ({a.subnet}, {b.subnet}): each rail (each half of a "
                    "port) needs its own, or the kernel routes both halves' traffic out of one"
                )
    ends: dict[tuple[str, str], list[str]] = {}
    for rail in rails:
        for m in rail.members:
            ends.setdefault((m.node, m.netdev), []).append(rail.name)
            if m.rdma_device != m.netdev:
                ends.setdefault((m.node, m.rdma_device), []).append(rail.name)
    out += [f"{node}'s {dev} is on rails {', '.join(names)}: one rail per port half" for (node, dev), names in
            ends.items() if len(names) > 1]  # fmt: skip
    return out


def _loc(loc: tuple[int | str, ...], data: Any) -> str:
    """pydantic's ('nodes', 1, 'rank') -> 'nodes[1].rank' (with the node's name when known)."""
    out = ""
    node = data
    for part in loc:
        if isinstance(part, int):
            name = node[part].get("name") if isinstance(node, list | tuple) and isinstance(node[part], dict) else None
            out += f"[{part}]" + (f" (name = {clip(repr(name), 40)})" if name else "")
        else:
            out += ("." if out else "") + str(part)
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            node = None
    return out or "(top level)"


def _describe(error: Any, data: Any) -> str:
    where = _loc(tuple(error["loc"]), data)
    if error["type"] == "extra_forbidden":
        return f"key '{where}' is not known (misspelt?)"
    if error["type"] == "missing":
        return f"key '{where}' is required"
    msg = str(error["msg"]).removeprefix("Value error, ")
    got = error.get("input")
    if where == "(top level)":  # a check across keys: its message names them
        return msg
    shown = "" if isinstance(got, dict | list) else f" (found {clip(repr(got), 80)})"
    return f"'{where}': {msg}{shown}"


def validation_problems(exc: ValidationError, data: Any) -> str:
    """pydantic's errors as lines naming each key (shared with the sim's scenario files)."""
    return "\n".join(f"  - {_describe(e, data)}" for e in exc.errors())


def _todo_lines(text: str) -> list[str]:
    """The lines `gb10check init` left for the operator: a value that is still "TODO"."""
    return [
        f"line {i}: {clip(line.strip(), 160)}"
        for i, line in enumerate(text.splitlines(), start=1)
        if re.match(r'^\s*[A-Za-z_][\w-]*\s*=\s*"TODO"', line)
    ]


def parse_inventory(text: str, source: str) -> Inventory:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InventoryError(f"{source}: not valid TOML: {exc}") from exc
    todo = _todo_lines(text)
    if todo:
        raise InventoryError(
            f"{source}: {len(todo)} value(s) gb10check init could not find are still TODO: fill each in (its "
            "comment says what was looked for), then run again:\n  - " + "\n  - ".join(todo)
        )
    try:
        return Inventory.model_validate({**data, "source": source})
    except ValidationError as exc:
        problems = validation_problems(exc, data)
        if "links" in data:  # the file calls its rails links: so do the errors
            problems = problems.replace("'rails[", "'links[")
        raise InventoryError(
            f"{source}: invalid inventory:\n{problems}\nSee {EXAMPLE} for every key with the seed's values (a pair), "
            "cluster.ring.example.toml and cluster.switch.example.toml beside it for three to eight nodes."
        ) from exc


MISSING_HELP = """\
gb10check: no cluster inventory ({why}).
Write one: on rank 0, `gb10check init spark-02 ...` (the other nodes' names) discovers the cluster and
writes ./cluster.toml; or cp {examples}/cluster.example.toml cluster.toml   (a pair;
cluster.ring.example.toml and cluster.switch.example.toml beside it for three to eight nodes) and edit
nodes, rails and service. Pass it with --cluster PATH or GB10_CLUSTER=PATH (default ./cluster.toml).
To try the suite without a cluster: gb10check all --sim (the bundled simulated cluster; needs root)."""


def _examples() -> Path | str:
    """The example inventories' folder: the suite's fixtures/, in the clone or inside the package."""
    from gb10check import suite

    try:
        return suite.root() / "fixtures"
    except GB10Error:
        return "fixtures"


def default_path() -> tuple[Path, str]:
    """Where the inventory is when neither --cluster nor $GB10_CLUSTER names it (fixtures/settings.py
    resolves those two)."""
    return Path(DEFAULT_PATH), "default"


def load_inventory(path: Path, origin: str = "--cluster") -> Inventory:
    try:
        text = read_text(path, "the inventory")
    except FileNotFoundError as exc:
        raise InventoryError(MISSING_HELP.format(why=f"{path} not found, from {origin}", examples=_examples())) from exc
    except OSError as exc:
        raise InventoryError(f"{path}: cannot read the inventory: {exc.strerror or exc}") from exc
    return parse_inventory(text, str(path))
