"""The simulated cluster's bring-up and tear-down by size, on this machine.

    sudo .venv/bin/python benchmarks/bench_sim_bringup.py [--runs 5] [--scenarios healthy,healthy-switch4,...]

Bring-up is SimCluster.up(): the namespaces, every node's files (stubs, fake /sys, the deployment,
the HF cache, keys), the links (one `ip -batch` for the veths, one per namespace for addresses), each
node's boot (mounts, real ufw, sshd) and the fake vLLM, until every sshd and the API accept a
connection. Tear-down is SimCluster.down(): every process stopped, every namespace (the switch's
too) and file removed. Medians over the runs, with min and max, and bring-up's phases (seconds
since it began: files written, links wired, ready). The runs of the scenarios interleave, so a
burst of load on this shared machine spreads over every size. The machine's cores and load are
printed beside them: the sim's nodes share those cores with whatever else runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sim.cluster import SimCluster, why_not_available
from sim.scenario import load_scenario

DEFAULT = "healthy,healthy-ring3,healthy-switch4,healthy-ring4,healthy-switch8"


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):5.2f} s (min {min(values):.2f}, max {max(values):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--scenarios", default=DEFAULT)
    args = parser.parse_args()
    reason = why_not_available()
    if reason:
        print(f"bench_sim_bringup: {reason}", file=sys.stderr)
        return 2
    names = args.scenarios.split(",")
    ups: dict[str, list[float]] = {n: [] for n in names}
    downs: dict[str, list[float]] = {n: [] for n in names}
    phases: dict[str, dict[str, list[float]]] = {n: {} for n in names}
    sizes = {n: len(load_scenario(n).nodes) for n in names}
    for _ in range(args.runs):
        for name in names:
            sim = SimCluster(load_scenario(name))
            start = time.monotonic()
            sim.up()
            ups[name].append(time.monotonic() - start)
            for phase, seconds in sim.timings.items():
                phases[name].setdefault(phase, []).append(seconds)
            start = time.monotonic()
            sim.down()
            downs[name].append(time.monotonic() - start)
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"{time.strftime('%Y-%m-%d')}: {os.cpu_count()} cores, load average {load}; {args.runs} runs each")
    for name in names:
        steps = ", ".join(f"{p} {statistics.median(v):.2f}" for p, v in phases[name].items())
        print(f"{name:16} {sizes[name]} nodes  bring-up {_spread(ups[name])}  tear-down {_spread(downs[name])}")
        print(f"{'':16}          bring-up phases (median s since start): {steps}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
