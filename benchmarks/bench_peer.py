"""`gb10check preflight` against its peer, pytest-testinfra, on the same simulated cluster in the same run.

    sudo .venv/bin/python benchmarks/bench_peer.py [--runs 5] [--sim healthy,healthy-switch8] [--no-multiplexed]

The peer (benchmarks/peer_testinfra/test_reads.py) is the preflight snapshot's reads written as a
pytest-testinfra user writes them: one test per read, the hosts as parameters (`--hosts`), each read
one `host.run` over testinfra's ssh backend, as it comes (one `ssh` process and login per read). The
reads are the suite's own, node by node (gb10check/reading/probes.py: probes_for). With --multiplexed (the
default) the peer runs a second time with a ControlPath in its ssh_config, so that testinfra's
ControlMaster=auto shares one connection per host (its masters are closed after each run): the
strongest form of the same peer. Both run in their own virtualenv, benchmarks/.peer-venv
(pytest-testinfra pinned, made on first use with pip), never the suite's: testinfra's pytest plugin
would load into every run of the suite.

For each scenario the cluster is brought up once; then the runs interleave (the suite, the peer,
the multiplexed peer; the order turned each round), each the whole command, process start to exit,
from rank 0's network namespace (where the suite runs on a real cluster). Per command: the wall
time, the CPU seconds of its process tree (itself and the ssh clients it starts) and the CPU seconds
the cluster spent answering it (every node's sshd with what it ran: its reaped children's times).
Medians, with min and max. On this shared machine the wall times follow the load (printed with
them); the CPU seconds do not, much.
Aim (issue 18): `gb10check preflight` at least 3x faster than the peer at 2 nodes and 8x at 8 nodes.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

import sim_bench  # noqa: E402  (benchmarks/, beside this script)

from gb10check.inventory import Inventory, load_inventory  # noqa: E402
from gb10check.reading.probes import SNAPSHOT_READS, pings, probes_for, ssh_logins  # noqa: E402
from sim import netns  # noqa: E402
from sim.cluster import SimCluster  # noqa: E402
from sim.scenario import load_scenario  # noqa: E402

PEER_DIR = PROJECT / "benchmarks" / "peer_testinfra"
PEER_VENV = PROJECT / "benchmarks" / ".peer-venv"
TESTINFRA = "pytest-testinfra==10.2.2"
TARGETS = {2: 3.0, 8: 8.0}  # nodes -> how many times faster than the peer the suite must be
TICKS = os.sysconf("SC_CLK_TCK")


def peer_python() -> Path:
    """The peer's virtualenv: pytest-testinfra and the suite's own pytest version, made once."""
    python = PEER_VENV / "bin" / "python"
    check = [str(python), "-c", "import importlib.metadata as m; print(m.version('pytest-testinfra'))"]
    if python.exists() and subprocess.run(check, capture_output=True, text=True).stdout.strip() == TESTINFRA[-6:]:
        return python
    import pytest

    print(f"bench_peer: making {PEER_VENV} ({TESTINFRA}, pytest=={pytest.__version__})", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(PEER_VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", TESTINFRA,
                    f"pytest=={pytest.__version__}"], check=True)  # fmt: skip
    return python


def peer_reads(inventory: Inventory) -> dict[str, dict[str, tuple[str, tuple[int, ...]]]]:
    """Per node, the snapshot's reads: the probe's command (unwrapped: a testinfra user writes the command
    itself) and the exit statuses the read accepts."""
    out = {}
    for node in inventory.nodes:
        declared = {r.name: r for r in (*SNAPSHOT_READS, *ssh_logins(inventory, node), *pings(inventory, node))}
        out[node.name] = {p.name: (p.command, declared[p.name].accept_rc) for p in probes_for(inventory, node)}
    return out


def ssh_config(inventory: Inventory, control: Path | None) -> str:
    """Each node by name for ssh (the peer's --hosts), its address, key and known_hosts from the inventory."""
    lines = []
    for node in inventory.nodes:
        lines += [
            f"Host {node.name}",
            f"  HostName {node.host}",
            f"  Port {node.port}",
            f"  User {node.user}",
            f"  IdentityFile {node.key}",
            f"  UserKnownHostsFile {inventory.ssh.known_hosts}",
            "  StrictHostKeyChecking yes",
            "  BatchMode yes",
        ]
        if control is not None:
            lines.append(f"  ControlPath {control}/%r@%h:%p")
    return "\n".join(lines) + "\n"


def cluster_cpu(sim: SimCluster) -> float:
    """CPU seconds every node's sshd has spent with its reaped children (each login and what it ran)."""
    total = 0
    for node in sim.nodes:
        if node.process is None:
            continue
        fields = Path(f"/proc/{node.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return total / TICKS


@dataclass
class Run:
    wall: float
    cpu: float  # the command's process tree
    cluster: float  # the nodes' sshd and everything they ran for it
    rc: int
    tail: str


def timed(sim: SimCluster, cmd: list[str], cwd: Path, env: dict[str, str], after: Callable[[], None]) -> Run:
    before, cluster_before = resource.getrusage(resource.RUSAGE_CHILDREN), cluster_cpu(sim)
    with netns.inside(sim.api_namespace):
        start = time.monotonic()
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800,
                              stdin=subprocess.DEVNULL)  # fmt: skip
        wall = time.monotonic() - start
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    after()  # a multiplexed peer's masters: their sessions end (and are counted) only when they are closed
    time.sleep(0.3)  # the nodes' sshd reap the sessions that just closed
    cpu = used.ru_utime - before.ru_utime + used.ru_stime - before.ru_stime
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    return Run(wall, cpu, cluster_cpu(sim) - cluster_before, proc.returncode, lines[-1] if lines else "")


def _close_masters(inventory: Inventory, config: Path) -> None:
    for node in inventory.nodes:
        subprocess.run(["ssh", "-F", str(config), "-O", "exit", node.name], capture_output=True, timeout=10)


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):6.2f} s (min {min(values):.2f}, max {max(values):.2f})"


