"""nccl-tests' all_gather_perf of a simulated cluster, run from rank 0: one rank per node."""

from __future__ import annotations

__all__ = ["NCCL_TABLE_HEAD", "TYPE_CHECKING", "all_gather_perf"]

TYPE_CHECKING = False  # mypy reads it as True; importing typing would cost every stub call ~5 ms

if TYPE_CHECKING:  # stdlib-only and started often: no typing import at run time
    from typing import Any

NCCL_TABLE_HEAD = (
    "#" + " " * 62 + "out-of-place" + " " * 23 + "in-place\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
    "            (us)  (GB/s)  (GB/s)\n"
)


def all_gather_perf(state: dict[str, Any], args: list[str]) -> tuple[str, str, int]:
    """nccl-tests' all_gather_perf across the cluster's nodes, one rank each (its layout; the figure the
    scenario gives)."""
    size = int(args[args.index("-b") + 1]) if "-b" in args else 1 << 30
    nccl = state.get("nccl_tests") or {}
    nodes = state.get("nodes") or [state["node"]]
    nodes = nodes[: int(nccl.get("ranks", len(nodes)))]  # a launcher that names only some of the nodes
    busbw = float(nccl.get("busbw_gbs", 22.5))
    n = len(nodes)
    algbw = busbw * n / (n - 1) if n > 1 else busbw  # all_gather over n ranks: busbw = algbw * (n - 1) / n
    usec = size / (algbw * 1e9) * 1e6
    wrong = int(nccl.get("wrong", 0))
    ranks = "".join(
        f"#  Rank {rank:2d} Group  0 Pid {41337 + 7919 * rank:6d} on {name} device  0 [0x01] NVIDIA GB10\n"
        for rank, name in enumerate(nodes)
    )
    head = (
        f"# nThread 1 nGpus 1 minBytes {size} maxBytes {size} step: 2(factor) warmup iters: 5 iters: 20 "
        f"agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n{ranks}#\n"
    )
    row = (
        f"  {size:>10}  {size // 4:>12}     float    none      -1  {usec:7.1f}  {algbw:6.2f}  {busbw:6.2f}  {wrong:>5}"
        f"  {usec:7.1f}  {algbw:6.2f}  {busbw:6.2f}  {wrong:>5}\n"
    )
    tail = (
        f"# Out of bounds values : {wrong} {'OK' if not wrong else 'FAILED'}\n# Avg bus bandwidth    : {busbw:g} \n#\n"
    )
    return head + NCCL_TABLE_HEAD + row + tail, "", 0
