"""The compose lint: each rule one line of the deployment and why it exists, as data.

A rule reads the node's service as Compose will create it, the `vllm serve` this rank runs (with
the environment vLLM gets) and the inventory,
and returns (ok, expected, found), or raises NotApplicable. Pure; the test module turns each rule into a test per node.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from gb10check import inventory as inv
from gb10check.compose import ComposeService
from gb10check.fit import GIB, gib
from gb10check.nccl import gid_index_param
from gb10check.vllm_command import VllmRun

Outcome = tuple[bool, str, str]


class NotApplicable(Exception):
    """The rule does not apply to this inventory (the test skips with this reason, never passes)."""


@dataclass(frozen=True)
class Context:
    service: ComposeService
    run: VllmRun
    rank: int
    inventory: inv.Inventory
    mem_total: int | None  # bytes, from the node's /proc/meminfo

    @property
    def node(self) -> str:
        return self.inventory.by_rank(self.rank).name


@dataclass(frozen=True)
class Rule:
    id: str
    what: str
    hint: str
    check: Callable[[Context], Outcome]
    rank0_only: bool = False
    topologies: tuple[str, ...] = ()  # the cluster shapes it is a check for (empty: every shape)


def _value(value: object) -> str:
    return "not set" if value is None else str(value)


def _env(ctx: Context, expected: dict[str, str]) -> Outcome:
    env = ctx.run.environment  # what vLLM gets: Compose's environment and the script's exports
    wrong = {k: env.get(k) for k, v in expected.items() if env.get(k) != v}
    return (
        not wrong,
        ", ".join(f"{k}={v}" for k, v in expected.items()),
        ", ".join(f"{k}={_value(env.get(k))}" for k in expected),
    )


def _host_network(ctx: Context) -> Outcome:
    mode = ctx.service.get("network_mode")
    return mode == "host", "network_mode: host", f"network_mode: {_value(mode)}"


def _ipc_host(ctx: Context) -> Outcome:
    return ctx.service.get("ipc") == "host", "ipc: host", f"ipc: {_value(ctx.service.get('ipc'))}"


def _restart_no(ctx: Context) -> Outcome:
    restart = ctx.service.restart
    return restart in ("no", None), 'restart: "no"', f"restart: {_value(restart)}"


def _rdma_device(ctx: Context) -> Outcome:
    if ctx.service.privileged:  # every host device, /dev/infiniband among them
        return True, "devices: /dev/infiniband", "privileged: true (every host device)"
    devices = ctx.service.devices
    return "/dev/infiniband" in devices, "devices: /dev/infiniband", f"devices: {devices or 'none'}"


def _ipc_lock(ctx: Context) -> Outcome:
    if ctx.service.all_capabilities:
        how = "privileged: true" if ctx.service.privileged else "cap_add: [ALL]"
        return True, "cap_add: IPC_LOCK", f"{how} (every capability)"
    caps = ctx.service.cap_add
    return "IPC_LOCK" in caps, "cap_add: IPC_LOCK", f"cap_add: {caps or 'none'}"


def _memlock(ctx: Context) -> Outcome:
    limits = ctx.service.ulimit("memlock")
    return limits == (-1, -1), "ulimits: memlock: -1 (unlimited)", f"memlock: {_value(limits)}"


def _memory_limit(ctx: Context) -> Outcome:
    limit = ctx.service.memory_limit
    util = float(ctx.run.value("--gpu-memory-utilization") or 0.9)
    total = ctx.mem_total or 0
    headroom = int(ctx.inventory.thresholds.container_headroom_gib * GIB)
    budget = int(util * total)
    low, high = budget + headroom, total
    expected = (
        f"a memory limit between {gib(low)} (--gpu-memory-utilization {util:g} x MemTotal {gib(total)} + "
        f"{gib(headroom)} headroom) and MemTotal {gib(high)}"
    )
    if limit is None:
        return False, expected, "no mem_limit / deploy.resources.limits.memory"
    return low <= limit < high, expected, gib(limit)


def _socket_family(ctx: Context) -> Outcome:
    return _env(ctx, {"NCCL_SOCKET_FAMILY": "AF_INET", "GLOO_SOCKET_FAMILY": "AF_INET"})


def _libuv_off(ctx: Context) -> Outcome:
    return _env(ctx, {"GLOO_USE_LIBUV": "0", "TORCH_GLOO_USE_LIBUV": "0"})


def _ends(ctx: Context, what: str) -> list[inv.Member]:
    """This node's ends of the fabric (its member on each rail)."""
    ends = [m for _, m in ctx.inventory.members_of(ctx.node)]
    if not ends:
        raise NotApplicable(f"the inventory lists no rails for {ctx.node} to compare {what} with")
    return ends