def _load() -> str:
    return ", ".join(f"{v:.1f}" for v in os.getloadavg())


def scenario(name: str, runs: int, multiplexed: bool, python: Path) -> None:
    sim = SimCluster(load_scenario(name))
    path = sim.up()
    try:
        inventory = load_inventory(path)
        with tempfile.TemporaryDirectory(prefix="gb10check-peer-") as folder:
            tmp = Path(folder)
            (tmp / "reads.json").write_text(json.dumps(peer_reads(inventory)))
            (tmp / "ssh_config").write_text(ssh_config(inventory, None))
            (tmp / "control").mkdir()
            (tmp / "ssh_config.mux").write_text(ssh_config(inventory, tmp / "control"))
            hosts = ",".join(f"ssh://{n.name}" for n in inventory.nodes)
            env = {**os.environ, "PEER_READS": str(tmp / "reads.json")}
            env.pop("GB10_CLUSTER", None)
            suite = [str(Path(sys.executable).with_name("gb10check")), "preflight", f"--cluster={path}",
                     f"--reports-dir={tmp / 'reports'}"]  # fmt: skip
            peer = [str(python), "-m", "pytest", "-q", f"--hosts={hosts}", "test_reads.py"]
            commands = {
                "gb10check preflight": (suite, PROJECT),
                "peer (testinfra, ssh)": ([*peer, f"--ssh-config={tmp / 'ssh_config'}"], PEER_DIR),
            }
            if multiplexed:
                commands["peer, multiplexed"] = ([*peer, f"--ssh-config={tmp / 'ssh_config.mux'}"], PEER_DIR)
            results: dict[str, list[Run]] = {what: [] for what in commands}
            load_before = _load()
            for i in range(runs):
                order = list(commands) if i % 2 == 0 else list(reversed(commands))
                for what in order:
                    cmd, cwd = commands[what]
                    close = (
                        (lambda: _close_masters(inventory, tmp / "ssh_config.mux"))
                        if what == "peer, multiplexed"
                        else (lambda: None)
                    )
                    results[what].append(timed(sim, cmd, cwd, env, close))
            load_after = _load()
        reads = sum(len(r) for r in peer_reads(inventory).values())
        print(f"{name}: {len(sim.nodes)} nodes, {reads} reads in all; load average {load_before} before, "
              f"{load_after} after")  # fmt: skip
        for what, rows in results.items():
            cpu = statistics.median(r.cpu for r in rows)
            print(
                f"  {what:22} wall {_median([r.wall for r in rows])}; CPU {cpu:5.2f} s"
                f" + the cluster's {statistics.median(r.cluster for r in rows):5.2f} s; exit "
                f"{sorted({r.rc for r in rows})}: {rows[-1].tail}"
            )
        ours = results["gb10check preflight"]
        target = TARGETS.get(len(sim.nodes))
        for what, rows in results.items():
            if rows is ours:
                continue
            wall = statistics.median(r.wall for r in rows) / statistics.median(r.wall for r in ours)
            spent = statistics.median(r.cpu + r.cluster for r in rows)
            cpu = spent / statistics.median(r.cpu + r.cluster for r in ours)
            aim = f" (aim: {target:g}x)" if target and what.startswith("peer (") else ""
            print(f"  {what} / gb10check preflight: {wall:.1f}x the wall time{aim}, {cpu:.1f}x the CPU seconds")
    finally:
        sim.down()


def main() -> int:
    parser = sim_bench.arguments(__doc__, runs=5, sim="healthy,healthy-switch8")
    parser.add_argument("--no-multiplexed", dest="multiplexed", action="store_false")
    args = parser.parse_args()
    if not sim_bench.can_run("bench_peer"):
        return 2
    python = peer_python()
    print(sim_bench.dated(f"{args.runs} interleaved runs of each; {TESTINFRA}"))
    for name in args.sim.split(","):
        scenario(name, args.runs, args.multiplexed, python)
    return 0


if __name__ == "__main__":
    sys.exit(main())
