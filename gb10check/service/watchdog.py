"""Waiting for the service to come up while watching every node's memory (`--wait-ready`).

While vLLM loads weights, nvidia-smi blocks on the driver lock and MemAvailable falls from 110+ GiB
to 17-24 GiB; a start that does not fit keeps falling until the driver deadlocks the machine. So
the wait polls /proc/meminfo (never nvidia-smi) and the container on every node, one round trip per
node per poll, nodes in parallel, and /health on the API node; it ends as soon as:
- /health answers 200 (ready);
- a node's MemAvailable is below the stop threshold (`memavailable-low`), at once; with
  `--stop-on-low-memory` the deployment's containers are stopped first (`docker stop`, bounded:
  the suite's one action that changes a node, opt-in, logged in the reports);
- a container is no longer running (the log says why);
- the wait's budget is spent: a hang, unless a node's log shows the start compiling and tuning its
  kernels (the first start after a topology change does it all again, about 36 minutes in one field
  report): then the wait says the start is progressing and why it can take that long (`startup-retuning`).
The loop is tenacity's (fixed interval, stop after the budget); every command and request in it
is bounded on its own.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import tenacity

from gb10check import inventory as inv
from gb10check.errors import GB10Error, ServiceError
from gb10check.judging.fit import GIB
from gb10check.reading.node import ClusterNodes
from gb10check.reading.parallel import map_parallel
from gb10check.reading.parsers.docker import Container
from gb10check.reading.parsers.vllm_log import Reached, milestones, tuning
from gb10check.reading.probes import CONTAINER, DOCKER_LOGS, MEMINFO

if TYPE_CHECKING:  # the wait is given the client: importing it (openai, httpx) is the service stage's cost
    from gb10check.service.api import ApiClient

__all__ = [
    "POLLED",
    "POLL_SECONDS",
    "RETUNING_NOTE",
    "STOP_TIMEOUT",
    "NodeState",
    "Readiness",
    "not_ready",
    "poll_node",
    "stop_containers",
    "wait_ready",
]

POLL_SECONDS = 2.0
STOP_TIMEOUT = 30  # docker stop -t: vLLM's workers get this long to exit before SIGKILL


@dataclass(frozen=True)
class NodeState:
    node: str
    mem_available: int | None = None  # bytes
    container: Container | None = None
    milestone: str | None = None  # the last startup milestone its log reached
    error: str = ""  # why the node could not be read this time
    tuning: Reached | None = None  # the log's last kernel compilation/tuning line, when it is past the milestone

    def shown(self) -> str:
        mem = f"{self.mem_available / GIB:.1f} GiB" if self.mem_available is not None else "?"
        step = ", ".join(s for s in (self.milestone, "compiling and tuning kernels" if self.tuning else None) if s)
        return f"{self.node} {mem}" + (f" ({step})" if step else "")


@dataclass
class Readiness:
    """What the wait saw: for the reports, pass or fail."""

    ready: bool = False
    seconds: float = 0.0
    polls: int = 0
    lowest: dict[str, int] = field(default_factory=dict)  # node -> lowest MemAvailable seen, bytes
    last: dict[str, NodeState] = field(default_factory=dict)
    stopped: list[str] = field(default_factory=list)  # nodes whose containers the watchdog stopped
    why: str = ""  # why it ended without /health 200
    hint: str = ""


POLLED = (MEMINFO, CONTAINER, DOCKER_LOGS)  # the snapshot's own reads, read again each poll


def poll_node(cluster: ClusterNodes, name: str) -> NodeState:
    """One round trip: MemAvailable, the container's state, the last milestone of its log."""
    try:
        snap = cluster[name].read_now(POLLED)
        mem = snap.fact(MEMINFO).available
        container = snap.fact(CONTAINER)
    except GB10Error as exc:
        return NodeState(name, error=str(exc))
    try:
        lines = snap.fact(DOCKER_LOGS)
    except GB10Error:  # no log to read yet (the container is still being created): no milestone
        lines = []
    reached = milestones(lines)
    return NodeState(name, mem, container, reached[-1].milestone if reached else None, tuning=tuning(lines))


def stop_containers(cluster: ClusterNodes, deployment: inv.Deployment) -> list[str]:
    """`docker stop` the deployment's container on every node, nodes in parallel, each bounded."""
    command = f"docker stop -t {STOP_TIMEOUT} {shlex.quote(deployment.container)}"

    def one(name: str) -> str | None:
        try:
            res = cluster[name].run(command, timeout=STOP_TIMEOUT + 15)
        except GB10Error:
            return None
        return name if res.rc == 0 else None

    return [n for n in map_parallel(one, cluster.nodes, name="gb10check-stop") if n]


