"""cluster.toml -> a typed, validated model of the cluster.

Errors name the file, the key and what to write; unknown keys are errors (a typo must not
silently fall back to a default).
"""

from __future__ import annotations

import ipaddress
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gb10check import history as hist
from gb10check.errors import InventoryError, clip
from gb10check.textfile import read_text

ENV_VAR = "GB10_CLUSTER"
DEFAULT_PATH = "cluster.toml"
EXAMPLE = "fixtures/cluster.example.toml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class SshSettings(_Strict):
    connect_timeout: float = Field(5.0, gt=0, le=120)
    host_key_policy: Literal["known_hosts", "accept-new"] = "known_hosts"
    known_hosts: str | None = None  # default: ~/.ssh/known_hosts and the system file
    use_ssh_config: bool = True
    boot_timeout: float = Field(600.0, gt=0, le=7200)  # --after-boot: how long every node gets to answer SSH


class Node(_Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    rank: int = Field(ge=0)
    transport: Literal["ssh", "local"] = "ssh"
    host: str | None = None
    port: int | None = Field(None, ge=1, le=65535)
    user: str | None = None
    key: str | None = None
    sudo: bool = True  # may the suite use `sudo -n` for root-only reads on this node

    @model_validator(mode="after")
    def _ssh_needs_host(self) -> Node:
        if self.transport == "ssh" and not self.host:
            raise ValueError("transport 'ssh' needs host = \"<address or ssh_config alias>\"")
        return self


class Link(_Strict):
    netdev: str
    rdma_device: str
    gid_index: int = Field(3, ge=0)
    mtu: int | None = Field(None, ge=576, le=9216)  # both ends must have it, when set
    rate_gbps: float = Field(200.0, gt=0)  # the rate each end's RDMA port must have negotiated
    # ib_write_bw's average, Gb/s: the lowest healthy figure published for one half of a GB10 cable
    # (NVIDIA's guide: 92.57) less run-to-run noise; the field report's tuned pair reached 109
    min_gbps: float = Field(90.0, gt=0)
    addresses: dict[str, str]  # node name -> "address/prefix"

    @field_validator("addresses")
    @classmethod
    def _cidr(cls, value: dict[str, str]) -> dict[str, str]:
        for node, addr in value.items():
            try:
                ipaddress.ip_interface(addr)
            except ValueError as exc:
                raise ValueError(f'{node} = {addr!r} is not an address/prefix like "169.254.94.252/16"') from exc
            if "/" not in addr:
                raise ValueError(f'{node} = {addr!r} needs a prefix length, like "{addr}/16"')
        return value

    def ip(self, node: str) -> str:
        """The node's address on this link, without the prefix length."""
        return str(ipaddress.ip_interface(self.addresses[node]).ip)


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
    compose_file: str
    env_file: str
    container: str
    image: str
    hf_cache: str


class Thresholds(_Strict):
    command_timeout: float = Field(10.0, gt=0, le=600)
    nvidia_smi_timeout: float = Field(10.0, gt=0, le=600)
    docker_run_timeout: float = Field(120.0, gt=0, le=1800)
    min_mem_available_gib: float = Field(100.0, ge=0)
    stop_mem_available_gib: float = Field(5.0, ge=0)
    container_headroom_gib: float = Field(8.0, ge=0)
    min_distributed_timeout_s: float = Field(1800.0, gt=0)
    bandwidth_seconds: float = Field(5.0, gt=0, le=600)  # each ib_write_bw run (-D)
    # run ib_write_bw while the deployment's container runs (it competes with NCCL for the links): for
    # a cluster whose deployment runs but serves nobody (a test window); --bandwidth does it for one run
    bandwidth_while_serving: bool = False


class NcclTests(_Strict):
    """[nccl_tests]: an NCCL collective between the nodes with nccl-tests (optional; absent: skipped)."""

    # what runs the collective from rank 0, as the site runs it (mpirun -np 2 -H ... all_gather_perf);
    # gb10check adds -b SIZE -e SIZE -f 2 -g 1 with SIZE bounded by the nodes' MemAvailable
    command: str = Field(min_length=1)
    # GB/s of bus bandwidth: NVIDIA's minimum for all_gather between two GB10 nodes (175 Gb/s)
    min_busbw_gbs: float = Field(21.875, gt=0)
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
    """[history]: how --history=DIR keeps runs and judges trends (gb10check/history.py)."""

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
        """The rules gb10check/history.py judges by: the defaults per kind, with this table's own."""
        defaults = hist.Rules()
        return hist.Rules(
            window=self.window,
            min_runs=self.min_runs,
            spreads=self.spreads,
            floor={**defaults.floor, **self.floor},
            ceiling={**defaults.ceiling, **self.ceiling},
        )


class Cluster(_Strict):
    name: str = "gb10"
    tensor_parallel_size: int = Field(2, ge=1)


class Inventory(_Strict):
    cluster: Cluster = Cluster()
    ssh: SshSettings = SshSettings()
    nodes: list[Node] = Field(min_length=1)
    links: list[Link] = []
    service: ApiSpec | None = None
    deployment: Deployment | None = None
    thresholds: Thresholds = Thresholds()
    history: HistoryRules = HistoryRules()
    nccl_tests: NcclTests | None = None
    source: str = Field("<memory>", exclude=True)

    @model_validator(mode="after")
    def _consistent(self) -> Inventory:
        names = [n.name for n in self.nodes]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"node names must be unique; repeated: {', '.join(dupes)}")
        ranks = sorted(n.rank for n in self.nodes)
        if ranks != list(range(len(ranks))):
            raise ValueError(f"node ranks must be 0..{len(ranks) - 1}, each once; found {ranks}")
        for i, link in enumerate(self.links):
            unknown = sorted(set(link.addresses) - set(names))
            missing = sorted(set(names) - set(link.addresses))
            if unknown:
                raise ValueError(f"links[{i}] ({link.netdev}).addresses names unknown node(s) {unknown}")
            if missing:
                raise ValueError(f"links[{i}] ({link.netdev}).addresses lacks node(s) {missing}")
        return self

    @property
    def api_node(self) -> Node:
        return next(n for n in self.nodes if n.rank == 0)


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


def parse_inventory(text: str, source: str) -> Inventory:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InventoryError(f"{source}: not valid TOML: {exc}") from exc
    try:
        return Inventory.model_validate({**data, "source": source})
    except ValidationError as exc:
        problems = validation_problems(exc, data)
        raise InventoryError(
            f"{source}: invalid inventory:\n{problems}\nSee {EXAMPLE} for every key with the seed's values."
        ) from exc


MISSING_HELP = """\
gb10check: no cluster inventory ({why}).
Write one: cp fixtures/cluster.example.toml cluster.toml   and edit nodes, links and service,
then pass it with --cluster PATH or GB10_CLUSTER=PATH (default ./cluster.toml).
To try the suite without a cluster: gb10check preflight --sim, or pytest --sim
(the bundled simulated cluster; needs root)."""


def default_path() -> tuple[Path, str]:
    """Where the inventory is when neither --cluster nor $GB10_CLUSTER names it (fixtures/settings.py
    resolves those two)."""
    return Path(DEFAULT_PATH), "default"


def load_inventory(path: Path, origin: str = "--cluster") -> Inventory:
    try:
        text = read_text(path, "the inventory")
    except FileNotFoundError as exc:
        raise InventoryError(MISSING_HELP.format(why=f"{path} not found, from {origin}")) from exc
    except OSError as exc:
        raise InventoryError(f"{path}: cannot read the inventory: {exc.strerror or exc}") from exc
    return parse_inventory(text, str(path))
