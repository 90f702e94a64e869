"""The launch plan's rules, as data: each judges one thing a rank's plan says, by what its source (NCCL's,
vLLM's or the kernel's code or docs) says that value does to this deployment on this node.

Four outcomes, kept apart (`Verdict.outcome`):
- "fail": by the source, the value breaks the start or the collectives here (no device NCCL can use,
  a follower without --headless, RDMA that cannot pin memory);
- "advisory": it works and costs speed (one half of the cable unused: about half the bandwidth); the
  verdict says what it costs; a failure only where the inventory asks for strictness ([rules] strict);
- "advice": what the suite prefers, with why; never a failure (a restart policy, a variable pinned to
  what NCCL picks anyway);
- "pass".
A rule reads the plan (gb10check/deployment/launch/plan.py), the inventory and what the node has (its RDMA ports
and netdevs, from the snapshot; offline, the inventory's, said so), takes NCCL's and vLLM's defaults for
what is unset, and raises NotApplicable when it does not apply (a ring's rule on a pair, a Ray worker's
`vllm serve`), DecidedAtStart when the value is the start's to decide. Pure.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from gb10check import inventory as inv
from gb10check.deployment.launch.plan import LaunchPlan, Source
from gb10check.deployment.nccl import gid_index_param, ib_hca_selects, socket_ifname_matches
from gb10check.errors import DecidedAtStart
from gb10check.judging.fit import GIB, gib
from gb10check.reading.parsers.iproute import Netdev
from gb10check.reading.parsers.rdma_sysfs import RdmaPortState

__all__ = [
    "DOCKER_SHM",
    "GPUS_PER_NODE",
    "PARALLEL_SIZES",
    "RING_ALGO_FROM",
    "RING_NCCL",
    "RULES",
    "SHM_NEEDED",
    "Context",
    "NotApplicable",
    "Outcome",
    "Rule",
    "Verdict",
]

Outcome = Literal["pass", "fail", "advisory", "advice"]


class NotApplicable(Exception):
    """The rule does not apply to this plan or inventory (the test skips with this reason, never passes)."""


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    expected: str
    found: str
    why: str = ""  # fail: what breaks; advisory: what it costs; advice: why the suite prefers it
    where: Source | None = None  # the place to change the value

    @property
    def ok(self) -> bool:
        return self.outcome != "fail"


@dataclass(frozen=True)
class Context:
    plan: LaunchPlan
    inventory: inv.Inventory
    mem_total: int | None  # bytes, the node's MemTotal
    ports: dict[str, RdmaPortState] | None  # the node's RDMA ports (None: offline, the inventory's devices stand in)
    netdevs: dict[str, Netdev] | None  # the node's netdevs (None: offline)
    hostname_addresses: tuple[str, ...] | None = None  # what the node's hostname resolves to (Gloo's default)

    @property
    def node(self) -> str:
        return self.plan.node

    @property
    def rank(self) -> int:
        return self.plan.rank

    @property
    def offline(self) -> bool:
        return self.ports is None


@dataclass(frozen=True)
class Rule:
    id: str
    what: str
    hint: str
    check: Callable[[Context], Verdict]
    source: str  # where what it judges by is written (NCCL's, vLLM's, the kernel's code or docs; a field report)
    rank0_only: bool = False
    topologies: tuple[str, ...] = ()  # the cluster shapes it is a check for (empty: every shape)


def _value(value: object) -> str:
    return "not set" if value is None else str(value)


def _pass(expected: str, found: str, where: Source | None = None) -> Verdict:
    return Verdict("pass", expected, found, where=where)


def _judged(ok: bool, outcome: Outcome, expected: str, found: str, why: str, where: Source | None = None) -> Verdict:
    return Verdict("pass" if ok else outcome, expected, found, why, where)


def _mp(ctx: Context, what: str) -> None:
    """Rules about vLLM's own launch flags apply where this rank runs `vllm serve` (not a Ray worker)."""
    if ctx.plan.role == "ray worker":
        raise NotApplicable(f"{ctx.node} runs a Ray worker: {what} is the head's `vllm serve`")


def _ray(ctx: Context) -> bool:
    if ctx.plan.started.vllm is None:
        return ctx.plan.role.startswith("ray")
    return (ctx.plan.vllm.value("--distributed-executor-backend") or "") == "ray"


# -- the container ----------------------------------------------------------------------------------------
def _host_network(ctx: Context) -> Verdict:
    network = ctx.plan.container.network
    mode = network.known()
    return _judged(
        mode == "host",
        "fail",
        "the host's network (network_mode: host, docker run --network host)",
        f"network {_value(mode) if mode else 'not set: Docker puts the container on its bridge'}",
        "on a bridge the container has only its own address (172.17.x), which NCCL's bootstrap and vLLM's "
        "master port advertise to the other nodes, and they cannot reach it; nor does it see the QSFP netdevs",
        network.source,
    )


DOCKER_SHM = 64 * 1024**2  # Docker's /dev/shm without --shm-size or ipc: host
SHM_NEEDED = 1 * GIB  # see _shm below


def _bytes(n: int) -> str:
    return gib(n) if n >= GIB else f"{n / 1024**2:.0f} MiB"


