"""RDMA write bandwidth (perftest's ib_write_bw, gb10check/bandwidth.py): each link alone, then all
links at once, the client on rank 0 and the server on the peer. The run working is a network
verdict; the figure against the inventory's min_gbps a performance one (`-m "network and not
performance"` leaves the thresholds out). Skipped while the deployment's container runs (it would
compete with NCCL for the links) unless --bandwidth; never part of smoke."""

import contextlib
import dataclasses
import fcntl
import json

import pytest

from fixtures.cluster import shared_dir
from gb10check import bandwidth
from gb10check.parsers.perftest import BwFailure

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
    return {**{f.name: getattr(run, f.name) for f in dataclasses.fields(run) if f.name not in ("link", "failure")},
            "netdev": run.link.netdev, "failure": dataclasses.asdict(run.failure) if run.failure else None}  # fmt: skip


def _from_dict(data, links):
    link = next(link for link in links if link.netdev == data.pop("netdev"))
    failure = BwFailure(**data.pop("failure")) if data["failure"] else None
    return bandwidth.BwRun(link=link, failure=failure, **{k: v for k, v in data.items() if k != "failure"})


class Runs:
    """Each measurement once per session (the functional and the performance test share it)."""

    def __init__(self, cluster, inventory, skip_while_serving, folder):
        self.cluster, self.inventory, self.folder = cluster, inventory, folder
        self.skip_while_serving = skip_while_serving
        self.memo = {}

    def measure(self, links):
        key = tuple(link.netdev for link in links)
        self.skip_while_serving(sorted({n for link in links for n in link.addresses}), "ib_write_bw")
        if key not in self.memo:
            rank0, seconds = self.inventory.api_node.name, self.inventory.thresholds.bandwidth_seconds
            with _shared(self.folder, key) as (cached, keep):
                if cached is not None:
                    self.memo[key] = [_from_dict(dict(d), links) for d in cached]
                else:
                    self.memo[key] = bandwidth.measure(self.cluster, list(links), rank0, seconds)
                    keep(self.memo[key])
        return self.memo[key]


@pytest.fixture(scope="session")
def runs(cluster, inventory, skip_while_serving, request):
    return Runs(cluster, inventory, skip_while_serving, shared_dir(request.config))


def _last_lines(output):
    lines = output.strip().splitlines()[-4:]
    return "ib_write_bw said: " + " | ".join(line.strip() for line in lines) if lines else ""


def _expect_ran(evidence, run):
    failure = run.failure
    evidence.expect(
        failure is None,
        what=f"ib_write_bw {run.where}",
        expected="a completed run with its average",
        found=f"{run.gbps:.2f} Gb/s" if run.gbps is not None else failure.what,
        detail=_last_lines(run.client_output) if failure else "",
        hints=(failure.hint,) if failure else (),
    )


@pytest.mark.hints("bw-connect-failed")
def test_rdma_write_runs(link, runs, evidence):
    """The run works over this link (alone): server listening, client connected, a figure."""
    [run] = runs.measure([link])
    _expect_ran(evidence, run)


@pytest.mark.performance
@pytest.mark.hints("bw-low")
def test_rdma_bandwidth(link, runs, evidence):
    [run] = runs.measure([link])
    if run.gbps is None:
        pytest.skip(f"no figure: the run over {link.netdev} failed ({run.failure.what}); see test_rdma_write_runs")
    evidence.figure("bandwidth_gbps", run.gbps)
    evidence.expect(
        run.gbps >= link.min_gbps,
        what=f"RDMA write bandwidth {run.where}",
        expected=f">= {link.min_gbps:g} Gb/s (links[].min_gbps)",
        found=f"{run.gbps:.2f} Gb/s",
    )


@pytest.mark.performance
@pytest.mark.hints("bw-low")
def test_rdma_bandwidth_all_links_at_once(inventory, runs, evidence):
    """Both halves of the cable together (separate TCP ports and devices): what NCCL's merged NIC gets."""
    links = inventory.links
    if len(links) < 2:
        pytest.skip("the inventory has one link: the aggregate is the per-link figure")
    both = runs.measure(links)
    for run in both:
        _expect_ran(evidence, run)
    total, needed = sum(r.gbps for r in both), sum(link.min_gbps for link in links)
    evidence.figure("bandwidth_gbps", total)
    for run in both:
        evidence.figure(f"bandwidth_gbps_{run.link.netdev}", run.gbps)
    evidence.expect(
        total >= needed,
        what=f"RDMA write bandwidth, {len(both)} links at once from {both[0].client}",
        expected=f">= {needed:g} Gb/s (the sum of the links' min_gbps)",
        found=f"{total:.2f} Gb/s (" + ", ".join(f"{r.link.netdev} {r.gbps:.2f}" for r in both) + ")",
    )