def _socket_ifname(ctx: Context) -> Outcome:
    netdev = ctx.inventory.control_netdev(ctx.node)
    if netdev is None:
        raise NotApplicable(
            "the inventory names no control plane ([control] netdev) to compare the socket interfaces with"
        )
    return _env(ctx, {k: netdev for k in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME")})


def _gid_index(ctx: Context) -> Outcome:
    """A set NCCL_IB_GID_INDEX must be the rails' index; unset or empty (NCCL ignores an empty value), NCCL
    2.21 and later pick each device's first RoCE v2 IPv4 GID themselves, which tests_network's
    test_gid_index judges on the node's real GID table: nothing here to fault."""
    smallest = min((rail.gid_index for rail, _ in ctx.inventory.members_of(ctx.node)), default=3)  # 3 before 10
    env = ctx.run.environment
    value, disable = env.get("NCCL_IB_GID_INDEX"), env.get("NCCL_IB_DISABLE")
    picked = gid_index_param(value)
    ok = picked in (None, smallest) and disable == "0"
    if value is None or picked is None:
        index = f"{'unset' if value is None else repr(value)}: NCCL picks each device's first RoCE v2 IPv4 GID"
    else:
        index = value
    return (
        ok,
        f"NCCL_IB_GID_INDEX={smallest} or unset (NCCL 2.21+ then picks each device's first RoCE v2 IPv4 GID; "
        "the network stage judges where that lands), NCCL_IB_DISABLE=0",
        f"NCCL_IB_GID_INDEX={index}, NCCL_IB_DISABLE={_value(disable)}",
    )


def _hca_exact(ctx: Context) -> Outcome:
    devices = [m.rdma_device for m in _ends(ctx, "NCCL_IB_HCA")]
    value = ctx.run.environment.get("NCCL_IB_HCA")
    expected = "=" + ",".join(devices)
    listed = [d.split(":")[0] for d in (value or "").lstrip("=^").split(",") if d]
    ok = value is not None and value.startswith("=") and sorted(listed) == sorted(devices)
    return ok, f"NCCL_IB_HCA={expected} (leading '=': exact names, not prefixes)", f"NCCL_IB_HCA={_value(value)}"


def _merge_nics(ctx: Context) -> Outcome:
    if len(_ends(ctx, "NCCL_IB_MERGE_NICS")) < 2:
        raise NotApplicable("NCCL_IB_MERGE_NICS matters only with two or more rails; this node is on one")
    if ctx.inventory.topology == "ring":  # the halves lead to two neighbours: NCCL must see them apart
        return _env(ctx, {"NCCL_IB_MERGE_NICS": "0"})
    return _env(ctx, {"NCCL_IB_MERGE_NICS": "1"})


def _headless(ctx: Context) -> Outcome:
    has = ctx.run.has("--headless")
    if ctx.rank == 0:
        return not has, "rank 0 without --headless (it serves the API)", "--headless" if has else "no --headless"
    return has, f"rank {ctx.rank} with --headless (worker only)", "--headless" if has else "no --headless"


_HYPHEN = re.compile(r"cudagraph-mode")


def _cudagraph_underscore(ctx: Context) -> Outcome:
    bad = [a for a in ctx.run.argv if _HYPHEN.search(a)]
    return not bad, "cudagraph_mode spelled with an underscore", " ".join(bad) or "underscore"


def _distributed_timeout(ctx: Context) -> Outcome:
    minimum = ctx.inventory.thresholds.min_distributed_timeout_s
    value = ctx.run.value("--distributed-timeout-seconds")
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        seconds = None
    found = f"--distributed-timeout-seconds {_value(value)}"
    return seconds is not None and seconds >= minimum, f"--distributed-timeout-seconds >= {minimum:g}", found


def _flag_value(ctx: Context, flag: str, expected: str | None) -> Outcome:
    value = ctx.run.value(flag)
    if expected is None:
        return ctx.run.has(flag), f"{flag} given", f"{flag} {_value(value)}" if ctx.run.has(flag) else "not given"
    return value == expected, f"{flag} {expected}", f"{flag} {_value(value)}"


def _reasoning_parser(ctx: Context) -> Outcome:
    spec = ctx.inventory.service
    return _flag_value(ctx, "--reasoning-parser", spec.reasoning_parser if spec else None)


def _tool_call_parser(ctx: Context) -> Outcome:
    spec = ctx.inventory.service
    ok, expected, found = _flag_value(ctx, "--tool-call-parser", spec.tool_call_parser if spec else None)
    auto = ctx.run.has("--enable-auto-tool-choice")
    return (
        ok and auto,
        expected + " and --enable-auto-tool-choice",
        found + ("" if auto else ", no --enable-auto-tool-choice"),
    )


def _served_name(ctx: Context) -> Outcome:
    spec = ctx.inventory.service
    if spec is None:
        raise NotApplicable("the inventory has no [service] section to compare the served name with")
    value = ctx.run.value("--served-model-name")
    return (
        value == spec.served_model_name,
        f"--served-model-name {spec.served_model_name}",
        f"--served-model-name {_value(value)}",
    )


def _topology(ctx: Context) -> Outcome:
    expected = {
        "--tensor-parallel-size": str(ctx.inventory.cluster.tensor_parallel_size),
        "--nnodes": str(len(ctx.inventory.nodes)),
        "--node-rank": str(ctx.rank),
    }
    found = {k: ctx.run.value(k) for k in expected}
    return (
        found == expected,
        " ".join(f"{k} {v}" for k, v in expected.items()),
        " ".join(f"{k} {_value(v)}" for k, v in found.items()),
    )


# -- the launch plan of a ring (issue 19): what NCCL and vLLM need when the cables form one cycle --------
RING_NCCL = {"NCCL_NET_PLUGIN": "none", "NCCL_IB_SUBNET_AWARE_ROUTING": "1"}  # NCCL_IB_MERGE_NICS=0: ib-merge-nics
RING_ALGO_FROM = 4  # NCCL_ALGO=Ring from four nodes: automatic selection gave QP timeouts on a 4-ring (eugr)


def _ring_only(ctx: Context, what: str) -> None:
    if ctx.inventory.topology != "ring":
        raise NotApplicable(f"{what} applies to a ring; this cluster is a {ctx.inventory.topology}")


def _ring_nccl(ctx: Context) -> Outcome:
    _ring_only(ctx, "NCCL's ring settings rule")
    expected = dict(RING_NCCL)
    if ctx.inventory.size >= RING_ALGO_FROM:
        expected["NCCL_ALGO"] = "Ring"
    env = ctx.run.environment
    wrong = [k for k, v in expected.items() if (env.get(k) or "").lower() != v.lower()]  # NCCL: strcasecmp
    return (
        not wrong,
        ", ".join(f"{k}={v}" for k, v in expected.items()) + f" (a ring of {ctx.inventory.size})",
        ", ".join(f"{k}={_value(env.get(k))}" for k in expected),
    )


def _ray_on_ring(ctx: Context) -> Outcome:
    _ring_only(ctx, "the Ray-on-a-ring rule")
    backend = ctx.run.value("--distributed-executor-backend")
    return (
        backend != "ray",
        "--distributed-executor-backend mp (not ray on a ring)",
        f"--distributed-executor-backend {_value(backend)}",
    )


GPUS_PER_NODE = 1  # a GB10 has one GPU
PARALLEL_SIZES = ("--tensor-parallel-size", "--pipeline-parallel-size", "--data-parallel-size")  # vLLM's default: 1


def _parallel_size(ctx: Context) -> Outcome:
    nodes = len(ctx.inventory.nodes)
    expected = (
        f"tensor x pipeline x data parallel = {nodes * GPUS_PER_NODE} (the GPUs: {nodes} nodes x {GPUS_PER_NODE})"
    )
    given = {flag: ctx.run.value(flag) for flag in PARALLEL_SIZES}
    shown = " x ".join(f"{flag} {v}" if v is not None else f"{flag} 1 (default)" for flag, v in given.items())
    if not all(v is None or v.isdigit() for v in given.values()):
        return False, expected, f"{shown} (not a whole number)"
    product = math.prod(int(v or 1) for v in given.values())
    return product == nodes * GPUS_PER_NODE, expected, f"{shown} = {product}"


RULES: tuple[Rule, ...] = (
    Rule("host-network", "host network (NCCL needs the host NICs)", "compose-host-network", _host_network),
    Rule("ipc-host", "host IPC namespace", "compose-ipc-host", _ipc_host),
    Rule("restart-no", "no restart policy (no crash loop hammering memory)", "compose-restart-policy", _restart_no),
    Rule("rdma-device", "the RDMA devices in the container", "compose-rdma-device", _rdma_device),
    Rule("ipc-lock", "IPC_LOCK capability (RDMA pins memory)", "compose-ipc-lock", _ipc_lock),
    Rule("memlock", "unlimited locked memory (RDMA pins memory)", "compose-memlock", _memlock),
    Rule("memory-limit", "a container memory limit over the GPU budget", "compose-memory-limit", _memory_limit),
    Rule("socket-family", "IPv4 sockets for NCCL and Gloo", "gloo-ipv6-timeout", _socket_family),
    Rule("gloo-libuv", "Gloo without libuv", "gloo-libuv", _libuv_off),
    Rule("socket-ifname", "the socket interfaces on the control plane", "nccl-socket-ifname", _socket_ifname),
    Rule("ib-gid-index", "the RoCEv2/IPv4 GID index and the IB transport", "nccl-gid-index", _gid_index),
    Rule("ib-hca", "exact-match RDMA device list", "nccl-hca-not-exact", _hca_exact),
    Rule("ib-merge-nics", "the halves merged into one NCCL NIC (apart on a ring)", "nccl-merge-nics", _merge_nics),
    Rule("headless", "--headless on followers only", "follower-not-headless", _headless),
    Rule("cudagraph-mode", "cudagraph_mode spelled with an underscore", "cudagraph-mode-hyphen", _cudagraph_underscore),
    Rule(
        "distributed-timeout",
        "a distributed timeout over the load skew",
        "distributed-timeout-short",
        _distributed_timeout,
    ),
    Rule("topology", "TP size, node count and node rank", "distributed-args-wrong", _topology),
    Rule("reasoning-parser", "the reasoning parser", "reasoning-parser-missing", _reasoning_parser, rank0_only=True),
    Rule("tool-call-parser", "tool calling", "tool-call-parser-missing", _tool_call_parser, rank0_only=True),
    Rule("served-model-name", "the served model name", "served-name-mismatch", _served_name, rank0_only=True),
    Rule("ring-nccl", "the ring's NCCL settings", "nccl-ring-settings", _ring_nccl, topologies=("ring",)),
    Rule("ray-on-ring", "no Ray executor on a ring", "ray-on-ring", _ray_on_ring, topologies=("ring",)),
    Rule("parallel-size", "TP x PP x DP = the GPUs", "parallel-size-not-gpus", _parallel_size),
)