def _shm(ctx: Context) -> Verdict:
    c = ctx.plan.container
    ipc, size = c.ipc.known(), c.shm_size.known()
    if ipc == "host":
        return _pass("the host's IPC namespace, or a /dev/shm large enough for vLLM", "ipc: host", c.ipc.source)
    shm = size if size is not None else DOCKER_SHM
    return _judged(
        shm >= SHM_NEEDED,
        "fail",
        f"ipc: host, or shm_size of at least {_bytes(SHM_NEEDED)}",
        f"ipc {_value(ipc)}, /dev/shm {_bytes(shm)}" + ("" if size is not None else " (Docker's default)"),
        "vLLM's workers share tensors and its message queues through /dev/shm (vLLM's docs: run the container with "
        "--ipc=host or a --shm-size large enough); Docker's 64 MiB fills at start and the workers die with a bus error",
        c.shm_size.source or c.ipc.source,
    )


def _restart(ctx: Context) -> Verdict:
    restart = ctx.plan.container.restart
    policy = restart.known()
    return _judged(
        policy in (None, "no"),
        "advice",
        'restart: "no"',
        f"restart {_value(policy)}",
        "a chosen restart policy starts vLLM again after a reboot, as intended; after a crash it loads the weights "
        "again and again (each load takes most of the node's memory for minutes): --wait-ready's memory watch "
        "and `restart: no` are the seed's way to keep a crash from looping",
        restart.source,
    )


def _known_env(ctx: Context, name: str) -> str | None:
    """The variable where the plan knows it; None where it is unset or only the start decides it."""
    try:
        return ctx.plan.env(name)
    except DecidedAtStart:
        return None


def _asks_for_ib(ctx: Context) -> list[str]:
    """The deployment's own setting that pins NCCL to its IB transport: NCCL_NET=IB (NCCL's net selection
    takes only the network it names, and stops when that one has no device). NCCL_IB_HCA or NCCL_IB_DISABLE=0
    do not: without a device NCCL's IB transport initialises none and NCCL takes its socket transport."""
    net = _known_env(ctx, "NCCL_NET")
    return [f"NCCL_NET={net}"] if net is not None and net.strip().lower() == "ib" else []


def _has_rdma_device(ctx: Context) -> tuple[bool, str]:
    c = ctx.plan.container
    if c.privileged.known():
        return True, "privileged: true (every host device)"
    devices = c.devices.known() or ()
    rules = c.device_cgroup_rules.known() or ()
    has = any(d == "/dev/infiniband" or d.startswith("/dev/infiniband/uverbs") for d in devices)
    mounted = any(m.target.startswith("/dev/infiniband") for m in c.mounts)
    allowed = any(re.match(r"c 231:", r) for r in rules)  # uverbs' major number
    found = f"devices {', '.join(devices) or 'none'}" + (
        ", /dev/infiniband bind-mounted without a device cgroup rule for it" if mounted and not allowed else ""
    )
    return has or (mounted and allowed), found


def _rdma_device(ctx: Context) -> Verdict:
    """Without /dev/infiniband/uverbs* NCCL's IB transport finds no device (ncclIbInit: ibv_get_device_list)
    and NCCL falls back to its socket transport: the start works, slower (advisory), unless the deployment
    pins NCCL to IB itself (NCCL_NET=IB: NCCL stops): then it fails."""
    ok, found = _has_rdma_device(ctx)
    if ok:
        return _pass("the RDMA devices in the container", found, ctx.plan.container.privileged.source)
    asked = _asks_for_ib(ctx)
    return Verdict(
        "fail" if asked else "advisory",
        "/dev/infiniband in the container (devices:, --device, or privileged)",
        found + (f"; the deployment pins NCCL to IB: {', '.join(asked)}" if asked else ""),
        "without /dev/infiniband/uverbs* NCCL finds no IB device and runs every collective over TCP sockets on "
        "the cable that RoCE should carry (NET/Socket), an order of magnitude slower"
        + ("; with NCCL_NET=IB NCCL finds no network at all and the start fails" if asked else ""),
        ctx.plan.container.devices.source,
    )


def _memory_pinning(ctx: Context) -> Verdict:
    """Linux drivers/infiniband/core/umem.c ib_umem_get: pinning fails with ENOMEM only when the pages would
    exceed RLIMIT_MEMLOCK and the process lacks CAP_IPC_LOCK; either one lets RDMA register NCCL's buffers."""
    c = ctx.plan.container
    if not _has_rdma_device(ctx)[0]:
        raise NotApplicable(
            "the container has no RDMA device: NCCL runs over sockets and registers no memory (rdma-device says so)"
        )
    caps = c.cap_add.known() or ()
    memlock = c.memlock.known()
    if c.all_capabilities or "IPC_LOCK" in caps:
        how = (
            "privileged: true"
            if c.privileged.value is True
            else "cap_add: ALL"
            if "ALL" in caps
            else "cap_add: IPC_LOCK"
        )
        return _pass("CAP_IPC_LOCK, or an unlimited memlock ulimit", how, c.cap_add.source or c.privileged.source)
    unlimited = memlock is not None and memlock[0] == -1 and memlock[1] == -1
    if memlock is None:
        limit = "not set: dockerd's own limit (8 MiB under systemd)"
    else:
        limit = "unlimited (-1)" if unlimited else f"{memlock[0]}:{memlock[1]} bytes"
    return _judged(
        unlimited,
        "fail",
        "CAP_IPC_LOCK (cap_add: IPC_LOCK), or an unlimited memlock ulimit (ulimits: memlock: -1)",
        f"no CAP_IPC_LOCK, memlock {limit}",
        "the kernel refuses to pin RDMA memory past RLIMIT_MEMLOCK without CAP_IPC_LOCK (ib_umem_get): NCCL's "
        "ibv_reg_mr fails with ENOMEM and the collectives do not start",
        c.memlock.source or c.cap_add.source,
    )


