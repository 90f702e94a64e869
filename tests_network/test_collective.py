"""NCCL in the serving image, each rank as it will run, before vLLM starts (gb10check/reading/collective.py).

On every node at once, a throwaway container of the deployment's image with the rank's launch plan (its
container settings and NCCL/Gloo/vLLM variables) runs torch.distributed with the NCCL backend at vLLM's
master address and port: whether every rank joins, whether an all_reduce and an all_gather come out
exact, the network NCCL uses and its version on every rank, and the bus bandwidth against the topology's
floor. Bounded as a whole (thresholds.collective_timeout); on any end every container it started is
removed on every node (`docker rm -f`), and the run says which it removed. It runs after the other
network checks and only when nothing is serving (vLLM holds the GPU's memory); a fault an earlier check of
this run already failed on explains it (the check skips, naming that failure)."""

from __future__ import annotations

import os
import re
import shlex
import time
from dataclasses import dataclass

import pytest

from fixtures.cluster import progress_writer
from fixtures.owners import failed_so_far
from gb10check.errors import GB10Error
from gb10check.inventory import Inventory
from gb10check.judging.fit import GIB
from gb10check.reading import facts, probes
from gb10check.reading.collective import RankOutcome, container_name, docker_run_argv, parse_rank_output, remove_command
from gb10check.reading.node import follows_from
from gb10check.reading.parallel import map_parallel

pytestmark = pytest.mark.network
MIB = 1024**2
SHARE = 8  # a buffer is at most this fraction of the lowest MemAvailable (send, receive and NCCL's own)
REMOVE_TIMEOUT = 30.0  # seconds for each node's `docker rm -f`
DEFAULT_PORT = 29500  # torch.distributed's, where the plan names none


@dataclass
class CollectiveRun:
    """The session's one run: each rank's outcome, what each node was sent, and what was removed after."""

    outcomes: dict[str, RankOutcome]  # node -> its rank's outcome
    commands: dict[str, str]
    removed: list[str]  # "NAME on NODE" of the containers still there at the end (removed then)
    seconds: float
    timed_out: list[str]  # the nodes whose run did not end within the bound
    master: str
    port: int


def _sizes(cluster, inventory) -> list[int]:
    """Up to four sizes, powers of two from 8 MiB, each within collective_max_buffer_gib and 1/SHARE of the
    lowest MemAvailable."""
    lowest = min(cluster.snapshot(n.name).fact(probes.MEMINFO).available for n in inventory.nodes)
    limit = min(inventory.thresholds.collective_max_buffer_gib * GIB, lowest / SHARE)
    sizes, size = [], 8 * MIB
    while size <= limit:
        sizes.append(size)
        size *= 8
    return sizes or [MIB]


@pytest.fixture(scope="session")
def collective(cluster, inventory, deployment, request):
    """The one collective of the session (see the module)."""
    t = inventory.thresholds
    if not t.collective:
        pytest.skip("thresholds.collective = false: NCCL in the serving image is not run")
    nodes = [n.name for n in sorted(inventory.nodes, key=lambda n: n.rank)]
    if len(nodes) < 2:
        pytest.skip("one node: no collective between nodes")
    gone = cluster.unreachable(nodes)
    if gone:
        pytest.skip(follows_from(gone))
    for name in nodes:
        try:
            running = facts.container(cluster.snapshot(name))
        except GB10Error:
            running = None
        if running is not None and running.running:
            pytest.skip(
                f"vLLM's container {running.name} runs on {name}: its GPU memory is vLLM's. Run `gb10check "
                "network` before starting vLLM (or after `docker compose down` on every node)"
            )
    earlier = [t for t in failed_so_far(request.config, nodes) if "test_collective" not in t]
    if earlier:
        pytest.skip(f"follows from {earlier[0]}" + (f" and {len(earlier) - 1} more" if len(earlier) > 1 else "")
                    + " (failed in this run): the collective needs what they found broken; fix them first")  # fmt: skip
    missing = [n for n in nodes if facts.image(cluster.snapshot(n)) is None]
    if missing:
        pytest.skip(f"the image {deployment.image} is not on {', '.join(missing)} (preflight's image check says why)")
    plans = {}
    for name in nodes:
        try:
            plans[name] = cluster.plan(name)
        except GB10Error as exc:
            pytest.skip(
                f"the launch plan of {name} cannot be read ({str(exc)[:200]}): preflight's launch checks say why"
            )
    master = inventory.master_address
    if master is None:
        pytest.skip("the inventory gives no master address (rank 0's control-plane address)")
    rank0 = plans[nodes[0]]
    said = rank0.started.vllm.value("--master-port") if rank0.started.vllm is not None else None
    port = int(said) if isinstance(said, str) and said.isdigit() else DEFAULT_PORT
    session = f"{os.getpid()}-{int(time.time()) % 100000}"
    sizes = _sizes(cluster, inventory)
    names = {n: container_name(session, plans[n].rank) for n in nodes}
    commands = {
        n: shlex.join(
            docker_run_argv(
                plans[n], image=deployment.image, name=names[n], world=len(nodes), master=master, port=port,
                join_seconds=t.collective_join_timeout, sizes=sizes,
            )
        )
        for n in nodes
    }  # fmt: skip
    start = time.monotonic()

    def remove(n):
        res = cluster[n].run(remove_command(names[n]), REMOVE_TIMEOUT)
        return [f"{line.strip()} on {n}" for line in res.stdout.splitlines() if line.strip() == names[n]]

    def remove_all() -> list[str]:
        return [gone for here in map_parallel(remove, nodes, name="gb10check-collective-rm") for gone in here]

    try:
        ran = map_parallel(
            lambda n: cluster[n].run(commands[n], t.collective_timeout), nodes, name="gb10check-collective"
        )
    except BaseException:  # the bound, a failed rank, SIGINT or SIGTERM: nothing of it stays, and the run says so
        gone = ", ".join(remove_all()) or "none left"
        progress_writer(request.config, every=0)(f"the collective in the serving image was cut short; removed: {gone}")
        raise
    removed = remove_all()
    results = dict(zip(nodes, ran, strict=True))
    outcomes = {}
    timed_out = []
    for name in nodes:
        res = results[name]
        if res.timed_out:
            timed_out.append(name)
        outcomes[name] = parse_rank_output(plans[name].rank, res.stdout + res.stderr, None if res.timed_out else res.rc)
    return CollectiveRun(outcomes, commands, removed, time.monotonic() - start, timed_out, master, port)