def wait_ready(
    api: ApiClient,
    cluster: ClusterNodes,
    deployment: inv.Deployment,
    budget: float,
    stop_below_gib: float,
    stop_on_low_memory: bool,
    progress: Callable[[str], None],
) -> Readiness:
    seen = Readiness()
    start = time.monotonic()
    floor = int(stop_below_gib * GIB)

    def attempt() -> bool:
        seen.polls += 1
        states = dict(zip(cluster.nodes, map_parallel(lambda n: poll_node(cluster, n), cluster.nodes,
                                                      name="gb10check-watch"), strict=True))  # fmt: skip
        seen.last = states
        for name, state in states.items():
            if state.mem_available is not None:
                seen.lowest[name] = min(seen.lowest.get(name, state.mem_available), state.mem_available)
        low = [s for s in states.values() if s.mem_available is not None and s.mem_available < floor]
        if low:
            shown = ", ".join(f"{s.node} {s.mem_available / GIB:.1f} GiB" for s in low)  # type: ignore[operator]
            waited = time.monotonic() - start
            seen.why = (
                f"MemAvailable fell below {stop_below_gib:g} GiB on {shown}, {waited:.0f} s into the wait of {budget:g}"
            )
            seen.hint = "memavailable-low"
            if stop_on_low_memory:
                seen.stopped = stop_containers(cluster, deployment)
                after = map_parallel(lambda n: poll_node(cluster, n), cluster.nodes, name="gb10check-watch")
                now = ", ".join(
                    f"{s.node} {s.container.status} (exit {s.container.exit_code})" if s.container else f"{s.node} ?"
                    for s in after
                )
                sent = ", ".join(seen.stopped) or "no node"
                seen.why += f"; --stop-on-low-memory: docker stop sent on {sent}, now {now}"
            return True
        exited = [s for s in states.values() if s.container is not None and not s.container.running]
        if exited:
            seen.why = (
                "the container exited during the wait on "
                + ", ".join(
                    f"{s.node} ({s.container.status}, exit {s.container.exit_code})" for s in exited if s.container
                )
                + f", {time.monotonic() - start:.0f} s into it"
            )
            seen.hint = "container-exited"
            return True
        try:
            seen.ready = api.get("/health").status == 200
        except ServiceError:
            seen.ready = False
        elapsed = time.monotonic() - start
        progress(
            f"waiting for {api.base}/health: {elapsed:.0f} s of {budget:g}; MemAvailable "
            + ", ".join(s.shown() for s in states.values())
            + (RETUNING_NOTE if any(s.tuning for s in states.values()) else "")
        )
        return seen.ready

    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_result(lambda done: not done),
        stop=tenacity.stop_after_delay(budget),
        wait=tenacity.wait_fixed(POLL_SECONDS),
        retry_error_callback=lambda _state: False,
        sleep=time.sleep,
    )
    retrying(attempt)
    seen.seconds = time.monotonic() - start
    if not seen.ready and not seen.why:
        seen.why, seen.hint = not_ready(seen.last, budget)
    return seen


RETUNING_NOTE = "; a first start after a topology change re-tunes its kernels (about 36 min in one field report)"


def not_ready(states: dict[str, NodeState], budget: float) -> tuple[str, str]:
    """Why a wait whose budget is spent ended, and its hint: a start compiling and tuning its kernels is
    progressing (the first after a topology change can take far longer than usual), else /health is late."""
    said = f"/health did not answer 200 within {budget:g} s"
    busy = [s for s in states.values() if s.tuning is not None]
    if not busy:
        return said, "service-not-ready"
    shown = "; ".join(
        f"{s.node} after {s.milestone or 'its start'}"
        + (f", at {s.tuning.at:%H:%M:%S}" if s.tuning and s.tuning.at else "")
        + f": {s.tuning.line[:160] if s.tuning else ''}"
        for s in busy
    )
    return (
        f"{said}, but the start is progressing, not hung: compiling and tuning kernels, which the first start "
        "after a topology change (another TP size, other nodes) does all again and which can take far longer "
        f"than usual (about 36 minutes in one field report): wait longer, do not restart. {shown}",
        "startup-retuning",
    )