def _memory_limit(ctx: Context) -> Verdict:
    _mp(ctx, "--gpu-memory-utilization")
    c = ctx.plan.container
    limit = c.memory.known()
    util = float(ctx.plan.vllm.value("--gpu-memory-utilization") or 0.9)
    headroom = int(ctx.inventory.thresholds.container_headroom_gib * GIB)
    if ctx.mem_total is None:  # offline: the node's memory is not known
        expected = f"no limit, or one above --gpu-memory-utilization {util:g} x the node's MemTotal"
        if limit is not None:
            raise NotApplicable(f"{ctx.node}'s MemTotal is not known offline: its memory limit is judged on the node")
    else:
        budget = int(util * ctx.mem_total)
        expected = (
            f"no limit, or one above --gpu-memory-utilization {util:g} x MemTotal {gib(ctx.mem_total)} = "
            f"{gib(budget)} with {gib(headroom)} for Python and torch"
        )
    if limit is None:
        return Verdict(
            "advice",
            expected,
            "no memory limit",
            "a limit a little above the budget makes the kernel kill the container, not hang the node, if the load "
            "takes more than planned (the seed's 105G on 119 GiB); without one, --wait-ready's memory watch is the "
            "safety net",
        )
    if limit < budget:
        return Verdict(
            "fail",
            expected,
            gib(limit),
            f"the container may not hold the {gib(budget)} vLLM takes of the unified memory: the kernel's cgroup "
            "kills it while it loads",
            c.memory.source,
        )
    if limit < budget + headroom:
        return Verdict(
            "advisory",
            expected,
            gib(limit),
            f"leaves {gib(limit - budget)} beside vLLM's budget for Python, torch and the CUDA context (the field "
            "report's 105G left 9 GiB): a larger prompt or batch can push it over",
            c.memory.source,
        )
    return _pass(expected, gib(limit), c.memory.source)


# -- NCCL and Gloo ---------------------------------------------------------------------------------------
def _ends(ctx: Context, what: str) -> list[inv.Member]:
    ends = [m for _, m in ctx.inventory.members_of(ctx.node)]
    if not ends:
        raise NotApplicable(f"the inventory lists no rails for {ctx.node} to compare {what} with")
    return ends


def _devices(ctx: Context) -> tuple[list[str], list[str], str]:
    """(every RDMA device of the node, those with an ACTIVE port, where that was read)."""
    if ctx.ports is not None:
        every = sorted(ctx.ports)
        return every, [d for d in every if ctx.ports[d].active], f"{ctx.node}'s RDMA ports"
    devices = sorted({m.rdma_device for _, m in ctx.inventory.members_of(ctx.node)})
    return devices, devices, "the inventory's devices (offline: the node was not read)"


def _ib_hca(ctx: Context) -> Verdict:
    """NCCL's HCA filter (src/misc/utils.cc matchIfList: prefixes unless `=`, `^` excludes) over the node's
    devices. NCCL's IB transport uses only ACTIVE ports (net_ib ncclIbInitDevices): a device off the rails
    counts only when its port is up; a rail's device that is down still counts as chosen, since its link
    is the link checks' finding (roce-link-down), not the configuration's."""
    ends = _ends(ctx, "NCCL_IB_HCA")
    value = ctx.plan.env("NCCL_IB_HCA")
    every, active, read = _devices(ctx)
    wanted = sorted({m.rdma_device for m in ends})
    chosen = [d for d in ib_hca_selects(value, every) if d in active or d in wanted]
    missing = [d for d in wanted if d not in chosen]
    extra = [d for d in chosen if d not in wanted]
    shown = value if value is not None else "unset (every device)"
    found = f"NCCL_IB_HCA={shown}: NCCL uses {', '.join(chosen) or 'no device'} ({read})"
    where = ctx.plan.env_source("NCCL_IB_HCA")
    expected = f"NCCL uses the rails' devices {', '.join(wanted)}"
    if not chosen:
        return Verdict(
            "fail",
            expected,
            found,
            "no device matches: NCCL's IB transport has nothing to use and the collectives run over TCP "
            "sockets (NET/Socket), or NCCL stops when NCCL_IB_DISABLE or NCCL_NET pins IB",
            where,
        )
    if missing:
        return Verdict(
            "advisory",
            expected,
            found + f"; not {', '.join(missing)}",
            f"NCCL leaves {', '.join(missing)} unused: each unused half of a QSFP cable is about half the bandwidth "
            "(NVIDIA dgx-spark-playbooks #102/#103: about 3 GB/s until both halves were listed)",
            where,
        )
    if extra:
        return Verdict(
            "advisory",
            expected,
            found,
            f"NCCL may also route over {', '.join(extra)}, which is on no rail of the inventory: a path the other "
            "nodes may not share",
            where,
        )
    return _pass(expected, found, where)


