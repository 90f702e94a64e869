"""NCCL in the serving image, each rank as it will run (tests_network/test_collective.py, issue 28).

On every node at once, a throwaway container of the deployment's image with the rank's container settings
and environment from its launch plan (network, IPC, shared memory, memlock, capabilities, devices, GPUs and
every NCCL_/GLOO_/VLLM_/TP_/UCX_/TORCH_ variable), `--rm --pull never`, a name of its own, runs PROGRAM with
the image's own python3 and torch: `torch.distributed` with the NCCL backend at vLLM's master address and
port, world size and ranks as the plan's, one GPU each. NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS=INIT,NET for
this run only: NCCL's own lines say the network, the channels, GPU Direct RDMA and its version.

The program prints four kinds of line of its own, each `gb10check-collective <kind> <json>`: `started` (the
NCCL torch loaded, its version), `joined` (the
process group is up, with how long it took), `result` (an all_reduce and an all_gather of known tensors
checked exactly, and each size's bus bandwidth, nccl-tests' formulas), `error` (what stopped it: the
exception's type and text). parse_rank_output reads a rank's output into a RankOutcome. Pure.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field

from gb10check.deployment.launch.plan import LaunchPlan
from gb10check.reading.parsers.vllm_log import Channels, Gdr, nccl_channels, nccl_gdr, nccl_version, parse_docker_log

__all__ = [
    "ENV_PREFIXES",
    "KINDS",
    "MARK",
    "PROGRAM",
    "Figure",
    "RankOutcome",
    "container_name",
    "docker_run_argv",
    "parse_rank_output",
    "remove_command",
]

MARK = "gb10check-collective"  # every container the check starts is named MARK-<session>-r<rank>
ENV_PREFIXES = ("NCCL_", "GLOO_", "VLLM_", "TP_", "UCX_", "TORCH_", "CUDA_", "NVIDIA_", "OMPI_")
KINDS = ("started", "joined", "result", "error")

# Run by the image's python3 (`python3 -c PROGRAM`); its settings come in GB10CHECK_* variables.
PROGRAM = r"""
import datetime, json, os, sys, time, traceback
def say(kind, **what):
    print("gb10check-collective", kind, json.dumps(what), flush=True)
