"""Memory before start: the model needs most of unified memory, and page cache competes for it."""

import pytest

from gb10check.errors import ParseError
from gb10check.judging.fit import GIB, gib
from gb10check.reading import probes
from gb10check.reading.facts import container

pytestmark = pytest.mark.preflight


@pytest.mark.hints("memory-in-use")
def test_memory_free_before_start(node, inventory, evidence):
    """Enough memory free before vLLM starts.

    MemAvailable and MemFree of /proc/meminfo both at or above `min_mem_available_gib` before vLLM starts. MemFree
    counts too: the driver allocates from free pages, and page cache is not given back fast enough (drop it before
    starting vLLM). Skipped while the vLLM container runs: its memory is in use by design."""
    snap = node.snapshot()
    if inventory.deployment is not None:
        c = container(snap)
        if c is not None and c.running:
            pytest.skip(f"the vLLM container {c.name} is running: its memory is in use by design")
    mem = snap.fact(probes.MEMINFO)
    need = int(inventory.thresholds.min_mem_available_gib * GIB)
    cache = mem.page_cache
    evidence.expect(
        mem.available >= need,
        what="MemAvailable",
        expected=f">= {gib(need)}",
        found=f"{gib(mem.available)} of {gib(mem.total)}",
        detail=f"page cache {gib(cache)}; find what holds the rest (ps aux --sort=-rss, docker ps)",
    )
    # On GB10 the driver allocates from free pages; page cache is not given back fast enough.
    evidence.expect(
        mem.fields["MemFree"] >= need,
        what="MemFree",
        expected=f">= {gib(need)}",
        found=f"{gib(mem.fields['MemFree'])}, with {gib(cache)} in page cache",
        detail="drop the page cache before starting vLLM",
        hints=("page-cache-full",),
    )


@pytest.mark.hints("swap-in-use")
def test_swap_not_in_use(node, inventory, evidence):
    """Little or nothing in swap before start.

    SwapTotal - SwapFree of /proc/meminfo within thresholds.max_swap_used_gib: swap in use is memory
    pressure already, and loading a model that takes most of unified memory adds to it (the node swaps what
    it touches and stalls)."""
    mem = node.snapshot().fact(probes.MEMINFO)
    used = mem.swap_used
    if used is None:
        raise ParseError("/proc/meminfo", "no SwapTotal or SwapFree line (every Linux kernel prints both)", "")
    limit = int(inventory.thresholds.max_swap_used_gib * GIB)
    evidence.figure("swap_used_gib", used / GIB)
    evidence.expect(
        used <= limit,
        what="swap in use (SwapTotal - SwapFree)",
        expected=f"<= {gib(limit)} (thresholds.max_swap_used_gib)",
        found=f"{gib(used)} of {gib(mem.fields['SwapTotal'])} swap, MemAvailable {gib(mem.available)}",
    )