def _ib_enabled(ctx: Context) -> Verdict:
    """NCCL_IB_DISABLE defaults to 0 (NCCL_PARAM(IbDisable, "IB_DISABLE", 0)); NCCL_NET picks a transport by name."""
    _ends(ctx, "NCCL's transport")
    disable, net = ctx.plan.env("NCCL_IB_DISABLE"), ctx.plan.env("NCCL_NET")
    off = disable is not None and disable.strip() not in ("", "0")
    socket = net is not None and net.strip().lower() == "socket"
    return _judged(
        not off and not socket,
        "fail",
        "NCCL's IB transport on (NCCL_IB_DISABLE unset or 0, NCCL_NET not Socket)",
        f"NCCL_IB_DISABLE={_value(disable)}, NCCL_NET={_value(net)}",
        "NCCL then runs its collectives over TCP sockets on the cable that RoCE should carry (NET/Socket)",
        ctx.plan.env_source("NCCL_IB_DISABLE") if off else ctx.plan.env_source("NCCL_NET"),
    )


def _gid_index(ctx: Context) -> Verdict:
    """A set NCCL_IB_GID_INDEX must be the rails' index; unset or empty (NCCL ignores an empty value), NCCL
    2.21 and later pick each device's first RoCE v2 IPv4 GID themselves, which tests_network's
    test_gid_index judges on the node's real GID table: nothing here to fault."""
    smallest = min((rail.gid_index for rail, _ in ctx.inventory.members_of(ctx.node)), default=3)
    value = ctx.plan.env("NCCL_IB_GID_INDEX")
    picked = gid_index_param(value)
    if value is None or picked is None:
        shown = f"{'unset' if value is None else repr(value)}: NCCL picks each device's first RoCE v2 IPv4 GID"
    else:
        shown = value
    return _judged(
        picked in (None, smallest),
        "fail",
        f"NCCL_IB_GID_INDEX={smallest} or unset (NCCL 2.21+ then picks each device's first RoCE v2 IPv4 GID; "
        "the network stage judges where that lands)",
        f"NCCL_IB_GID_INDEX={shown}",
        "a GID index that is not the RoCE v2 IPv4 entry of the rails' addresses makes the queue pairs fail to "
        "connect (ibv_modify_qp: errno 61, RTR) and the ranks time out",
        ctx.plan.env_source("NCCL_IB_GID_INDEX"),
    )


def _merge_nics(ctx: Context) -> Verdict:
    if len(_ends(ctx, "NCCL_IB_MERGE_NICS")) < 2:
        raise NotApplicable("NCCL_IB_MERGE_NICS matters only with two or more rails; this node is on one")
    value = ctx.plan.env("NCCL_IB_MERGE_NICS")
    effective = value if value not in (None, "") else "1"  # NCCL_PARAM(IbMergeNics, "IB_MERGE_NICS", 1)
    if ctx.inventory.topology == "ring":  # the halves lead to two neighbours: NCCL must see them apart
        return _judged(
            effective == "0",
            "fail",
            "NCCL_IB_MERGE_NICS=0 (on a ring each port's halves lead to another neighbour)",
            f"NCCL_IB_MERGE_NICS={_value(value)}" + (" (NCCL's default 1)" if value is None else ""),
            "merged, NCCL takes the two ports for one NIC and sends to each neighbour over both (a ring's field "
            "report: QP timeouts until the halves were kept apart)",
            ctx.plan.env_source("NCCL_IB_MERGE_NICS"),
        )
    return _judged(
        effective == "1",
        "advisory",
        "NCCL_IB_MERGE_NICS unset or 1 (NCCL's default: the cable's two halves one NIC)",
        f"NCCL_IB_MERGE_NICS={_value(value)}",
        "apart, NCCL may use one half per channel: about half the bandwidth of the two halves together",
        ctx.plan.env_source("NCCL_IB_MERGE_NICS"),
    )


def _up_with_ipv4(dev: Netdev | None) -> bool:
    """Set up (the UP flag) with an IPv4 address. Carrier is not asked: a cable or a peer that is down darkens
    the netdev, and that is the link checks' finding (roce-link-down, node-unreachable), not the setting's."""
    return dev is not None and dev.admin_up and bool(dev.addresses)