e = os.environ
rank, world = int(e["GB10CHECK_RANK"]), int(e["GB10CHECK_WORLD"])
try:
    import torch, torch.distributed as dist
    say("started", rank=rank, nccl=".".join(str(v) for v in torch.cuda.nccl.version()), torch=torch.__version__)
    torch.cuda.set_device(0)
    start = time.monotonic()
    dist.init_process_group(
        "nccl", init_method="tcp://%s:%s" % (e["GB10CHECK_MASTER"], e["GB10CHECK_PORT"]), rank=rank,
        world_size=world, timeout=datetime.timedelta(seconds=float(e["GB10CHECK_JOIN_S"])),
        device_id=torch.device("cuda:0"),
    )
    x = torch.full((1024,), float(rank + 1), device="cuda")
    dist.all_reduce(x)
    torch.cuda.synchronize()
    say("joined", rank=rank, seconds=round(time.monotonic() - start, 3))
    allreduce_ok = bool((x == world * (world + 1) / 2).all())
    mine = torch.full((1024,), float(rank), device="cuda")
    out = torch.empty(1024 * world, device="cuda")
    dist.all_gather_into_tensor(out, mine)
    want = torch.arange(world, device="cuda", dtype=torch.float32).repeat_interleave(1024)
    allgather_ok = bool((out == want).all())
    sizes, figures = [int(s) for s in e["GB10CHECK_SIZES"].split(",")], []
    for op in ("all_gather", "all_reduce"):
        for size in sizes:
            n = size // 4
            if op == "all_gather":
                send, recv = torch.ones(n // world, device="cuda"), torch.empty(n // world * world, device="cuda")
                run = lambda: dist.all_gather_into_tensor(recv, send)
                factor = (world - 1) / world
            else:
                buf = torch.ones(n, device="cuda")
                run = lambda: dist.all_reduce(buf)
                factor = 2 * (world - 1) / world
            for _ in range(2):
                run()
            torch.cuda.synchronize()
            t = time.monotonic()
            for _ in range(5):
                run()
            torch.cuda.synchronize()
            seconds = (time.monotonic() - t) / 5
            figures.append({"op": op, "bytes": size, "busbw_gbs": round(size / seconds * factor / 1e9, 3)})
    say("result", rank=rank, allreduce_ok=allreduce_ok, allgather_ok=allgather_ok, figures=figures)
    dist.destroy_process_group()
except BaseException as exc:
    say("error", rank=rank, type=type(exc).__name__, message=str(exc)[-2000:])
    sys.exit(3)
"""


def container_name(session: str, rank: int) -> str:
    return f"{MARK}-{session}-r{rank}"


def remove_command(name: str) -> str:
    """What removes the rank's container, whatever state it is in (`docker rm -f`: a running one stopped)."""
    return f"docker rm -f {shlex.quote(name)}"


def docker_run_argv(
    plan: LaunchPlan,
    *,
    image: str,
    name: str,
    world: int,
    master: str,
    port: int,
    join_seconds: float,
    sizes: list[int],
) -> list[str]:
    """The rank's throwaway container: the plan's container settings and environment, PROGRAM as its command."""
    c = plan.container
    argv = ["docker", "run", "--rm", "--pull", "never", "--name", name, "--label", f"{MARK}=1"]
    if isinstance(c.network.value, str):
        argv += ["--network", c.network.value]
    if isinstance(c.ipc.value, str):
        argv += ["--ipc", c.ipc.value]
    if isinstance(c.shm_size.value, int) and not isinstance(c.shm_size.value, bool):
        argv += ["--shm-size", str(c.shm_size.value)]
    if c.privileged.value is True:
        argv.append("--privileged")
    for cap in c.cap_add.value if isinstance(c.cap_add.value, tuple) else ():
        argv += ["--cap-add", cap]
    for device in c.devices.value if isinstance(c.devices.value, tuple) else ():
        argv += ["--device", device]
    if isinstance(c.memlock.value, tuple):
        soft, hard = c.memlock.value
        argv += ["--ulimit", f"memlock={soft}:{hard}"]
    if isinstance(c.runtime.value, str):
        argv += ["--runtime", c.runtime.value]
    argv += ["--gpus", c.gpus.value if isinstance(c.gpus.value, str) else "all"]
    env = {k: v for k, v in plan.known_env().items() if k.startswith(ENV_PREFIXES)}
    env.update(
        NCCL_DEBUG="INFO",
        NCCL_DEBUG_SUBSYS="INIT,NET",
        GB10CHECK_RANK=str(plan.rank),
        GB10CHECK_WORLD=str(world),
        GB10CHECK_MASTER=master,
        GB10CHECK_PORT=str(port),
        GB10CHECK_JOIN_S=f"{join_seconds:g}",
        GB10CHECK_SIZES=",".join(str(s) for s in sizes),
    )
    for key, value in sorted(env.items()):
        argv += ["-e", f"{key}={value}"]
    return [*argv, "--entrypoint", "python3", image, "-c", PROGRAM]


@dataclass(frozen=True)
class Figure:
    op: str  # all_gather, all_reduce
    bytes: int
    busbw_gbs: float


@dataclass(frozen=True)
class RankOutcome:
    """What one rank's container printed and how it ended."""

    rank: int
    rc: int | None  # None: it did not end within the bound
    joined: bool
    join_seconds: float | None
    allreduce_ok: bool | None  # None: no result line
    allgather_ok: bool | None
    figures: tuple[Figure, ...]
    error: str  # the program's own `error` line (type: message), else ""
    said: str  # NCCL's or the runtime's line that says why it stopped (a WARN, "Connection refused"...)
    version: str | None
    channels: Channels | None
    gdr: Gdr | None
    lines: tuple[str, ...] = field(repr=False, default=())

    @property
    def done(self) -> bool:
        return self.allreduce_ok is not None

    def tail(self, count: int = 3) -> str:
        """Its last lines that are not NCCL's INFO, for a failure's detail."""
        kept = [ln.strip() for ln in self.lines if ln.strip() and " NCCL INFO " not in ln and not ln.startswith(MARK)]
        said = [x for x in (self.error, *kept[-count:]) if x]
        return " | ".join(said) or "(no output)"


# what says why a rank stopped, most telling first: NCCL's warnings, then the runtime's and Docker's words
_WHY = re.compile(
    r"NCCL WARN .*|Connection refused.*|No route to host.*|Network is unreachable.*|timed out.*|Timeout.*"
    r"|docker: Error response from daemon: .*|Unable to find image .*|No such image.*",
    re.I,
)


def parse_rank_output(rank: int, text: str, rc: int | None) -> RankOutcome:
    """A rank's output (its container's stdout and stderr) into what it proved."""
    own: dict[str, dict[str, object]] = {}
    for line in text.splitlines():
        parts = line.strip().split(" ", 2)
        if len(parts) == 3 and parts[0] == MARK and parts[1] in KINDS:
            try:
                value = json.loads(parts[2])
            except ValueError:
                continue
            if isinstance(value, dict):
                own[parts[1]] = value
    log = parse_docker_log(text)
    result = own.get("result", {})
    figures = tuple(
        Figure(str(f.get("op")), int(f.get("bytes", 0)), float(f.get("busbw_gbs", 0.0)))
        for f in result.get("figures", [])  # type: ignore[attr-defined]
        if isinstance(f, dict)
    )
    err = own.get("error")
    error = f"{err.get('type')}: {err.get('message')}" if err else ""
    said = next((m.group(0).strip() for line in text.splitlines() if (m := _WHY.search(line))), "")
    joined = own.get("joined")
    return RankOutcome(
        rank=rank,
        rc=rc,
        joined=joined is not None,
        join_seconds=float(joined["seconds"]) if joined and isinstance(joined.get("seconds"), int | float) else None,  # type: ignore[arg-type]
        allreduce_ok=bool(result["allreduce_ok"]) if "allreduce_ok" in result else None,
        allgather_ok=bool(result["allgather_ok"]) if "allgather_ok" in result else None,
        figures=figures,
        error=error,
        said=said,
        version=str(own["started"]["nccl"]) if "nccl" in own.get("started", {}) else nccl_version(log),
        channels=nccl_channels(log),
        gdr=nccl_gdr(log),
        lines=tuple(text.splitlines()),
    )
