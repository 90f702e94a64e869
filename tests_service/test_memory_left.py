"""What is left once vLLM runs: MemAvailable on every node, at or above the least a running node keeps."""

import pytest

from gb10check.judging.fit import GIB, gib
from gb10check.reading import probes

pytestmark = pytest.mark.service


@pytest.mark.hints("memory-low-after-start")
def test_memory_left_after_start(node, inventory, deployment, readiness, evidence):
    """Memory left on the node with vLLM running.

    MemAvailable at or above thresholds.stop_mem_available_gib (read again after a --wait-ready: the
    session's snapshot was taken before the start)."""
    if readiness is not None and not readiness.ready:  # the wait judged memory already, with its own verdict
        pytest.skip(f"follows from the --wait-ready that failed ({readiness.hint}): {readiness.why}")
    snap = node.read_now((probes.MEMINFO,)) if readiness is not None else node.snapshot()
    mem = snap.fact(probes.MEMINFO)
    least = int(inventory.thresholds.stop_mem_available_gib * GIB)
    evidence.figure("mem_available_gib", mem.available / GIB)
    evidence.expect(
        mem.available >= least,
        what="MemAvailable with vLLM running",
        expected=f">= {gib(least)} (thresholds.stop_mem_available_gib)",
        found=f"{gib(mem.available)} of {gib(mem.total)}",
    )