def _socket_ifname(ctx: Context) -> Verdict:
    """NCCL_SOCKET_IFNAME (NCCL src/misc/socket.cc ncclFindInterfaces: a prefix list matched against the node's
    interfaces) and GLOO_SOCKET_IFNAME (PyTorch's Gloo device) must name an interface that is up with an IPv4
    address; NCCL's bootstrap and Gloo advertise that address to every other rank."""
    control = ctx.inventory.control_netdev(ctx.node)
    if control is None:
        raise NotApplicable(
            "the inventory names no control plane ([control] netdev) to compare the socket interfaces with"
        )
    problems, found, advice = [], [], []
    for var in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"):
        value = ctx.plan.env(var)
        if value is None:
            advice.append(var)
            found.append(f"{var} unset")
            continue
        if ctx.netdevs is None:
            chosen = socket_ifname_matches(value, [control])
            found.append(f"{var}={value} (offline: against the control plane {control})")
            if not chosen:
                problems.append(f"{var}={value} does not select the control plane {control}")
            continue
        chosen = socket_ifname_matches(value, ctx.netdevs)
        usable = [n for n in chosen if _up_with_ipv4(ctx.netdevs.get(n))]
        found.append(f"{var}={value}: {', '.join(chosen) or 'no interface'}")
        if not usable:
            problems.append(
                f"{var}={value} selects {', '.join(chosen) or 'no interface of ' + ctx.node}"
                + (" (none up with an IPv4 address)" if chosen else "")
            )
    expected = f"interfaces that are up with an IPv4 address (the control plane {control})"
    where = ctx.plan.env_source("NCCL_SOCKET_IFNAME") or ctx.plan.env_source("GLOO_SOCKET_IFNAME")
    if problems:
        return Verdict(
            "fail",
            expected,
            "; ".join(problems),
            "NCCL's bootstrap stops with `no socket interface found`, or advertises an address the other ranks "
            "cannot reach, and the ranks time out",
            where,
        )
    if advice:
        return Verdict(
            "advice",
            expected,
            "; ".join(found),
            f"{' and '.join(advice)} unset: NCCL takes its first interface (not docker*, not lo) and Gloo the "
            f"address the hostname resolves to; pinning them to {control} makes the choice the inventory's "
            "(the network stage checks what the node resolves)",
            where,
        )
    return _pass(expected, "; ".join(found), where)


def _gloo_hostname(ctx: Context) -> Verdict:
    """PyTorch's ProcessGroupGloo::createDefaultDevice: without GLOO_SOCKET_IFNAME, Gloo binds the address the
    hostname resolves to; a loopback address there (Ubuntu's 127.0.1.1 line in /etc/hosts) is what every
    other rank is told to connect to."""
    if ctx.plan.env("GLOO_SOCKET_IFNAME") is not None:
        return _pass(
            "GLOO_SOCKET_IFNAME set, or the hostname resolving to a routable address", "GLOO_SOCKET_IFNAME set"
        )
    if ctx.hostname_addresses is None:
        raise NotApplicable("the node's hostname was not resolved (offline)")
    loopback = [a for a in ctx.hostname_addresses if ipaddress.ip_address(a).is_loopback]
    usable = [a for a in ctx.hostname_addresses if not ipaddress.ip_address(a).is_loopback]
    return _judged(
        bool(usable) and not (loopback and loopback[0] == ctx.hostname_addresses[0]),
        "fail",
        "GLOO_SOCKET_IFNAME set, or the node's hostname resolving first to an address the other nodes reach",
        f"GLOO_SOCKET_IFNAME unset; the hostname resolves to {', '.join(ctx.hostname_addresses) or 'nothing'}",
        "Gloo then binds that loopback address and tells the other ranks to connect to it: connectFullMesh fails "
        "or times out",
        None,
    )


def _socket_family(ctx: Context) -> Verdict:
    """NCCL_SOCKET_FAMILY (NCCL src/misc/socket.cc): unset, NCCL takes an interface's addresses of either family,
    IPv4 listed first; AF_INET6 makes it skip every IPv4 address."""
    family = ctx.plan.env("NCCL_SOCKET_FAMILY")
    return _judged(
        family in (None, "", "AF_INET"),
        "fail",
        "NCCL_SOCKET_FAMILY unset or AF_INET (the control plane's addresses are IPv4)",
        f"NCCL_SOCKET_FAMILY={_value(family)}",
        "NCCL then skips the interfaces' IPv4 addresses and advertises an IPv6 one (on the QSFP netdevs only "
        "link-local, which names this node's own interface), while the master address is IPv4",
        ctx.plan.env_source("NCCL_SOCKET_FAMILY"),
    )


# -- vLLM's own flags ---------------------------------------------------------------------------------------
def _headless(ctx: Context) -> Verdict:
    _mp(ctx, "--headless")
    if _ray(ctx):
        raise NotApplicable("with the Ray executor the workers are Ray's: no follower runs `vllm serve`")
    has = ctx.plan.vllm.has("--headless")
    if ctx.rank == 0:
        return _judged(
            not has,
            "fail",
            "rank 0 without --headless (it serves the API)",
            "--headless" if has else "no --headless",
            "rank 0 then serves no API",
            ctx.plan.command,
        )
    return _judged(
        has,
        "fail",
        f"rank {ctx.rank} with --headless (worker only)",
        "--headless" if has else "no --headless",
        "vLLM stops a follower that drives the engine itself: `collective_rpc should not be called on follower node`",
        ctx.plan.command,
    )


def _cudagraph_underscore(ctx: Context) -> Verdict:
    _mp(ctx, "-cc.cudagraph_mode")
    bad = [str(a) for a in ctx.plan.vllm.argv if re.search(r"cudagraph-mode", str(a))]
    return _judged(
        not bad,
        "fail",
        "cudagraph_mode spelled with an underscore",
        " ".join(bad) or "underscore",
        "pydantic rejects the hyphenated key and the container exits with status 2",
        ctx.plan.command,
    )


