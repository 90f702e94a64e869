"""What each node's vLLM container logged (docker logs, in the snapshot): its startup reached
serving, milestone by milestone (which came last, how long each took, the graph mode in force);
no fault of the troubleshooting table (the catalogue's symptoms; the known noise lines are not
faults); every rank alive (no collective or RPC timeout since it started; a failure names the rank
whose timeout came first across the nodes); NCCL on RDMA over the inventory's devices, not on sockets;
no NCCL version known to deadlock with CUDA graphs. When the API is down, these say which row of the table applies."""

import pytest

from fixtures.hints import KNOWN_ISSUES
from gb10check.errors import GB10Error
from gb10check.judging.diagnosis import startup_findings, stopped
from gb10check.reading import probes
from gb10check.reading.facts import container
from gb10check.reading.parsers.vllm_log import (
    expected_milestones,
    graph_mode,
    milestones,
    nccl_gdr,
    nccl_transport,
    nccl_version,
    serving_since,
    stops,
    tuning,
    uses_graphs,
)

pytestmark = pytest.mark.service

# the known issue (gb10check/judging/known_issues.toml) whose NCCL versions this check reads from the log: NCCL 2.28.9
# deadlocks cross-node collectives captured in CUDA graphs (2.30.4 fixed it)
NCCL_GRAPH_DEADLOCK = "nccl-2-28-9-cuda-graph-deadlock"
ALIVE_HINTS = ("rank-wedged",)  # test_rank_alive's findings: the log check leaves them to it


def _log(node, deployment, service_snapshots, evidence):
    snap = service_snapshots[node.name]
    c = container(snap)
    evidence.expect(
        c is not None,
        what=f"container {deployment.container}",
        expected="present (docker compose up on every node)",
        found=f"{c.status}" if c is not None else "no such container",
        hints=("container-missing",),
    )
    return c, snap.fact(probes.DOCKER_LOGS)


def _graph_mode(node, lines, service_snapshots):
    """The graph mode in force on this rank, and whose log said it: this rank's own, else the first other
    rank's (one deployment, one compilation config; a headless follower has no config dump to log)."""
    mode = graph_mode(lines)
    if mode is not None:
        return mode, ""
    for name, snap in service_snapshots.items():
        if name == node.name:
            continue
        try:
            theirs = graph_mode(snap.fact(probes.DOCKER_LOGS)) if container(snap) is not None else None
        except GB10Error:
            continue  # an unreachable node's own checks say so
        if theirs is not None:
            return theirs, f" ({name}'s log: this rank's does not name it)"
    return None, ""


def _seconds(a, b):
    return f"{(b - a).total_seconds():.0f} s" if a is not None and b is not None else "?"


@pytest.mark.hints("startup-incomplete")
def test_startup_reached_serving(node, deployment, service_snapshots, findings, evidence):
    """The rank's startup reached serving.

    The node's container is there and its log reaches serving: each milestone and its time recorded, and the graph
    mode in force. What the log showed after the start is not the start's verdict (the log check judges it); a start
    still compiling and tuning kernels is named as such."""
    c, lines = _log(node, deployment, service_snapshots, evidence)
    mode, whose = _graph_mode(node, lines, service_snapshots)
    eager = mode is not None and not uses_graphs(mode)
    reached = milestones(lines)
    want = expected_milestones(node.spec.rank, eager)
    got = [r.milestone for r in reached]
    missing = [m for m in want if m not in got]
    steps = ", ".join(
        f"{r.milestone} (+{_seconds(reached[i - 1].at if i else None, r.at)})" if i else r.milestone
        for i, r in enumerate(reached)
    )
    evidence.fact("graph_mode", f"{mode}{whose}" if mode else "not logged on any rank")
    if reached and reached[0].at and reached[-1].at:
        evidence.figure("startup_seconds", (reached[-1].at - reached[0].at).total_seconds())
    mine = startup_findings(findings, node.name, reached, want[-1])  # after its start, the log check's
    busy = tuning(lines) if missing and c.running else None  # still compiling and tuning: progressing
    evidence.expect(
        not missing and c.running,
        what=f"startup of {c.name} (rank {node.spec.rank}; {c.status})",
        expected=" -> ".join(want),
        found=(steps or "no milestone")
        + (f"; not reached: {', '.join(missing)}" if missing else "")
        + ("" if c.running else f"; the container {c.status} (exit {c.exit_code})")
        + (f"; still compiling and tuning kernels (its log{_at(busy)}: {busy.line[:160]})" if busy else ""),
        detail="; ".join(f"the log shows [{f.hint}]: {f.line[:200]}" for f in mine),
        # what the log says, first; else a container that is gone says that; else a start still tuning its
        # kernels; else the milestones do
        hints=tuple(f.hint for f in mine)
        or (() if c.running else ("container-exited",))
        or (("startup-retuning",) if busy else ()),
    )


@pytest.mark.hints("unexpected-output")
def test_log_names_no_known_fault(node, deployment, service_snapshots, findings, evidence):
    """The log shows no known fault.

    The node's container log shows no fault of the troubleshooting table (the catalogue's symptoms), its known noise
    lines excepted; a collective or RPC timeout is the rank-alive check's."""
    _, lines = _log(node, deployment, service_snapshots, evidence)
    mine = [f for f in findings if f.node == node.name and f.from_log and f.hint not in ALIVE_HINTS]
    evidence.expect(
        not mine,
        what="the container log against the troubleshooting catalogue's symptoms",
        expected="no known fault (the transformers min_frames/max_frames lines are noise)",
        found="; ".join(f"[{f.hint}] {f.line[:200]}" for f in mine) or f"none in {len(lines)} lines",
        hints=tuple(f.hint for f in mine),
    )


