"""The suite's session time on the simulated cluster, against the floor, per marker.

    sudo .venv/bin/python benchmarks/bench_sim.py [--runs 3] [--sim healthy,healthy-switch8] [--markers preflight,all]

The floor is what no implementation can beat here: per node one bare SSH connect and one trivial
command, nodes in parallel, plus the slowest single probe of the snapshot run alone on its node
(over an open connection, its round trip subtracted). For each marker, the suite's own timings
from summary.json (start-up: options, inventory, the sim's bring-up; session: collection and
checks; snapshot: the parallel snapshot) and the session's ratio to the floor. Also pytest's
start-up alone, and the SSH sessions and commands per node.
Aim (structure issue; issue 18 at 8 nodes too): the preflight session at most 1.5x the (CPU) floor, and one
SSH connection per node for the snapshot whatever the size (the last lines).
The sim's nodes run on this machine's cores, so the floor above cannot be reached where the probes'
CPU exceeds the cores' time: the CPU floor is the connect plus the CPU seconds of every node's whole
probe script (sh's `times`, stubs and the ssh logins included) divided by the cores. The bare
snapshot (the suite's own probe script over fresh connections, by hand) separates the suite's
overhead from what its probes cost on these shared cores.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))


def timed(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=PROJECT, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    return time.monotonic() - start, proc


def node_cpu_seconds(stdout: str) -> float:
    """The children's user + system time from the last line of sh's `times` (`0m0.300000s 0m0.080000s`)."""
    user, system = stdout.strip().splitlines()[-1].split()
    return sum(int(t.split("m")[0]) * 60 + float(t.split("m")[1].rstrip("s")) for t in (user, system))


def floor(scenario: str) -> tuple[float, float, str, float, float]:
    """(connect + trivial command, nodes in parallel; the slowest probe alone; which probe; the CPU
    seconds every node's whole probe script costs, summed over the nodes; the bare snapshot: a fresh
    connection per node running the suite's own probe script, nodes in parallel, nothing else)."""
    import fabric  # noqa: F401  (a bare connect: the import is not the connect's)

    from gb10check.inventory import load_inventory
    from gb10check.reading.node import ClusterNodes
    from gb10check.reading.parallel import map_parallel
    from gb10check.reading.snapshot import build_script, new_boundary
    from sim import netns
    from sim.cluster import SimCluster
    from sim.scenario import load_scenario

    sim = SimCluster(load_scenario(scenario))
    path = sim.up()
    previous = netns.enter(sim.api_namespace)
    try:
        connects = []
        for _ in range(3):
            cluster = ClusterNodes(load_inventory(path))
            start = time.monotonic()
            map_parallel(lambda n: n.transport.run("true", 5), cluster.nodes.values())
            connects.append(time.monotonic() - start)
            cluster.close()
        connect = statistics.median(connects)
        cluster = ClusterNodes(load_inventory(path))
        map_parallel(lambda n: n.transport.run("true", 5), cluster.nodes.values())
        slowest, which = 0.0, ""
        for node in cluster.nodes.values():
            trips = []
            for _ in range(3):
                start = time.monotonic()
                node.transport.run("true", 5)
                trips.append(time.monotonic() - start)
            trip = statistics.median(trips)
            for probe in node.probes:
                script = build_script((probe,), new_boundary(), cluster.inventory.thresholds.command_timeout)
                start = time.monotonic()
                node.transport.run(script, 30)
                alone = time.monotonic() - start - trip
                if alone > slowest:
                    slowest, which = alone, f"{probe.name} on {node.name}"
        cpu = 0.0
        scripts = {}
        for node in cluster.nodes.values():
            scripts[node.name] = build_script(node.probes, new_boundary(), cluster.inventory.thresholds.command_timeout)
            runs = [node.transport.run(f"{{ {scripts[node.name]}\n}} >/dev/null 2>&1; times", 30) for _ in range(3)]
            cpu += statistics.median(node_cpu_seconds(r.stdout) for r in runs)
        cluster.close()
        bare = []
        for _ in range(3):
            cluster = ClusterNodes(load_inventory(path))
            start = time.monotonic()
            map_parallel(lambda n: n.transport.run(scripts[n.name], 30), cluster.nodes.values())
            bare.append(time.monotonic() - start)
            cluster.close()
    finally:
        netns.leave(previous)
        sim.down()
    return connect, slowest, which, cpu, statistics.median(bare)


def _bandwidth(scenario: str, checks: list[dict], output: str) -> None:
    """The bandwidth matrix's wall time against its rounds (gb10check/reading/bandwidth.py: in each round the pairs
    that share no node measure at once, so the floor is rounds x the run's duration, plus what starting and
    stopping each round's servers costs); the first check to ask runs every round, the others read them."""
    seconds = 1.0  # the sim's inventory: thresholds.bandwidth_seconds = 1
    said = re.findall(r"ib_write_bw round \d+/(\d+)", output)
    rounds = int(said[-1]) if said else 0
    wall = sum(r["duration"] for r in checks if r["check"].startswith(BANDWIDTH_CHECKS))
    if not rounds:
        print("    bandwidth: no rounds ran")
        return
    per_round = wall / rounds
    print(f"    bandwidth matrix: {wall:.2f} s for {rounds} rounds of {seconds:g} s runs = {per_round:.2f} s a round, "
          f"{per_round - seconds:.2f} s of orchestration each; rounds x (duration + orchestration) with the "
          f"pair's orchestration: see `--scenario healthy`")  # fmt: skip


BANDWIDTH_CHECKS = ("test_rdma_write_runs[", "test_rdma_bandwidth[", "test_rdma_bandwidth_all_rails_at_once[")


def _service(checks: list[dict], session: float) -> None:
    """The service stage's wall time against the sum of its requests' own times (they overlap)."""
    names = ("request_seconds", "load_seconds", "liveness_seconds")
    spent = sum(r["figures"].get(n, 0.0) for r in checks for n in names)
    decode = next((r for r in checks if r["check"].startswith("test_decode_speed")), None)
    if decode is not None and decode["figures"].get("decode_tokens_per_s"):
        spent += decode["duration"]
    print(f"    requests: {spent:.2f} s in all, one after the other; the session {session:.2f} s (they overlap)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sim", "--scenario", dest="sim", default="healthy", help="scenarios, comma-separated")
    parser.add_argument("--markers", default="preflight,network,service,all")
    args = parser.parse_args()
    startup = [timed([sys.executable, "-m", "pytest", "--version"])[0] for _ in range(args.runs)]
    print(f"{time.strftime('%Y-%m-%d')}: load average {', '.join(f'{v:.1f}' for v in os.getloadavg())}")
    print(f"pytest start-up (--version): median {statistics.median(startup):.2f} s")
    for name in args.sim.split(","):
        scenario(name, args.runs, args.markers.split(","))
    return 0


def progress(line: str) -> None:
    """Where a run of minutes is, on stderr (the figures go to stdout)."""
    print(f"bench_sim: {line}", file=sys.stderr, flush=True)


def scenario(name: str, runs: int, markers: list[str]) -> None:
    py = sys.executable
    progress(f"{name}: measuring the floor (connects, each probe alone, the bare snapshot)")
    connect, slowest, which, cpu, bare = floor(name)
    the_floor = connect + slowest
    cores = os.cpu_count() or 1
    cpu_floor = connect + cpu / cores
    print(f"scenario {name}, {runs} runs per marker")
    print(
        f"  floor: connect + 1 command, nodes in parallel {connect:.2f} s + slowest probe alone "
        f"{slowest:.2f} s ({which}) = {the_floor:.2f} s"
    )
    print(
        f"  CPU floor: connect {connect:.2f} s + every node's probe script, {cpu:.2f} CPU-s in all, over "
        f"{cores} cores = {cpu_floor:.2f} s (the sim's nodes share this machine's cores)"
    )
    print(
        f"  bare snapshot: a fresh connection per node and the suite's probe script by hand, nodes in "
        f"parallel = {bare:.2f} s (what is left above it is the suite's own: collection, fixtures, checks, reports)"
    )
    for marker in markers:
        rows = []
        for i in range(runs):
            progress(f"{name}: -m {marker}, run {i + 1} of {runs}")
            with tempfile.TemporaryDirectory() as tmp:
                select = [] if marker == "all" else ["-m", marker]
                run = [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--sim={name}"]
                wall, proc = timed([*run, f"--reports-dir={tmp}", *select])
                path = Path(tmp) / "summary.json"
                if not path.exists():
                    print(proc.stdout[-3000:], proc.stderr[-3000:], file=sys.stderr)
                    raise SystemExit(f"the run left no {path} (exit {proc.returncode})")
                summary = json.loads(path.read_text())
            said = proc.stdout + proc.stderr
            found = (summary["timings"], summary["counts"], summary["transports"], proc.returncode, summary["checks"])
            rows.append((wall, *found, said))
        session = statistics.median(r[1]["session"] for r in rows)
        print(
            f"  -m {marker:9} whole run {statistics.median(r[0] for r in rows):.2f} s; start-up "
            f"{statistics.median(r[1]['start_up'] for r in rows):.2f} s; session {session:.2f} s "
            f"(snapshot {statistics.median(r[1].get('snapshot', 0.0) for r in rows):.2f} s) = "
            f"{session / the_floor:.2f}x the floor, {session / cpu_floor:.2f}x the CPU floor, "
            f"{session / bare:.2f}x the bare snapshot; "
            f"{rows[-1][2]} (exit {rows[-1][4]})"
        )
        if marker in ("network", "all"):
            _bandwidth(name, rows[-1][5], rows[-1][6])
        if marker in ("service", "all"):
            _service(rows[-1][5], rows[-1][1]["session"])
    for node, stats in rows[-1][3].items():
        print(
            f"  {node}: {stats['connections']} SSH connection(s), {stats['commands']} command(s), "
            f"{stats.get('snapshot_probes', '?')} probes in its snapshot"
        )


if __name__ == "__main__":
    sys.exit(main())
