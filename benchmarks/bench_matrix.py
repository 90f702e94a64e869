"""The bandwidth matrix's wall time against its floor, on the simulated cluster.

    sudo .venv/bin/python benchmarks/bench_matrix.py [--runs 3] [--sim healthy-switch8]

The matrix is the network stage's ib_write_bw runs (gb10check/reading/bandwidth.py): every pair of every rail
alone (alone_rounds), then every pair of nodes on all its rails at once (together_rounds), each round's
jobs at once. For an 8-node switch on 2 rails: 2 x 7 + 7 = 21 rounds. A round cannot take less than
the duration plus its orchestration: the server's start, which must answer before the client connects,
and the client's command (two SSH round trips over open connections, nodes in parallel; the stop can
overlap the next round). Floor = rounds x (duration + 2 x round trip), the round trip measured here
(a trivial command on every node at once). Printed: the matrix's wall time (median), the floor, their
ratio, and where a round's time goes (server start, clients, stop).
Aim (issue 18): at most 1.3x the floor.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

import sim_bench  # noqa: E402  (benchmarks/, beside this script)

from gb10check.inventory import load_inventory  # noqa: E402
from gb10check.reading import bandwidth  # noqa: E402
from gb10check.reading.node import ClusterNodes  # noqa: E402
from gb10check.reading.parallel import map_parallel  # noqa: E402
from sim import netns  # noqa: E402
from sim.cluster import SimCluster  # noqa: E402
from sim.scenario import load_scenario  # noqa: E402

AIM = 1.3
PHASES: dict[str, list[float]] = defaultdict(list)


def timed_map(fn: Callable[[Any], Any], items: Any, name: str = "", **kw: Any) -> list[Any]:
    """bandwidth's map_parallel, each call timed under its thread name (server, client, stop)."""
    start = time.monotonic()
    try:
        return map_parallel(fn, items, name=name, **kw)
    finally:
        PHASES[name.removeprefix("gb10check-bw-")].append(time.monotonic() - start)


def scenario(name: str, runs: int) -> None:
    sim = SimCluster(load_scenario(name))
    path = sim.up()
    previous = netns.enter(sim.api_namespace)
    try:
        inventory = load_inventory(path)
        seconds = inventory.thresholds.bandwidth_seconds
        wanted = [(a.node, b.node, rail.name) for rail in inventory.rails for a, b in rail.pairs()]
        rounds = bandwidth.alone_rounds(inventory, wanted) + bandwidth.together_rounds(
            inventory, inventory.node_pairs()
        )
        cluster = ClusterNodes(inventory)
        nodes = list(cluster.nodes.values())
        map_parallel(lambda n: n.transport.run("true", 10), nodes)  # connections open, as in a session
        trips = []
        for _ in range(5):
            start = time.monotonic()
            map_parallel(lambda n: n.transport.run("true", 10), nodes)
            trips.append(time.monotonic() - start)
        trip = statistics.median(trips)
        walls = []
        bandwidth.map_parallel = timed_map  # type: ignore[assignment]
        load_before = ", ".join(f"{v:.1f}" for v in os.getloadavg())
        for _ in range(runs):
            start = time.monotonic()
            results = bandwidth.run_rounds(cluster, rounds, seconds)
            walls.append(time.monotonic() - start)
            bad = [r for r in results if r.failure is not None]
            assert not bad, f"{len(bad)} runs failed, first: {bad[0].failure}"
        load_after = ", ".join(f"{v:.1f}" for v in os.getloadavg())
        bandwidth.map_parallel = map_parallel  # type: ignore[assignment]
        cluster.close()
    finally:
        netns.leave(previous)
        sim.down()
    wall = statistics.median(walls)
    floor = len(rounds) * (seconds + 2 * trip)
    jobs = sum(len(r) for r in rounds)
    print(f"{name}: {len(inventory.nodes)} nodes, {len(inventory.rails)} rails; {len(rounds)} rounds, {jobs} runs of "
          f"{seconds:g} s; load average {load_before} before, {load_after} after")  # fmt: skip
    print(f"  round trip (every node at once, open connections): {trip:.2f} s")
    print(f"  matrix wall time: {wall:.1f} s (min {min(walls):.1f}, max {max(walls):.1f}, {runs} runs)")
    print(f"  floor: {len(rounds)} x ({seconds:g} + 2 x {trip:.2f}) = {floor:.1f} s; "
          f"ratio {wall / floor:.2f}x (aim: at most {AIM}x)")  # fmt: skip
    per_round = {phase: statistics.median(v) for phase, v in PHASES.items()}
    print("  a round, median per phase: " + ", ".join(f"{p} {s:.2f} s" for p, s in per_round.items()))


def main() -> int:
    args = sim_bench.arguments(__doc__, runs=3, sim="healthy-switch8").parse_args()
    if not sim_bench.can_run("bench_matrix"):
        return 2
    print(sim_bench.dated())
    for name in args.sim.split(","):
        PHASES.clear()
        scenario(name, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