@pytest.mark.hints("nccl-using-sockets")
def test_nccl_uses_rdma(node, deployment, service_snapshots, inventory, evidence):
    """NCCL runs over RDMA on the rail devices.

    Its NET/ line names IB and the node's rail devices. GPU Direct RDMA as NCCL says it per HCA
    (`NET/IB : GPU Direct RDMA Disabled for HCA 0 'rocep1s0f1'`, `... (DMABUF) enabled for ...`; of the
    transport the channels use where two say it) is recorded, and required where [deployment]
    gpu_direct_rdma = true."""
    _, lines = _log(node, deployment, service_snapshots, evidence)
    found = nccl_transport(lines)
    if found is None:
        pytest.skip(
            f"{node.name}'s log does not say which network NCCL chose (NCCL_DEBUG=INFO in the compose prints it)"
        )
    devices = sorted(m.rdma_device for _, m in inventory.members_of(node.name))
    evidence.fact("nccl_transport", f"NET/{found.kind} {', '.join(found.devices)}")
    gdr = nccl_gdr(lines)
    if gdr is not None:
        evidence.fact("nccl_gdr", gdr.shown())
    evidence.expect(
        found.kind == "IB" and sorted(found.devices) == devices,
        what="NCCL's network (its NET/ line)",
        expected=f"NET/IB on {', '.join(devices)}",
        found=found.line[:200],
    )
    if deployment.gpu_direct_rdma is not True:
        return
    off = sorted(h for h, on in gdr.hcas.items() if not on) if gdr is not None else []
    evidence.expect(
        gdr is not None and not off,
        what="GPU Direct RDMA (NCCL's word per HCA)",
        expected="enabled on every HCA ([deployment] gpu_direct_rdma = true)",
        found=f"disabled on {', '.join(off)}: {gdr.lines[0][:200]}"
        if gdr is not None and off
        else gdr.shown()
        if gdr is not None
        else "not said in the log (NCCL_DEBUG=INFO with NCCL_DEBUG_SUBSYS including NET prints it)",
        hints=("gdr-off",),
    )


@pytest.mark.hints("nccl-cudagraph-deadlock")
def test_nccl_version_not_known_bad(node, deployment, service_snapshots, evidence, request):
    """No known-bad NCCL version with the graph mode in force.

    The NCCL versions are the known-issues catalogue's (its entry nccl-2-28-9-cuda-graph-deadlock), the version and
    the graph mode what the running ranks logged. The graph mode comes from every line vLLM names it in; a rank whose
    log does not name it takes the deployment's from another rank's log."""
    _, lines = _log(node, deployment, service_snapshots, evidence)
    version = nccl_version(lines)
    if version is None:
        pytest.skip(f"{node.name}'s log does not name the NCCL version (`vLLM is using nccl==` is logged at startup)")
    evidence.fact("nccl_version", version)
    entry = next((e for e in request.config.stash[KNOWN_ISSUES] if e.id == NCCL_GRAPH_DEADLOCK), None)
    versions = next((c for c in entry.match if c.fact == "nccl"), None) if entry is not None else None
    if entry is None or versions is None:
        pytest.skip(f"the known-issues catalogue has no entry {NCCL_GRAPH_DEADLOCK} naming NCCL versions")
    mode, whose = _graph_mode(node, lines, service_snapshots)
    evidence.expect(
        not (versions.holds(version) and uses_graphs(mode)),
        what="NCCL version with the graph mode in force",
        expected=f"not NCCL {versions.text} with CUDA graphs ({entry.title}: known issue {entry.id})",
        found=f"nccl {version}, graph mode {mode or 'not logged on any rank'}{whose}",
    )


def _order(order, inventory, node):
    first, name = order[0]
    rest = ", ".join(f"rank {inventory.node(n).rank} {_after(first.at, s.at)}" for s, n in order[1:])
    said = (
        "the first rank to stop"
        if name == node
        else f"the first to stop: rank {inventory.node(name).rank} ({name}){_at(first)}, its {first.shown()}"
    )
    return said + (f"; then {rest}" if rest else "")


def _at(stop):
    return f" at {stop.at:%H:%M:%S.%f}"[:-3] if stop.at else ""


def _after(a, b):
    return f"+{(b - a).total_seconds():.1f} s" if a is not None and b is not None else "(no time)"


@pytest.mark.hints("rank-wedged")
def test_rank_alive(node, deployment, inventory, service_snapshots, evidence):
    """The rank alive: no collective or RPC timeout.

    No collective or RPC timeout in the rank's log since it started (PyTorch's NCCL watchdog, `Watchdog caught
    collective operation timeout: WorkNCCL(...) ran for N milliseconds`, or vLLM's `RPC call to execute_model timed
    out.`). A failure names the rank whose timeout came first across the nodes (by Docker's timestamps) and the
    others after it. The same line while the rank still starts is the load skew (a distributed timeout too short for
    it), not this check's."""
    _, lines = _log(node, deployment, service_snapshots, evidence)
    since = serving_since(lines)
    mine = [s for s in stops(lines) if s.index >= since]
    order = stopped(service_snapshots)
    first = order[0][1] if order else node.name
    evidence.expect(
        not mine,
        what=f"rank {node.spec.rank}'s log since it started",
        expected="no collective or RPC timeout",
        found=f"its {mine[0].shown()} timed out{_at(mine[0])}; {_order(order, inventory, node.name)}"
        if mine
        else f"none in the log since it started ({len(lines) - since} lines)"
        if since < len(lines)
        else f"none ({len(lines)} lines; its log shows no finished start: the startup check judges that)",
        detail=f"its line: {mine[0].line[:300]}" if mine else "",
        context={"node": first},  # the hint's commands: on the rank that stopped first
    )
