"""RDMA write bandwidth (perftest's ib_write_bw, gb10check/reading/bandwidth.py) between every two nodes that
share a rail: each rail alone, then each pair of nodes on all its rails at once, the client on the
lower rank. The pairs run in rounds in which no node is in two pairs (the pairs of a round at once).
The run working is a network verdict; the figure against the rail's min_gbps a performance one
(`-m "network and not performance"` leaves the thresholds out). Skipped while the deployment's
container runs (it would compete with NCCL) unless --bandwidth; never part of smoke."""

import contextlib
import copy
import dataclasses
import fcntl
import json

import pytest

from fixtures.cluster import OnPair, progress_writer, shared_dir
from gb10check.errors import GB10Error
from gb10check.reading import bandwidth, probes
from gb10check.reading.parsers.perftest import BwFailure

pytestmark = pytest.mark.network


@contextlib.contextmanager
def _shared(folder, key):
    """Under pytest-xdist, one measurement at a time across the workers (two at once would share the
    link and the port, and halve each other's figure), and each taken once: the first worker to
    measure leaves it in the run's shared folder for the others. Serial runs need neither."""
    if folder is None:
        yield None, lambda runs: None
        return
    with open(folder / "bandwidth.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released with the file, also if this worker dies
        cache = folder / ("bandwidth-" + "-".join(key) + ".json")
        cached = json.loads(cache.read_text()) if cache.exists() else None
        yield cached, lambda runs: cache.write_text(json.dumps([_as_dict(r) for r in runs]))


def _as_dict(run):
    return {
        **{f.name: getattr(run, f.name) for f in dataclasses.fields(run) if f.name not in ("job", "failure")},
        "job": [run.job.rail.name, run.job.client, run.job.server],
        "failure": dataclasses.asdict(run.failure) if run.failure else None,
    }


def _from_dict(data, rails):
    name, client, server = data.pop("job")
    failure = BwFailure(**data.pop("failure")) if data["failure"] else None
    job = bandwidth.Job(rails[name], client, server)
    return bandwidth.BwRun(job=job, failure=failure, **{k: v for k, v in data.items() if k != "failure"})


def _wanted(session, test_names):
    """The pairs the selected tests of `test_names` ask about (a -k selection measures those only)."""
    out = []
    for item in session.items:
        if item.originalname in test_names and hasattr(item, "callspec"):
            out += [v for v in item.callspec.params.values() if isinstance(v, OnPair)]
    return list(dict.fromkeys(out))


class Runs:
    """The matrix, measured once per session when a test first asks (the functional and the
    performance tests share it): the selected pairs alone on each rail, then each selected pair of
    nodes on all its rails at once, in rounds. A pair with a node that could not be asked at all fails
    with that node's error; the others are measured."""

    def __init__(self, cluster, inventory, skip_while_serving, folder, session, progress):
        self.cluster, self.inventory, self.folder, self.session = cluster, inventory, folder, session
        self.skip_while_serving, self.progress = skip_while_serving, progress
        self.memo = {}

    def _phase(self, key, rounds):
        if key not in self.memo:
            nodes = sorted({n for r in rounds for job in r for n in job.pair})
            self.skip_while_serving(nodes, "ib_write_bw")
            seconds = self.inventory.thresholds.bandwidth_seconds
            rails = {r.name: r for r in self.inventory.rails}
            with _shared(self.folder, (key,)) as (cached, keep):
                if cached is not None:
                    self.memo[key] = [_from_dict(dict(d), rails) for d in cached]
                else:
                    self.memo[key] = bandwidth.run_rounds(self.cluster, rounds, seconds, self.progress)
                    keep(self.memo[key])
        return self.memo[key]

    def _reachable(self, pair):
        """Raise the node's own error if either node of `pair` could not be asked at all (the pair cannot
        be measured; the other pairs still are)."""
        for name in pair.nodes:
            error = self.cluster.snapshot(name).error
            if error is not None:
                raise copy.copy(error)

    def _measurable(self, pairs):
        return [p for p in pairs if all(self.cluster.snapshot(n).error is None for n in p.nodes)]

    def measured_alone(self, rail):
        """Every run measured so far over `rail` alone (the pairs the selection asked about)."""
        return [r for r in self.memo.get("alone", []) if r.job.rail.name == rail.name and r.gbps is not None]

    def alone(self, pair):
        """The run of `pair` (an OnPair with its rail) alone on its rail."""
        self._reachable(pair)
        wanted = [(p.node, p.peer, p.rail.name) for p in self._measurable(_wanted(self.session, ALONE))] or [
            (pair.node, pair.peer, pair.rail.name)
        ]
        runs = self._phase("alone", bandwidth.alone_rounds(self.inventory, wanted))
        return next(r for r in runs if r.job.pair == (pair.node, pair.peer) and r.job.rail.name == pair.rail.name)

    def together(self, pair):
        """The runs of `pair` (an OnPair of two nodes) on all the rails they share at once."""
        self._reachable(pair)
        wanted = [(p.node, p.peer) for p in self._measurable(_wanted(self.session, TOGETHER))] or [
            (pair.node, pair.peer)
        ]
        runs = self._phase("together", bandwidth.together_rounds(self.inventory, wanted))
        return [r for r in runs if r.job.pair == (pair.node, pair.peer)]


ALONE = ("test_rdma_write_runs", "test_rdma_bandwidth")
TOGETHER = ("test_rdma_bandwidth_all_rails_at_once",)


@pytest.fixture(scope="session")
def runs(cluster, inventory, skip_while_serving, request):
    return Runs(
        cluster,
        inventory,
        skip_while_serving,
        shared_dir(request.config),
        request.session,
        progress_writer(request.config),
    )


def _last_lines(output):
    lines = output.strip().splitlines()[-4:]
    return "ib_write_bw said: " + " | ".join(line.strip() for line in lines) if lines else ""


def _gid_elsewhere(cluster, rail, nodes):
    """The ends of `rail` among `nodes` whose address's RoCE v2 GID is not at the rail's gid_index (the
    index ib_write_bw -x uses): node -> where it is (None: nowhere). A node that cannot say is left out."""
    out = {}
    for node in nodes:
        end = rail.member(node)
        try:
            port = cluster.snapshot(node).fact(probes.RDMA_PORTS).get(end.rdma_device)
        except GB10Error:
            continue
        found = port.roce_v2_ipv4(end.ip, end.netdev) if port is not None else []
        if port is not None and not any(g.index == rail.gid_index for g in found):
            out[node] = found[0].index if found else None
    return out


def _expect_ran(evidence, run, cluster=None):
    failure = run.failure
    detail, context = (_last_lines(run.client_output) if failure else ""), None
    if failure is not None and failure.hint == "gid-index-mismatch" and cluster is not None:
        rail = run.job.rail
        elsewhere = _gid_elsewhere(cluster, rail, run.job.pair)
        if elsewhere:  # the end whose GID moved: the hint's commands are for it, not the pair's first node
            node = next(iter(elsewhere))
            at = elsewhere[node]
            detail = (
                f"{node}'s {rail.member(node).rdma_device} has the RoCE v2 GID of {rail.member(node).ip} "
                + (f"at index {at}, not {rail.gid_index}" if at is not None else "nowhere")
                + f"; {detail}"
            )
            context = {"node": node, "netdev": [rail.member(node).netdev]}
    evidence.expect(
        failure is None,
        what=f"ib_write_bw ({run.setup})",
        expected="a completed run with its average",
        found=f"{run.gbps:.2f} Gb/s" if run.gbps is not None else failure.what,
        detail=detail,
        hints=(failure.hint,) if failure else (),
        context=context,
    )


@pytest.mark.hints("bw-connect-failed")
def test_rdma_write_runs(rail_pair, runs, cluster, fault_owners, evidence):
    """An RDMA write test runs between the pair over the rail.

    `ib_write_bw` (perftest) runs between these two nodes over this rail, alone on it: server listening, client
    connected, a figure. Every two nodes that share a rail are run over every rail they share, the client on the lower
    rank, the pairs in rounds in which no node is in two pairs (a round's pairs at once); each run lasts
    `bandwidth_seconds`, is bounded, and its server is removed on every path. Each perftest error is named (a connection
    that failed, a port in use, a GID index that does not match, a missing RDMA device, a link down, ib_write_bw not
    installed), a completion error by its status: transport retry counter exceeded (12), RNR retry counter exceeded
    (13), remote access error (10), remote operation error (11), work request flushed (5, only when nothing else
    failed), any other status a completion error of its own.

    Over a dark port or a wire that ends elsewhere it follows from the check that owns it."""
    fault_owners.explain(evidence, rail_pair.node, rail_pair.peer, [rail_pair.rail])
    _expect_ran(evidence, runs.alone(rail_pair), cluster)


def _negotiated(cluster, rail, nodes):
    """The rate each node's end of `rail` negotiated (Gb/s), None where the node or its port cannot say."""
    rates = []
    for node in nodes:
        end = rail.member(node)
        try:
            port = cluster.snapshot(node).fact(probes.RDMA_PORTS).get(end.rdma_device) if end else None
        except GB10Error:  # the node's own checks say why
            port = None
        rates.append(port.rate_gbps if port is not None and port.active else None)
    return rates


def _slow_card(cluster, rail, nodes, gbps, others=()):
    """(hints, detail, context) of a figure below the minimum: `cx7-degraded` when far below what both ends
    negotiated; with the rail's other runs (`others`, a switch rail), the node whose card it is, named."""
    rates = _negotiated(cluster, rail, nodes)
    if not bandwidth.degraded(gbps, rates, rail.rate_gbps):
        return (), "", None
    lowest = min(r for r in rates if r is not None)
    detail = (
        f"{gbps:.2f} Gb/s over {rail.name} is {gbps / lowest:.0%} of the {lowest:g} Gb/s both ends negotiated "
        f"(below {bandwidth.DEGRADED_SHARE:.1%}): not a slow link but a ConnectX-7 that initialised degraded "
        "(full rate shown, a few Gb/s moved)"
    )
    bad: list[tuple[str, str]] = []
    good: list[tuple[str, str]] = []
    for run in others:
        slow = bandwidth.degraded(run.gbps, _negotiated(cluster, rail, run.job.pair), rail.rate_gbps)
        (bad if slow else good).append(run.job.pair)
    node = bandwidth.degraded_node(bad, good) if len(bad) + len(good) > 1 else None
    if node is None:
        return ("cx7-degraded",), detail, None
    end = rail.member(node)
    detail += (
        f"; {node} is in every such pair on {rail.name} and in none of its fast ones: "
        f"its {end.rdma_device} is the degraded card"
    )
    return ("cx7-degraded",), detail, {"node": node, "netdev": [end.netdev]}


@pytest.mark.performance
@pytest.mark.hints("bw-low")
def test_rdma_bandwidth(rail_pair, runs, cluster, fault_owners, evidence):
    """RDMA write bandwidth over the rail, alone on it.

    The pair's average RDMA write bandwidth over this rail, alone on it (recorded as figure `bandwidth_gbps`),
    against the rail's `min_gbps` (default 90 Gb/s: NVIDIA measured 92.57 and 97.28 on the two halves of one cable).
    A figure under an eighth of the rate both ends negotiated (25 Gb/s at 200G) is a ConnectX-7 that initialised
    degraded (200G shown, about 13 Gb/s moved: NVIDIA/dgx-spark-playbooks PR #108), not a slow link; on a switch rail
    the node in every such pair and in none of its fast ones is named as the card's."""
    fault_owners.explain(evidence, rail_pair.node, rail_pair.peer, [rail_pair.rail])  # a node that is off: no run
    run = runs.alone(rail_pair)
    if run.gbps is None:
        pytest.skip(f"no figure: the run {run.where} failed ({run.failure.what}); see test_rdma_write_runs")
    rail = rail_pair.rail
    evidence.figure("bandwidth_gbps", run.gbps)
    hints, detail, context = _slow_card(cluster, rail, rail_pair.nodes, run.gbps, runs.measured_alone(rail))
    evidence.expect(
        run.gbps >= rail.min_gbps,
        what=f"RDMA write bandwidth, the rail alone ({run.setup})",
        expected=f">= {rail.min_gbps:g} Gb/s (rails[].min_gbps of {rail.name})",
        found=f"{run.gbps:.2f} Gb/s",
        detail=detail,
        hints=hints,
        context=context,
    )


@pytest.mark.performance
@pytest.mark.hints("bw-low")
def test_rdma_bandwidth_all_rails_at_once(node_pair, inventory, runs, cluster, fault_owners, evidence):
    """RDMA write bandwidth over every rail at once.

    Every rail the two nodes share, at once (separate TCP ports and devices): what NCCL's merged NIC gets between
    them, the sum against the sum of the rails' `min_gbps`, each rail's figure recorded. A rail's figure under an
    eighth of the rate both ends negotiated is named as a degraded ConnectX-7, as for a rail alone. Two nodes that
    share one rail skip: the aggregate is that rail's figure."""
    rails = inventory.rails_between(node_pair.node, node_pair.peer)
    if len(rails) < 2:
        pytest.skip(f"{node_pair.place} share one rail: the aggregate is that rail's figure")
    fault_owners.explain(evidence, node_pair.node, node_pair.peer, rails)  # a run over a faulty rail follows from it
    both = runs.together(node_pair)
    for run in both:
        _expect_ran(evidence, run, cluster)
    evidence.explained_by("")  # the figure of rails that all ran is this check's own
    total, needed = sum(r.gbps for r in both), sum(rail.min_gbps for rail in rails)
    evidence.figure("bandwidth_gbps", total)
    for run in both:
        evidence.figure(f"bandwidth_gbps_{run.job.rail.name}", run.gbps)
    cards = [_slow_card(cluster, r.job.rail, node_pair.nodes, r.gbps, runs.measured_alone(r.job.rail)) for r in both]
    degraded = [detail for hints, detail, _ in cards if hints]
    named = next((context for hints, _, context in cards if context), None)
    evidence.expect(
        total >= needed,
        what=f"RDMA write bandwidth, {len(both)} rails at once",
        expected=f">= {needed:g} Gb/s (the sum of the rails' min_gbps)",
        found=f"{total:.2f} Gb/s (" + ", ".join(f"{r.job.rail.name} {r.gbps:.2f}" for r in both) + ")",
        detail="; ".join(degraded),
        hints=("cx7-degraded",) if degraded else (),
        context=named,
    )