def _unreached(inventory: Inventory, said: str) -> str | None:
    """The node an address in what a rank said belongs to (`Connect to 10.0.0.2<41234> failed`)."""
    for address in re.findall(r"\b\d{1,3}(?:\.\d{1,3}){3}\b", said):
        for n in inventory.nodes:
            if address in inventory.addresses_of(n.name):
                return n.name
    return None


def _where(run: CollectiveRun, node: str) -> str:
    return f"rank {run.outcomes[node].rank} on {node}"


@pytest.mark.hints("collective-join-failed")
def test_collective_ranks_join(collective, inventory, evidence):
    """Every rank joins NCCL's collective in the serving image.

    NCCL in the serving image, each rank as it will run: on every node at once a throwaway `docker run --rm --pull
    never` of the deployment's image with the rank's launch plan (network, IPC, shm, memlock, capabilities, devices,
    every NCCL_/GLOO_/VLLM_ variable; NCCL_DEBUG=INFO for this run) runs torch.distributed's NCCL group at vLLM's master
    address and port. Every rank joins within `collective_join_timeout`: the firewall, the master address and the socket
    interface as NCCL and Gloo see them. A rank that never joins is named with what its output said: a hung rank first,
    else the rank whose connection failed, and where what it said names an address, the node that address belongs to
    (the one to fix).

    The run is bounded by `collective_timeout`; every container it started is removed on every node on any end (an
    interrupted run says which). It runs after the other network checks (a failure of theirs explains it: skipped,
    naming it), and only while vLLM does not run (its GPU memory is vLLM's); `collective = false` turns it off."""
    run = collective
    evidence.fact("collective_seconds", f"{run.seconds:.1f}")
    if run.removed:
        evidence.fact("collective_removed", ", ".join(run.removed))
    stuck = [n for n, o in run.outcomes.items() if not o.joined]
    # the root cause first: a rank that hung (the whole bound, no end of its own), then one whose connection
    # failed (NCCL's WARN, refused, timed out), else the first; a connection names the node it could not reach
    hung = [n for n in stuck if n in run.timed_out]
    said = [n for n in stuck if run.outcomes[n].said or run.outcomes[n].error]
    first = (hung or said or stuck or [inventory.api_node.name])[0]
    bound = inventory.thresholds.collective_timeout
    why = run.outcomes[first].said or run.outcomes[first].error
    if first in hung:
        why = f"no end within {bound:g} s (hung)"
    said_by = f"{_where(run, first)} said" if not hung else _where(run, first)
    unreached = _unreached(inventory, why or "")
    if unreached and unreached != first and not hung:
        why += f" (the address of {unreached}: look at {unreached} first, its firewall and its socket interface)"
        first = unreached
    why = why or "no join line"
    found = f"{' and '.join(_where(run, n) for n in stuck)} did not join; {said_by}: {why}" if stuck else "all joined"
    evidence.expect(
        not stuck,
        what=f"NCCL's group of {len(run.outcomes)} ranks at {run.master}:{run.port} (the deployment's image)",
        expected=f"every rank joined within {inventory.thresholds.collective_join_timeout:g} s",
        found=found,
        detail="; ".join(f"{_where(run, n)} printed: {run.outcomes[n].tail()}" for n in stuck)
        + f"; removed after the run: {', '.join(run.removed) or 'none left'}",
        context={"node": first, "command": run.commands[first], "peer_ip": run.master},
    )  # fmt: skip


