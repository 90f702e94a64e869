"""RDMA write bandwidth (perftest's ib_write_bw, gb10check/bandwidth.py): each link alone, then all
links at once, the client on rank 0 and the server on the peer. The run working is a network
verdict; the figure against the inventory's min_gbps a performance one (`-m "network and not
performance"` leaves the thresholds out). Skipped while the deployment's container runs (it would
compete with NCCL for the links) unless --bandwidth; never part of smoke."""

import pytest

from fixtures.cluster import INVENTORY, SETTINGS
from gb10check import bandwidth, facts
from gb10check.errors import GB10Error

pytestmark = pytest.mark.network


def pytest_generate_tests(metafunc):
    if "link" in metafunc.fixturenames:
        links = metafunc.config.stash[INVENTORY].links if INVENTORY in metafunc.config.stash else []
        metafunc.parametrize("link", links, ids=[link.netdev for link in links])


class Runs:
    """Each measurement once per session (the functional and the performance test share it)."""

    def __init__(self, cluster, inventory, allowed_while_serving):
        self.cluster, self.inventory, self.allowed = cluster, inventory, allowed_while_serving
        self.memo = {}

    def _guard(self, nodes):
        if self.allowed:
            return
        for name in nodes:
            try:
                container = facts.container(self.cluster.snapshot(name))
            except GB10Error:
                continue  # not knowing is no reason to skip: the run itself then says what is wrong
            if container is not None and container.running:
                pytest.skip(
                    f"the deployment's container runs on {name}: ib_write_bw would compete with NCCL for the links "
                    "(--bandwidth runs it anyway)"
                )

    def measure(self, links):
        key = tuple(link.netdev for link in links)
        self._guard({n for link in links for n in link.addresses})
        if key not in self.memo:
            rank0, seconds = self.inventory.api_node.name, self.inventory.thresholds.bandwidth_seconds
            self.memo[key] = bandwidth.measure(self.cluster, list(links), rank0, seconds)
        return self.memo[key]


@pytest.fixture(scope="session")
def runs(cluster, inventory, request):
    return Runs(cluster, inventory, request.config.stash[SETTINGS].bandwidth)


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
    evidence.expect(
        total >= needed,
        what=f"RDMA write bandwidth, {len(both)} links at once from {both[0].client}",
        expected=f">= {needed:g} Gb/s (the sum of the links' min_gbps)",
        found=f"{total:.2f} Gb/s (" + ", ".join(f"{r.link.netdev} {r.gbps:.2f}" for r in both) + ")",
    )