def _distributed_timeout(ctx: Context) -> Verdict:
    _mp(ctx, "--distributed-timeout-seconds")
    minimum = ctx.inventory.thresholds.min_distributed_timeout_s
    value = ctx.plan.vllm.value("--distributed-timeout-seconds")
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        seconds = None
    return _judged(
        seconds is not None and seconds >= minimum,
        "advisory",
        f"--distributed-timeout-seconds >= {minimum:g}",
        f"--distributed-timeout-seconds {_value(value)}"
        + (" (PyTorch's default: 600 s for NCCL)" if value is None else ""),
        "the first collective waits for the slowest rank's weights: a bound below the load skew kills the start "
        "(the field report: one node 300 s, the other 850 s); only the start shows the skew",
        ctx.plan.command,
    )


def _topology(ctx: Context) -> Verdict:
    _mp(ctx, "--nnodes and --node-rank")
    expected = {"--tensor-parallel-size": str(ctx.inventory.cluster.tensor_parallel_size)}
    if not _ray(ctx):
        expected |= {"--nnodes": str(len(ctx.inventory.nodes)), "--node-rank": str(ctx.rank)}
    found = {k: ctx.plan.vllm.value(k) for k in expected}
    if found.get("--node-rank") is None and "--node-rank" in expected and ctx.rank == 0:
        found["--node-rank"] = "0"  # vLLM's default node rank
    return _judged(
        found == expected,
        "fail",
        " ".join(f"{k} {v}" for k, v in expected.items()),
        " ".join(f"{k} {_value(v)}" for k, v in found.items()),
        "vLLM sizes its world from these: a node with another count or rank never joins, and the start waits",
        ctx.plan.command,
    )


def _flag_value(ctx: Context, flag: str, expected: str | None) -> tuple[bool, str, str]:
    value = ctx.plan.vllm.value(flag)
    if expected is None:
        has = ctx.plan.vllm.has(flag)
        return has, f"{flag} given", f"{flag} {_value(value)}" if has else "not given"
    return value == expected, f"{flag} {expected}", f"{flag} {_value(value)}"


def _reasoning_parser(ctx: Context) -> Verdict:
    _mp(ctx, "--reasoning-parser")
    spec = ctx.inventory.service
    ok, expected, found = _flag_value(ctx, "--reasoning-parser", spec.reasoning_parser if spec else None)
    return _judged(
        ok, "fail", expected, found, "the API then returns the reasoning inside the answer", ctx.plan.command
    )


def _tool_call_parser(ctx: Context) -> Verdict:
    _mp(ctx, "--tool-call-parser")
    spec = ctx.inventory.service
    ok, expected, found = _flag_value(ctx, "--tool-call-parser", spec.tool_call_parser if spec else None)
    auto = ctx.plan.vllm.has("--enable-auto-tool-choice")
    return _judged(
        ok and auto,
        "fail",
        expected + " and --enable-auto-tool-choice",
        found + ("" if auto else ", no --enable-auto-tool-choice"),
        "vLLM then refuses tool_choice auto (HTTP 400) or returns the call as text",
        ctx.plan.command,
    )


def _served_name(ctx: Context) -> Verdict:
    _mp(ctx, "--served-model-name")
    spec = ctx.inventory.service
    if spec is None:
        raise NotApplicable("the inventory has no [service] section to compare the served name with")
    value = ctx.plan.vllm.value("--served-model-name")
    model = ctx.plan.vllm.model_name
    served = value if value is not None else model  # vLLM serves the model argument when no name is given
    return _judged(
        served == spec.served_model_name,
        "fail",
        f"--served-model-name {spec.served_model_name}",
        f"--served-model-name {_value(value)}" + (f" (serving the model argument {model})" if value is None else ""),
        "clients asking for the inventory's name get 404 model not found",
        ctx.plan.command,
    )


RING_NCCL = {"NCCL_NET_PLUGIN": "none", "NCCL_IB_SUBNET_AWARE_ROUTING": "1"}  # NCCL_IB_MERGE_NICS=0: ib-merge-nics
RING_ALGO_FROM = 4  # NCCL_ALGO=Ring from four nodes: automatic selection gave QP timeouts on a 4-ring (eugr)


def _ring_only(ctx: Context, what: str) -> None:
    if ctx.inventory.topology != "ring":
        raise NotApplicable(f"{what} applies to a ring; this cluster is a {ctx.inventory.topology}")


def _ring_nccl(ctx: Context) -> Verdict:
    _ring_only(ctx, "NCCL's ring settings rule")
    expected = dict(RING_NCCL)
    if ctx.inventory.size >= RING_ALGO_FROM:
        expected["NCCL_ALGO"] = "Ring"
    wrong = [k for k, v in expected.items() if (ctx.plan.env(k) or "").lower() != v.lower()]  # NCCL: strcasecmp
    return _judged(
        not wrong,
        "fail",
        ", ".join(f"{k}={v}" for k, v in expected.items()) + f" (a ring of {ctx.inventory.size})",
        ", ".join(f"{k}={_value(ctx.plan.env(k))}" for k in expected),
        "on a ring NCCL must route each subnet to its neighbour and keep to the ring algorithm: the field's rings "
        "timed out in their queue pairs without these",
        ctx.plan.env_source(wrong[0]) if wrong else None,
    )