@pytest.mark.hints("collective-wrong-result")
def test_collective_values_exact(collective, evidence):
    """The all_reduce and all_gather come out exact on every rank.

    In the same run, an all_reduce (of rank + 1) and an all_gather (of the ranks) compared exactly on every rank;
    skipped when not every rank came to the values."""
    run = collective
    if any(not o.done for o in run.outcomes.values()):
        pytest.skip("follows from test_collective_ranks_join: not every rank came to the values")
    wrong = [n for n, o in run.outcomes.items() if not (o.allreduce_ok and o.allgather_ok)]
    evidence.expect(
        not wrong,
        what="an all_reduce of rank + 1 and an all_gather of the ranks, compared exactly",
        expected="exact on every rank",
        found="; ".join(
            f"{_where(run, n)}: all_reduce {'exact' if run.outcomes[n].allreduce_ok else 'WRONG'}, all_gather "
            f"{'exact' if run.outcomes[n].allgather_ok else 'WRONG'}"
            for n in wrong
        ) or "exact on every rank",
        context={"node": (wrong or list(run.outcomes))[0]},
    )  # fmt: skip


@pytest.mark.hints("collective-transport")
def test_collective_transport(collective, inventory, evidence):
    """NCCL uses RoCE and one NCCL version on every rank.

    From NCCL's own INFO lines in each rank's output: the network its channels use (IB where RoCE is
    cabled: Socket costs most of the bandwidth and every collective's latency), GPU Direct RDMA where
    `[deployment] gpu_direct_rdma = true` says the deployment needs it, and the same NCCL on every rank."""
    run = collective
    started = {n: o for n, o in run.outcomes.items() if o.channels is not None or o.version is not None}
    if not started:
        pytest.skip("follows from test_collective_ranks_join: no rank printed NCCL's lines")
    problems = []
    sockets = [n for n, o in started.items() if o.channels is not None and o.channels.sockets]
    for n in sockets:
        problems.append(f"{_where(run, n)} uses sockets: {run.outcomes[n].channels.line}")
    if inventory.deployment is not None and inventory.deployment.gpu_direct_rdma:
        for n, o in started.items():
            if n not in sockets and o.gdr is not None and not o.gdr.on:
                problems.append(f"{_where(run, n)}: GPU Direct RDMA {o.gdr.shown()}")
    versions = {n: o.version for n, o in run.outcomes.items() if o.version}
    for n, o in started.items():
        evidence.fact(f"nccl_version_{n}", o.version or "not said")
        if o.channels is not None:
            evidence.fact(f"nccl_network_{n}", o.channels.network or ", ".join(o.channels.via))
    if len(set(versions.values())) > 1:
        rank0 = versions.get(inventory.api_node.name)
        odd = [n for n, v in versions.items() if v != rank0] or list(versions)[1:]
        problems += [f"{_where(run, n)} runs NCCL {versions[n]}, rank 0 {rank0}" for n in odd]
    first = next((n for n in run.outcomes if any(p.startswith(_where(run, n)) for p in problems)), None)
    evidence.expect(
        not problems,
        what="NCCL's network, GPU Direct RDMA and version per rank (its INFO lines)",
        expected="IB (RoCE) on every rank, one NCCL version"
        + (", GPU Direct RDMA on" if inventory.deployment and inventory.deployment.gpu_direct_rdma else ""),
        found="; ".join(problems) or ", ".join(f"{n}: NCCL {v}" for n, v in versions.items()),
        context={"node": first or inventory.api_node.name},
    )


@pytest.mark.performance
@pytest.mark.hints("collective-busbw-low")
def test_collective_bandwidth(collective, inventory, evidence):
    """NCCL's all_gather bus bandwidth in the image at the topology's floor.

    The same run's all_gather bus bandwidth (rank 0's figure at its largest buffer; the buffers up to
    `collective_max_buffer_gib` and MemAvailable / 8), recorded beside the all_reduce's, against the topology's
    floor."""
    run = collective
    if any(not o.done for o in run.outcomes.values()):
        pytest.skip("follows from test_collective_ranks_join: no figures without every rank")
    rank0 = run.outcomes[inventory.api_node.name]
    gather = [f for f in rank0.figures if f.op == "all_gather"]
    reduce = [f for f in rank0.figures if f.op == "all_reduce"]
    if not gather:
        pytest.skip("the run printed no figures")
    largest = max(gather, key=lambda f: f.bytes)
    evidence.figure("collective_all_gather_busbw_gbs", largest.busbw_gbs)
    if reduce:
        evidence.figure("collective_all_reduce_busbw_gbs", max(reduce, key=lambda f: f.bytes).busbw_gbs)
    floor, source = inventory.nccl_busbw_floor()
    evidence.expect(
        largest.busbw_gbs >= floor,
        what=f"all_gather bus bandwidth across {len(run.outcomes)} ranks ({largest.bytes // MIB} MiB, rank 0's figure)",
        expected=f">= {floor:g} GB/s ({source})",
        found=f"{largest.busbw_gbs:g} GB/s; by size: "
        + ", ".join(f"{f.bytes // MIB} MiB {f.busbw_gbs:g}" for f in sorted(gather, key=lambda f: f.bytes)),
        context={"node": inventory.api_node.name},
    )
