"""The vLLM container's log, read for what it says about startup and the fabric: from `docker logs
--timestamps` (the service stage's probe) or as users have it (a file, text pasted from an issue thread).
Formats from vLLM's own logger calls (reference: vllm.log_format_strings) and NCCL's.

A line may carry, in this order, `docker compose logs`' service prefix ("vllm-1  | "), Docker's RFC 3339
timestamp, and the process's own prefix ("(APIServer pid=1)", "(EngineCore_DP0 pid=93)", Ray's
"(RayWorkerWrapper pid=812, ip=10.0.0.2)"), maybe in ANSI colours; any may be missing. Pure, and never
refuses a log: what a line does not carry is None.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from gb10check.reading.parsers import bounded_line

__all__ = [
    "CAPTURED",
    "EAGER",
    "MILESTONES",
    "NOISE",
    "WRAP_MIN",
    "Channels",
    "Gdr",
    "LogLine",
    "Milestone",
    "NcclTransport",
    "Reached",
    "Stop",
    "connected",
    "connected_when_timed_out",
    "expected_milestones",
    "graph_mode",
    "meaningful_text",
    "milestones",
    "nccl_channels",
    "nccl_gdr",
    "nccl_transport",
    "nccl_version",
    "nccl_version_at",
    "no_dmabuf_at",
    "parse_docker_log",
    "serving_since",
    "stops",
    "tuning",
    "uses_graphs",
]

_STAMP = re.compile(r"^(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) ?(?P<text>.*)$")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
_COMPOSE = re.compile(r"^(?P<service>[A-Za-z0-9][\w.-]*)\s+\| ?")
_PROCESS = re.compile(r"^\s*\((?P<process>[A-Za-z_]\w*(?: pid=\d+)?(?:, ip=[0-9A-Fa-f.:]+)?)\)\s")
# a line that starts a record of its own (so a line before it of the wrap width was not wrapped)
_RECORD = re.compile(r"^\s*(?:\(|\[|\d{4}-\d\d-\d\d|(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\b|\S+:\d+:\d+ \[\d+\])")
# transformers' processor warnings every Qwen3 start prints: noise, never a fault (the field report's)
NOISE = re.compile(r"min_frames|max_frames")
WRAP_MIN = 60  # a terminal narrower than this is not one a log is copied from


@dataclass(frozen=True)
class LogLine:
    at: datetime | None  # Docker's timestamp, if the line (or the one it continues) had one
    text: str  # without the compose prefix, the timestamp and the colours; the process prefix kept
    number: int = 0  # where it starts in the text read, 1-based (0: not from a text)
    process: str | None = None  # "EngineCore_DP0 pid=93", "RayWorkerWrapper pid=812, ip=10.0.0.2"


def _stamp(value: str) -> datetime | None:
    stamp = re.sub(r"\.(\d{6})\d+", r".\1", value.replace("Z", "+00:00"))  # Docker: ns; Python: µs
    try:
        return datetime.fromisoformat(stamp)
    except ValueError:
        return None


def _wrap_width(raws: list[str]) -> int | None:
    """The width a terminal wrapped the text at: the longest line's length, when at least three lines have
    it exactly (a wrapped copy cuts every long line there); else None."""
    lengths = Counter(len(r) for r in raws if len(r) >= WRAP_MIN)
    if not lengths:
        return None
    width = max(lengths)
    return width if lengths[width] >= 3 else None


def parse_docker_log(text: str) -> list[LogLine]:
    """A vLLM log as Docker, Compose or a terminal gave it. Every non-empty line is read: a line longer than
    MAX_LINE keeps its first MAX_LINE characters and says how many more it had; a line a terminal wrapped is
    joined again; a line without a timestamp after stamped ones keeps the time of the one before (a
    traceback's continuation). Carriage returns (progress bars) keep what was drawn last."""
    raws = [_ANSI.sub("", bounded_line(raw).rstrip("\r").rsplit("\r", 1)[-1]) for raw in text.split("\n")]
    compose = sum(1 for r in raws if _COMPOSE.match(r)) * 2 >= max(1, sum(1 for r in raws if r.strip()))
    width = _wrap_width(raws)
    out: list[LogLine] = []
    joined = False
    for number, raw in enumerate(raws, 1):
        wrapped = width is not None and len(raw) == width
        if compose:
            raw = _COMPOSE.sub("", raw, count=1)
        if not raw.strip():
            joined = False
            continue
        m = _STAMP.match(raw)
        at, body = (_stamp(m["ts"]), m["text"]) if m else (None, raw)
        if joined and m is None and not _RECORD.match(body) and out:
            prev = out[-1]
            out[-1] = LogLine(prev.at, bounded_line(prev.text + body), prev.number, prev.process)
        else:
            if m is None and out:
                at = out[-1].at
            p = _PROCESS.match(body)
            out.append(LogLine(at, body, number, p["process"] if p else None))
        joined = wrapped
    return out


@dataclass(frozen=True)
class Milestone:
    name: str
    pattern: re.Pattern[str]
    ranks: str  # "all", "leader" (rank 0), "followers"
    graphs_only: bool = False  # logged only when CUDA graphs are captured (not in eager mode)

    def expected(self, rank: int, eager: bool) -> bool:
        if self.graphs_only and eager:
            return False
        return self.ranks == "all" or (self.ranks == "leader") == (rank == 0)


# Startup as the logs show it, in order (DOMAIN: "Startup, as the logs show it")
MILESTONES = (
    Milestone("headless worker launched", re.compile(r"Launching vLLM.*headless"), "followers"),
    Milestone("rank assigned", re.compile(r"rank \d+ in world size \d+ is assigned as .*TP rank \d+"), "all"),
    Milestone("loading weights", re.compile(r"Starting to load model|Loading model from scratch"), "all"),
    Milestone("weights loaded", re.compile(r"Model loading took [-\d.]+ GiB"), "all"),
    Milestone("KV cache memory", re.compile(r"Available KV cache memory: [-\d.]+ GiB"), "all"),
    Milestone("KV cache sized", re.compile(r"GPU KV cache size: [\d,]+ tokens"), "leader"),
    Milestone("CUDA graphs captured", re.compile(r"Graph capturing finished in \d+ secs"), "leader", graphs_only=True),
    Milestone("API serving", re.compile(r"Application startup complete"), "leader"),
)


@dataclass(frozen=True)
class Reached:
    milestone: str
    at: datetime | None
    line: str
    index: int = 0  # the line's place in the log


def milestones(lines: list[LogLine]) -> list[Reached]:
    """Each milestone's first line, in the order the log reached them."""
    out: list[Reached] = []
    seen: set[str] = set()
    for index, line in enumerate(lines):
        for m in MILESTONES:
            if m.name not in seen and m.pattern.search(line.text):
                seen.add(m.name)
                out.append(Reached(m.name, line.at, line.text.strip(), index))
    return out


def expected_milestones(rank: int, eager: bool) -> list[str]:
    return [m.name for m in MILESTONES if m.expected(rank, eager)]


# Where vLLM says which CUDA graph mode is in force (format strings of vLLM 0.12.0-0.34.0, quoted in
# selftests/data/commands/vllm.graph_mode_lines.from_source.txt with their files): the engine's config
# dump (rank 0 only), the overrides VllmConfig logs in every process (a headless follower too), the
# worker's own resolution (every rank, after the dump), eager mode; the last one logged is in force.
EAGER = "eager (enforce_eager)"
_GRAPH_MODE_LINES = (
    # the config dump: `compilation_config={..., 'cudagraph_mode': <CUDAGraphMode.FULL_DECODE_ONLY: (2, 0)>, ...}`
    re.compile(r"cudagraph_mode'?:\s*<CUDAGraphMode\.(?P<mode>\w+)"),
    # gpu_model_runner.py (0.12) / compilation.py (0.33): "...; setting cudagraph_mode=FULL_DECODE_ONLY"
    re.compile(r"setting cudagraph_mode=(?P<mode>\w+)"),
    # vllm.py: "Overriding cudagraph_mode to PIECEWISE." / "from FULL to PIECEWISE." / "FULL to NONE."
    re.compile(r"Overriding cudagraph_mode (?:from )?(?:\w+ )?to (?P<mode>\w+)"),
    # vllm.py: "Cudagraph mode FULL_DECODE_ONLY is not compatible with compilation mode 0.Overriding to NONE."
    # (0.12.0 overrides any mode but NONE without -cc.mode=3; 0.13+ only modes that need piecewise
    # compilation); compilation.py (0.33): "Cudagraph mode X requires piecewise capture, ... Overriding to Y."
    re.compile(r"Cudagraph mode \w+ (?:is not compatible|requires piecewise).*?Overriding to (?P<mode>\w+)"),
    # as a deployment's log was quoted in issue 16 (not a format string of upstream vLLM 0.12-0.34)
    re.compile(r"Cudagraph mode (?P<mode>\w+) is used"),
)
_EAGER_LINES = re.compile(
    r"enforce_eager=True|Cudagraph is disabled under eager mode|Enforce eager set, disabling torch\.compile"
)
# every rank that captures logs it (scope "local" in 0.12: each node's first rank; every process in 0.33)
_CAPTURED = re.compile(r"Graph capturing finished in \d+ secs")
CAPTURED = "captured (the mode not named)"


def graph_mode(lines: list[LogLine]) -> str | None:
    """The CUDA graph mode in force on this rank, as its log last says it (NONE or EAGER: no graphs);
    CAPTURED when the log names no mode but shows graphs captured; None when it says nothing."""
    found = None
    for line in lines:
        if _EAGER_LINES.search(line.text):
            found = EAGER
            continue
        for pattern in _GRAPH_MODE_LINES:
            m = pattern.search(line.text)
            if m:
                found = m["mode"]
                break
        else:
            if found is None and _CAPTURED.search(line.text):
                found = CAPTURED
    return found


def uses_graphs(mode: str | None) -> bool:
    """True when the mode captures CUDA graphs (not eager, not NONE); None (not logged) is not known to."""
    return mode is not None and not mode.startswith(("eager", "NONE"))


@dataclass(frozen=True)
class NcclTransport:
    kind: str  # "IB" or "Socket"
    devices: tuple[str, ...]  # RDMA devices (IB) or interfaces (Socket), as NCCL names them
    line: str


_NET_IB = re.compile(r"NET/IB : Using (?P<list>(?:\[\d+\]\S+\s*)+)")
_NET_SOCKET = re.compile(r"NET/Socket : Using (?P<list>(?:\[\d+\]\S+\s*)+)")
_ENTRY = re.compile(r"\[\d+\](?P<name>[^:\s/]+)")


def nccl_transport(lines: list[LogLine]) -> NcclTransport | None:
    """The network NCCL chose, from its INFO lines (NCCL_DEBUG=INFO): `NET/IB : Using [0]dev:1/RoCE ...`
    or `NET/Socket : Using [0]eth0:10.0.0.1<0> ...`. The last one logged wins (a restart in the log)."""
    found = None
    for line in lines:
        for kind, pattern in (("IB", _NET_IB), ("Socket", _NET_SOCKET)):
            m = pattern.search(line.text)
            if m:
                found = NcclTransport(kind, tuple(e["name"] for e in _ENTRY.finditer(m["list"])), line.text.strip())
    return found


@dataclass(frozen=True)
class Channels:
    """How NCCL connected its channels to the other nodes, as its INFO lines say (NCCL_DEBUG=INFO)."""

    network: str | None  # "IB", "Socket", "IBext_v10" (a plugin): `Using network X`, else the channels' own
    via: dict[str, int]  # per network transport ("NET/IB", "NET/IBext_v10", "NET/Socket"): channels using it
    line: str  # the line that shows the network in use (the first Socket one, where any)

    @property
    def sockets(self) -> bool:
        return self.network == "Socket" or "NET/Socket" in self.via


# NCCL src/transport/net.cc: "Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d%s%s" (the net's name:
# IB, Socket, or a plugin's such as IBext_v10); src/init.cc: "Using network %s"
_CHANNEL = re.compile(r"Channel \d+/\d+ : \d+\[\w+\] -> \d+\[\w+\] \[(?:send|receive)\] via (?P<via>NET/[A-Za-z]\w*)")
_USING_NETWORK = re.compile(r"NCCL INFO Using network (?P<net>\w+)")


def nccl_channels(lines: list[LogLine]) -> Channels | None:
    """NCCL's network and its channels over it; None when the log shows neither (NCCL_DEBUG unset)."""
    network, via, shown = None, Counter[str](), ""
    for line in lines:
        m = _USING_NETWORK.search(line.text)
        if m:
            network = m["net"]
            if not shown or network == "Socket":
                shown = line.text.strip()
            continue
        c = _CHANNEL.search(line.text)
        if c:
            via[c["via"]] += 1
            if not shown or (c["via"] == "NET/Socket" and "Socket" not in shown):
                shown = line.text.strip()
    if network is None and not via:
        return None
    return Channels(network, dict(via), shown)


# NCCL's word on GPU Direct RDMA per HCA (its net transports' format strings: src/transport/net_ib.cc and the
# RDMA plugin's, "NET/IB : GPU Direct RDMA Disabled for HCA %d '%s'" with " (no module)" in older releases,
# "GPU Direct RDMA (DMABUF) enabled for HCA", "(nvidia-peermem) enabled"); a channel over it ends "/GDRDMA"
_GDR = re.compile(
    r"(?P<net>NET/[^:]*?) ?: GPU Direct RDMA(?: \((?P<how>[\w-]+)\))? (?P<state>[Ee]nabled|[Dd]isabled) for HCA "
    r"(?P<n>\d+) '(?P<dev>[^']+)'"
)
_GDR_CHANNEL = re.compile(r"\[(?:send|receive)\] via NET/\S*?/GDRDMA")


@dataclass(frozen=True)
class Gdr:
    """GPU Direct RDMA as NCCL said it: per HCA enabled or not (and how: DMABUF, nvidia-peermem), the lines."""

    hcas: dict[str, bool]
    how: dict[str, str]
    lines: tuple[str, ...]
    channels_gdr: bool  # a channel runs over GDRDMA

    @property
    def on(self) -> bool:
        return bool(self.hcas) and all(self.hcas.values())

    def shown(self) -> str:
        return ", ".join(
            f"{hca} {'on' + (' (' + self.how[hca] + ')' if hca in self.how else '') if on else 'off'}"
            for hca, on in self.hcas.items()
        )


def nccl_gdr(lines: list[LogLine]) -> Gdr | None:
    """What NCCL said of GPU Direct RDMA per HCA; where two transports say it (NET/IB and an RDMA plugin),
    the one the channels run over (its NET/ name in a channel line) wins, else the last said; None when the
    log says nothing of it (NCCL_DEBUG unset)."""
    said: dict[str, dict[str, tuple[bool, str | None, str]]] = {}
    used: set[str] = set()
    gdr_channel = False
    for line in lines:
        m = _GDR.search(line.text)
        if m:
            net = m["net"].strip()
            said.setdefault(net, {})[m["dev"]] = (m["state"].lower() == "enabled", m["how"], line.text.strip())
            continue
        c = _CHANNEL_VIA.search(line.text)
        if c:
            used.add(c["via"])
            gdr_channel = gdr_channel or bool(_GDR_CHANNEL.search(line.text))
    if not said:
        return None
    nets = [n for n in said if any(v == n or v.startswith(n + "/") or n.startswith(v) for v in used)]
    chosen: dict[str, tuple[bool, str | None, str]] = {}
    for net in [n for n in said if n not in nets] + nets:  # the used network's word last: it wins
        chosen.update(said[net])
    return Gdr(
        {hca: on for hca, (on, _, _) in chosen.items()},
        {hca: how for hca, (_, how, _) in chosen.items() if how},
        tuple(dict.fromkeys(text for _, _, text in chosen.values())),
        gdr_channel,
    )


_CHANNEL_VIA = re.compile(r"\[(?:send|receive)\] via (?P<via>NET/[^/\s]+(?: [^/\s]+)*)")


_NCCL_VERSION = re.compile(r"vLLM is using nccl==(?P<v>\d+\.\d+\.\d+)|NCCL version (?P<w>\d+\.\d+\.\d+)")


def nccl_version(lines: list[LogLine]) -> str | None:
    found = nccl_version_at(lines)
    return found[1] if found else None


def nccl_version_at(lines: list[LogLine]) -> tuple[int, str] | None:
    """The first line that names NCCL's version (its index) and the version."""
    for i, line in enumerate(lines):
        m = _NCCL_VERSION.search(line.text)
        if m:
            return i, m["v"] or m["w"]
    return None


# NCCL's dlvsym probe of rdma-core's dma-buf registration, failed: it runs without GPU Direct RDMA (NVIDIA/nccl
# issue #2213: `dlvsym failed on mlx5dv_reg_dmabuf_mr - /lib/aarch64-linux-gnu/libmlx5.so: undefined symbol`)
_NO_DMABUF = re.compile(r"dlvsym failed on mlx5dv_reg_dmabuf_mr")


def no_dmabuf_at(lines: list[LogLine]) -> int | None:
    """The first line where NCCL says the container's libmlx5 lacks mlx5dv_reg_dmabuf_mr (its index)."""
    return next((i for i, line in enumerate(lines) if _NO_DMABUF.search(line.text)), None)


def meaningful_text(lines: list[LogLine]) -> str:
    """The log as text for symptom matching, without the known noise lines."""
    return "\n".join(line.text for line in lines if not NOISE.search(line.text))


# A rank that stopped: the timeouts a wedged collective leaves in the logs, in their authors' format strings
# (quoted with their files in selftests/data/commands/vllm.rank_timeout_lines.from_source.txt).
# PyTorch ProcessGroupNCCL.cpp WorkNCCL::checkTimeout: logPrefix() + "Watchdog caught collective operation
# timeout: " + WorkNCCL(SeqNum=, OpType=, NumelIn=, NumelOut=, Timeout(ms)=) + " ran for N milliseconds before
# timing out."; logPrefix() is "[PG ID i PG GUID g(desc) Rank r] " (older releases: "[PG g Rank r] ", "[Rank r] ")
_WATCHDOG = re.compile(
    r"(?:\[(?:PG [^\]]*?)?Rank (?P<rank>\d+)\] )?Watchdog caught collective operation timeout: "
    r"WorkNCCL\((?P<work>.*?)\) ran for (?P<ms>\d+) milliseconds before timing out"
)
_WORK_FIELD = re.compile(r"(?P<key>SeqNum|OpType)=(?P<value>[^,\s)]+)")
# vLLM v1/executor/multiproc_executor.py MultiprocExecutor.collective_rpc (0.12.0 to 0.34.0): f"RPC call to
# {method} timed out." once VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS (300) passed without the workers' answer
_RPC_TIMEOUT = re.compile(r"RPC call to (?P<method>\w+) timed out")


@dataclass(frozen=True)
class Stop:
    """Where a rank's log says it stopped waiting on the others: its collective's watchdog or vLLM's RPC."""

    kind: str  # "collective" (PyTorch's NCCL watchdog) or "rpc" (vLLM's executor)
    at: datetime | None
    what: str  # "ALLREDUCE SeqNum=1843, 600071 ms" (the collective and how long it ran) / "execute_model"
    line: str
    index: int

    def shown(self) -> str:
        return f"NCCL watchdog ({self.what})" if self.kind == "collective" else f"RPC call to {self.what}"


def stops(lines: list[LogLine]) -> list[Stop]:
    """Every collective or RPC timeout the log shows, in log order."""
    out = []
    for index, line in enumerate(lines):
        m = _WATCHDOG.search(line.text)
        if m:
            work = {f["key"]: f["value"] for f in _WORK_FIELD.finditer(m["work"])}
            what = f"{work.get('OpType', '?')} SeqNum={work.get('SeqNum', '?')}, {m['ms']} ms"
            out.append(Stop("collective", line.at, what, line.text.strip(), index))
            continue
        r = _RPC_TIMEOUT.search(line.text)
        if r:
            out.append(Stop("rpc", line.at, r["method"], line.text.strip(), index))
    return out


def serving_since(lines: list[LogLine]) -> int:
    """The log index from which this rank had started (its KV cache sized: the start's collectives are
    behind it). A start still under way: past the end; a log whose start is out of view (--tail): 0."""
    reached = milestones(lines)
    kv = next((r.index for r in reached if r.milestone == "KV cache memory"), None)
    if kv is not None:
        return kv
    if reached or any(_TUNING.search(line.text) for line in lines):
        return len(lines)  # the start is in view, or its kernel tuning is: still starting
    return 0


# A start compiling and tuning its kernels (torch.compile's graphs, FlashInfer's autotuning, the JIT
# warmup), between its weights and its KV cache or CUDA graphs: the first start after a topology change
# (another TP size, other nodes) does it all again, about 36 minutes in one field report. vLLM's format
# strings (selftests/data/commands/vllm.kernel_tuning_lines.from_source.txt): compilation/backends.py and
# monitor.py, model_executor/warmup/kernel_warmup.py, 0.12.0 and 0.34.0 ("%s" a prefix in 0.34.0)
_TUNING = re.compile(
    r"Dynamo bytecode transform time: [\d.]+ s"
    r"|Compiling a graph for (?:dynamic shape|shape \S+|compile range .+?) takes [\d.]+ s"
    r"|torch\.compile takes [\d.]+ s in total|Starting torch\.compile"
    r"|Running FlashInfer autotune with|Warming up FlashInfer attention|JIT kernel warmup starting"
    # FlashInfer's own autotuner (flashinfer.jit's logger, as a 4-node GB10 start logged it:
    # selftests/data/logs/field/spark4-autotune-shm.log)
    r"|\[Autotuner\]: Autotuning process starts"
)


def tuning(lines: list[LogLine]) -> Reached | None:
    """The log's last kernel compilation or tuning line when it came after the last startup milestone
    (the start is compiling or tuning now), else None."""
    reached = milestones(lines)
    after = reached[-1].index if reached else -1
    for index in range(len(lines) - 1, after, -1):
        if _TUNING.search(lines[index].text):
            return Reached("compiling and tuning kernels", lines[index].at, lines[index].text.strip(), index)
    return None


# The ranks had connected: vLLM assigned this rank its place (after torch.distributed's init), NCCL finished
# a communicator's init, or Gloo's full mesh came up (format strings: vLLM parallel_state.py, NCCL
# src/init.cc "Init COMPLETE", Gloo's "[Gloo] Rank %d is connected to %d peer ranks")
_CONNECTED = re.compile(
    r"rank \d+ in world size \d+ is assigned as|NCCL INFO ncclCommInitRank.*Init COMPLETE"
    r"|\[Gloo\] Rank \d+ is connected to \d+ peer ranks"
)


# A timeout that itself names a connection made: Gloo's pair timing out on a recv or send it was waiting
# for (gloo/transport/tcp: "Timed out waiting Nms for recv operation to complete", "Application timeout
# caused pair closure"), c10d's socket to the store with both ends named (socket.cpp waitForInput:
# "SocketImpl(fd=.., addr=.., remote=..) timed out after Nms"): the address and the port were reachable.
_CONNECTED_TIMEOUT = re.compile(
    r"for (?:recv|send) operation to complete|caused pair closure|SocketImpl\([^)]*\bremote=[^)]*\)"
)


def connected(lines: list[LogLine]) -> bool:
    """True when the log shows the ranks connected to each other."""
    return any(_CONNECTED.search(line.text) for line in lines)


def connected_when_timed_out(line: LogLine) -> bool:
    """The timeout's own line shows the connection had been made (a pair, a socket with both ends)."""
    return _CONNECTED_TIMEOUT.search(line.text) is not None