def _ray_on_ring(ctx: Context) -> Verdict:
    _ring_only(ctx, "the Ray-on-a-ring rule")
    _mp(ctx, "--distributed-executor-backend")
    backend = ctx.plan.vllm.value("--distributed-executor-backend")
    return _judged(
        backend != "ray",
        "fail",
        "--distributed-executor-backend mp (not ray on a ring)",
        f"--distributed-executor-backend {_value(backend)}",
        "Ray's placement on a ring put workers across non-adjacent nodes in the field's reports",
        ctx.plan.command,
    )


GPUS_PER_NODE = 1  # a GB10 has one GPU
PARALLEL_SIZES = ("--tensor-parallel-size", "--pipeline-parallel-size", "--data-parallel-size")  # vLLM's default: 1


def _parallel_size(ctx: Context) -> Verdict:
    _mp(ctx, "the parallel sizes")
    nodes = len(ctx.inventory.nodes)
    expected = (
        f"tensor x pipeline x data parallel = {nodes * GPUS_PER_NODE} (the GPUs: {nodes} nodes x {GPUS_PER_NODE})"
    )
    given = {flag: ctx.plan.vllm.value(flag) for flag in PARALLEL_SIZES}
    shown = " x ".join(f"{flag} {v}" if v is not None else f"{flag} 1 (default)" for flag, v in given.items())
    why = "vLLM waits for as many GPUs as the sizes multiply to: more never come, fewer leave nodes idle"
    if not all(v is None or v.isdigit() for v in given.values()):
        return Verdict("fail", expected, f"{shown} (not a whole number)", why, ctx.plan.command)
    product = math.prod(int(v or 1) for v in given.values())
    return _judged(product == nodes * GPUS_PER_NODE, "fail", expected, f"{shown} = {product}", why, ctx.plan.command)


def _host_ip(ctx: Context) -> Verdict:
    """VLLM_HOST_IP is the address vLLM gives the other ranks for this one (vllm/utils get_ip)."""
    value = ctx.plan.env("VLLM_HOST_IP")
    if value is None:
        return Verdict(
            "advice",
            "VLLM_HOST_IP unset, or an address of this node",
            "VLLM_HOST_IP unset: vLLM takes the address of the interface its default route leaves by",
            "on a node whose control plane is not the default route's interface, setting it to the control-plane "
            "address keeps vLLM's own traffic there",
        )
    if ctx.netdevs is None:
        mine = [a.split("/")[0] for _, m in ctx.inventory.members_of(ctx.node) for a in [m.address]]
        control = ctx.inventory.control_address(ctx.node)
        mine += [control] if control else []
        read = "the inventory's addresses (offline)"
    else:
        mine = [a.split("/")[0] for d in ctx.netdevs.values() for a in d.addresses]
        read = f"{ctx.node}'s addresses"
    return _judged(
        value in mine,
        "fail",
        f"VLLM_HOST_IP an address of {ctx.node}",
        f"VLLM_HOST_IP={value}; {read}: {', '.join(mine) or 'none'}",
        "vLLM tells the other ranks to reach this one there: they connect to another machine, or to nothing",
        ctx.plan.env_source("VLLM_HOST_IP"),
    )


def _model(ctx: Context) -> Verdict:
    _mp(ctx, "the model")
    spec = ctx.inventory.service
    if spec is None:
        raise NotApplicable("the inventory has no [service] section to compare the model with")
    model = ctx.plan.vllm.model_name
    ok = model == spec.model or (model is not None and model.rstrip("/").endswith("/" + spec.model.split("/")[-1]))
    return _judged(
        ok,
        "fail",
        f"the model {spec.model} (or a local copy of it)",
        f"vllm serve {_value(model)}",
        "the API then serves another model than the inventory's [service] promises",
        ctx.plan.command,
    )


def _shell_syntax(ctx: Context) -> Verdict:
    bad = [n for n in ctx.plan.notes if "is bash's; under" in n]
    return _judged(
        not bad,
        "fail",
        "a command script the shell that runs it reads as written",
        "; ".join(bad) or "read as written",
        "under sh (dash) bash's syntax does something else: the plan above is what dash runs",
        ctx.plan.command,
    )


RULES: tuple[Rule, ...] = (
    Rule(
        "host-network",
        "the host's network",
        "compose-host-network",
        _host_network,
        "vLLM docs, multi-node serving (examples/online_serving/run_cluster.sh: --network host); "
        "NCCL src/bootstrap.cc advertises the bootstrap interface's address",
    ),
    Rule(
        "shm",
        "shared memory for vLLM's workers",
        "compose-ipc-host",
        _shm,
        "vLLM docs, deployment/docker.md (--ipc=host or --shm-size)",
    ),
    Rule("restart-policy", "the restart policy", "compose-restart-policy", _restart, "the seed's deployment (advice)"),
    Rule(
        "rdma-device",
        "the RDMA devices in the container",
        "compose-rdma-device",
        _rdma_device,
        "NCCL net_ib ncclIbInit: ibv_get_device_list",
    ),
    Rule(
        "memory-pinning",
        "RDMA may pin memory (CAP_IPC_LOCK or memlock)",
        "compose-memory-pinning",
        _memory_pinning,
        "Linux drivers/infiniband/core/umem.c ib_umem_get",
    ),
    Rule(
        "memory-limit",
        "the container memory limit and vLLM's budget",
        "compose-memory-limit",
        _memory_limit,
        "vLLM --gpu-memory-utilization; the kernel's memory cgroup",
    ),
    Rule(
        "socket-family",
        "NCCL's socket family",
        "gloo-ipv6-timeout",
        _socket_family,
        "NCCL src/misc/socket.cc (NCCL_SOCKET_FAMILY)",
    ),
    Rule(
        "socket-ifname",
        "the socket interfaces NCCL and Gloo use",
        "nccl-socket-ifname",
        _socket_ifname,
        "NCCL src/misc/socket.cc ncclFindInterfaces; PyTorch ProcessGroupGloo (GLOO_SOCKET_IFNAME)",
    ),
    Rule(
        "gloo-hostname",
        "Gloo's address when GLOO_SOCKET_IFNAME is unset",
        "gloo-hostname-loopback",
        _gloo_hostname,
        "PyTorch ProcessGroupGloo::createDefaultDevice",
    ),
    Rule(
        "ib-enabled",
        "NCCL's IB transport on",
        "nccl-ib-disabled",
        _ib_enabled,
        "NCCL NCCL_PARAM(IbDisable, 0), NCCL_NET",
    ),
    Rule(
        "ib-gid-index",
        "the RoCE v2 IPv4 GID index",
        "nccl-gid-index",
        _gid_index,
        "NCCL src/transport/net_ib ncclIbGetGidIndex (NCCL_IB_GID_INDEX, -1 since 2.21)",
    ),
    Rule(
        "ib-hca",
        "the RDMA devices NCCL uses",
        "nccl-hca-incomplete",
        _ib_hca,
        "NCCL src/misc/utils.cc matchIfList (prefix list, = exact, ^ excludes); net_ib ncclIbInitDevices",
    ),
    Rule(
        "ib-merge-nics",
        "the cable's halves as NCCL sees them",
        "nccl-merge-nics",
        _merge_nics,
        "NCCL NCCL_PARAM(IbMergeNics, 1); the ring field reports (issue 19)",
    ),
    Rule("host-ip", "VLLM_HOST_IP is this node's", "env-mismatch", _host_ip, "vLLM vllm/utils get_ip (VLLM_HOST_IP)"),
    Rule(
        "headless",
        "--headless on followers only",
        "follower-not-headless",
        _headless,
        "vLLM v1 executor: collective_rpc should not be called on follower node",
    ),
    Rule(
        "cudagraph-mode",
        "cudagraph_mode spelled with an underscore",
        "cudagraph-mode-hyphen",
        _cudagraph_underscore,
        "vLLM CompilationConfig (pydantic, extra=forbid)",
    ),
    Rule(
        "distributed-timeout",
        "a distributed timeout over the load skew",
        "distributed-timeout-short",
        _distributed_timeout,
        "PyTorch c10d default timeouts; the field report's load skew",
    ),
    Rule(
        "topology",
        "TP size, node count and node rank",
        "distributed-args-wrong",
        _topology,
        "vLLM ParallelConfig (--nnodes, --node-rank)",
    ),
    Rule(
        "parallel-size",
        "TP x PP x DP = the GPUs",
        "parallel-size-not-gpus",
        _parallel_size,
        "vLLM ParallelConfig.world_size",
    ),
    Rule(
        "shell-syntax",
        "the command script under its own shell",
        "container-script-unreadable",
        _shell_syntax,
        "dash(1): no [[ ]], (( )), arrays, ==, source",
    ),
    Rule(
        "model",
        "the model the service promises",
        "wrong-model",
        _model,
        "the inventory's [service] model",
        rank0_only=True,
    ),
    Rule(
        "reasoning-parser",
        "the reasoning parser",
        "reasoning-parser-missing",
        _reasoning_parser,
        "vLLM --reasoning-parser",
        rank0_only=True,
    ),
    Rule(
        "tool-call-parser",
        "tool calling",
        "tool-call-parser-missing",
        _tool_call_parser,
        "vLLM --enable-auto-tool-choice --tool-call-parser",
        rank0_only=True,
    ),
    Rule(
        "served-model-name",
        "the served model name",
        "served-name-mismatch",
        _served_name,
        "vLLM --served-model-name",
        rank0_only=True,
    ),
    Rule(
        "ring-nccl",
        "the ring's NCCL settings",
        "nccl-ring-settings",
        _ring_nccl,
        "the ring field reports (issue 19)",
        topologies=("ring",),
    ),
    Rule(
        "ray-on-ring",
        "no Ray executor on a ring",
        "ray-on-ring",
        _ray_on_ring,
        "the ring field reports (issue 19)",
        topologies=("ring",),
    ),
)
