"""RDMA write bandwidth over the fabric: perftest's ib_write_bw between two members of a rail, a
server on one node and a client on the other, bounded on both, the server gone afterwards on
every path.

One run (`measure`) takes any set of jobs at once (a job: a client, a server, a rail), as long as
no server gets two jobs on one TCP port:
1. on each server, one command starts it in its own session (setsid, under `timeout`: it ends by
   itself even if this process dies) and returns once `ss` shows it listening, with its process
   group and log file;
2. the clients run at once, each bounded by the duration plus a margin;
3. in `finally` (pass, failure, timeout, Ctrl-C): each server's process group is killed, its log read
   and removed, and the node confirms it is gone.
`matrix` schedules every pair of a rail in rounds in which no node is in two pairs (the pairs of a
round at once: on a switch they take different ports), first each rail alone, then each pair of
nodes on all the rails they share at once.
These are the suite's only commands that start processes on a node (selftests/e2e/test_read_only.py).
"""

from __future__ import annotations

import secrets
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gb10check import inventory as inv
from gb10check import topology
from gb10check.errors import GB10Error
from gb10check.reading.node import ClusterNodes
from gb10check.reading.parallel import map_parallel
from gb10check.reading.parsers.perftest import BwFailure, classify_failure, parse_bw
from gb10check.reading.transport import cut_short

__all__ = [
    "DEGRADED_SHARE",
    "LISTEN_WAIT",
    "LOG_DIR",
    "PORT_BASE",
    "STILL_RUNNING",
    "BwRun",
    "Job",
    "alone_rounds",
    "client_command",
    "degraded",
    "degraded_node",
    "margin",
    "measure",
    "run_rounds",
    "server_start_command",
    "server_stop_command",
    "together_rounds",
]

PORT_BASE = 18515  # perftest's default exchange port; a server's n-th job in a run takes PORT_BASE + n
LISTEN_WAIT = 3.0  # seconds the server gets to listen


def margin(seconds: float) -> float:
    """Beyond the duration: the TCP exchange and QP set-up (well under a second), with room for a slow node."""
    return 3.0 + seconds


# A ConnectX-7 that initialised degraded negotiates its full rate and moves a fraction of it: NVIDIA/
# dgx-spark-playbooks PR #108 measured 13.23 Gb/s (ib_write_bw, 8 QPs) and 12.86 Gb/s TCP at 200 Gb/s with
# clean counters, and calls 8-25 Gb/s its mark; a healthy half measures 92.57-111.7 (about half its rate),
# a port at 100 Gb/s about 46, a loaded or slow link 40. Below an eighth of the rate both ends negotiated
# (25 Gb/s at 200) is the degraded card, not a slow link.
DEGRADED_SHARE = 1 / 8


def degraded(gbps: float, rates: Sequence[float | None], declared: float) -> bool:
    """The figure is far below the rate both ends negotiated (each at least the rail's declared rate, so
    no rate check explains it): a ConnectX-7 that initialised degraded. A rate not known: not judged."""
    if not rates or any(r is None for r in rates):
        return False
    lowest = min(r for r in rates if r is not None)
    return lowest >= declared and gbps < DEGRADED_SHARE * lowest


def degraded_node(bad: Sequence[tuple[str, str]], good: Sequence[tuple[str, str]]) -> str | None:
    """The one node in every degraded pair of a rail and in none of its healthy pairs (a switch rail: the
    degraded card's node meets every other node there), None when the pairs do not single one out."""
    if not bad:
        return None
    common = set(bad[0]).intersection(*map(set, bad[1:]))
    odd = [n for n in sorted(common) if not any(n in pair for pair in good)]
    return odd[0] if len(odd) == 1 and len(common) == 1 else None


LOG_DIR = "/tmp"  # the server's output and pid file, removed by the stop
STILL_RUNNING = "gb10check: the ib_write_bw server is still running"


@dataclass(frozen=True)
class Job:
    """One measurement: `client` writes to `server` over `rail` (client and server are node names)."""

    rail: inv.Rail
    client: str
    server: str

    @property
    def pair(self) -> tuple[str, str]:
        return (self.client, self.server)


@dataclass(frozen=True)
class BwRun:
    job: Job
    port: int
    seconds: float  # ib_write_bw -D
    gbps: float | None  # the client's average; None when the run failed
    failure: BwFailure | None
    client_output: str
    server_output: str
    together: int = 1  # runs at once over the same two nodes (all the rails of a pair: the aggregate)

    @property
    def where(self) -> str:
        """The run in words: who wrote to whom, over which rail and how."""
        return f"{self.job.client} -> {self.job.server} over rail {self.job.rail.name} ({self.setup})"

    @property
    def setup(self) -> str:
        """How it ran: the client's netdev and device, the GID index, the TCP port, the duration."""
        client = self.job.rail.member(self.job.client)
        assert client is not None
        return (
            f"from {client.netdev}/{client.rdma_device}, GID index {self.job.rail.gid_index}, "
            f"TCP port {self.port}, {self.seconds:g} s"
        )


def _perftest(device: str, gid_index: int, port: int, seconds: float) -> str:
    return f"ib_write_bw -d {shlex.quote(device)} -i 1 -x {gid_index} -p {port} -D {seconds:g} -F --report_gbits"


def server_start_command(device: str, gid_index: int, port: int, seconds: float, log: str) -> str:
    """Start the server in its own session under `timeout`, its pid beside its log at once (so a stop
    can find it even before this command returns); return when `ss` shows it listening."""
    bound = seconds + margin(seconds) + LISTEN_WAIT
    polls = int(LISTEN_WAIT / 0.1)
    q = shlex.quote
    return (
        f"setsid timeout -k 2 {bound:g} {_perftest(device, gid_index, port, seconds)} </dev/null >{q(log)} 2>&1 & "
        f"pid=$!; echo $pid >{q(log + '.pid')}; i=0; "
        f'while [ $i -lt {polls} ]; do ss -Hltn "sport = :{port}" | grep -q . && echo listening && exit 0; '
        "kill -0 $pid 2>/dev/null || break; sleep 0.1; i=$((i+1)); done; "
        f"cat {q(log)}; exit 1"
    )


# "is any process of group $pid alive": a zombie does not count (kill -0 says yes to one; an
# orphan waits for its init to reap it, and not every init does at once)
_ALIVE = "ps -eo pgid=,stat= | awk -v p=\"$pid\" '$1 == p && $2 !~ /^Z/ {a = 1} END {exit !a}'"


def server_stop_command(log: str) -> str:
    """Kill the server's process group (TERM, then KILL), print its log, remove it and its pid file,
    and say whether anything is left."""
    q = shlex.quote
    return (
        f'pid=$(cat {q(log + ".pid")} 2>/dev/null); if [ -n "$pid" ] && {_ALIVE}; then kill -TERM -$pid 2>/dev/null; '
        f"i=0; while {_ALIVE} && [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done; kill -KILL -$pid 2>/dev/null; fi; "
        f"cat {q(log)} 2>/dev/null; rm -f {q(log)} {q(log + '.pid')}; "
        f"if [ -n \"$pid\" ] && {_ALIVE}; then echo '{STILL_RUNNING}'; fi; true"
    )


def client_command(device: str, gid_index: int, port: int, seconds: float, server_ip: str) -> str:
    bound = seconds + margin(seconds)
    return f"timeout -k 2 {bound:g} {_perftest(device, gid_index, port, seconds)} {shlex.quote(server_ip)}"


@dataclass
class _Server:
    job: Job
    port: int
    log: str
    output: str = ""
    failure: BwFailure | None = None
    timed_out: bool = False

    def member(self, node: str) -> inv.Member:
        member = self.job.rail.member(node)
        assert member is not None
        return member


def measure(cluster: ClusterNodes, jobs: Sequence[Job], seconds: float) -> list[BwRun]:
    """One run: every job at once, each server on its own port of its node."""
    token = secrets.token_hex(4)
    taken: dict[str, int] = {}
    servers = []
    for i, job in enumerate(jobs):
        port = PORT_BASE + taken.get(job.server, 0)
        taken[job.server] = taken.get(job.server, 0) + 1
        servers.append(_Server(job, port, f"{LOG_DIR}/gb10check-bw.{token}.{i}"))
    try:
        map_parallel(lambda s: _start(cluster, s, seconds), servers, name="gb10check-bw-server")
        ready = [s for s in servers if s.failure is None]
        outputs = dict(
            zip(
                [id(s) for s in ready],
                map_parallel(lambda s: _client(cluster, s, seconds), ready, name="gb10check-bw-client"),
                strict=True,
            )
        )
    finally:
        map_parallel(lambda s: _stop(cluster, s), servers, name="gb10check-bw-stop")
    together = {pair: sum(j.pair == pair for j in jobs) for pair in {j.pair for j in jobs}}
    return [_judge(s, outputs.get(id(s), ""), seconds, together[s.job.pair]) for s in servers]


def _judge(s: _Server, text: str, seconds: float, together: int) -> BwRun:
    gbps, failure = None, s.failure
    if failure is None and s.timed_out and "BW Test" not in text:  # the TCP exchange never completed
        failure = BwFailure(
            hint="bw-connect-failed",
            what=f"the client never completed the TCP exchange with {s.job.server}:{s.port} within "
            f"{seconds + margin(seconds):g} s (a firewall dropping the port, or the address not on the peer)",
        )
    elif failure is None and s.timed_out:
        failure = BwFailure(
            hint="command-timeout", what=f"the run outlived its bound ({seconds + margin(seconds):g} s)"
        )
    elif failure is None:
        try:
            gbps = parse_bw(text).average_gbps
        except GB10Error:
            failure = classify_failure(text + "\n" + s.output) or BwFailure(
                hint="unexpected-output",
                what="ib_write_bw printed no result: " + (text.strip()[-200:] or "nothing"),
            )
    if STILL_RUNNING in s.output and failure is None:  # never leave a process behind unsaid
        failure = BwFailure(
            "command-timeout", f"the server on {s.job.server} did not end when told to (pid file {s.log}.pid)"
        )
    return BwRun(s.job, s.port, seconds, gbps, failure, text, s.output, together)


def _start(cluster: ClusterNodes, s: _Server, seconds: float) -> None:
    member = s.member(s.job.server)
    command = server_start_command(member.rdma_device, s.job.rail.gid_index, s.port, seconds, s.log)
    res = cluster[s.job.server].run(command, timeout=LISTEN_WAIT + 10)
    if res.rc == 0 and res.stdout.strip() == "listening":
        return
    text = res.stdout + res.stderr
    s.failure = classify_failure(text) or BwFailure(
        hint="unexpected-output",
        what=f"the server on {s.job.server} did not listen on port {s.port}: "
        + (text.strip()[-200:] or f"exit {res.rc}"),
    )


def _client(cluster: ClusterNodes, s: _Server, seconds: float) -> str:
    member, server = s.member(s.job.client), s.member(s.job.server)
    command = client_command(member.rdma_device, s.job.rail.gid_index, s.port, seconds, server.ip)
    res = cluster[s.job.client].run(command, timeout=seconds + margin(seconds) + 5)
    s.timed_out = res.timed_out or cut_short(res.rc)
    return res.stdout + res.stderr


def _stop(cluster: ClusterNodes, s: _Server) -> None:
    s.output = cluster[s.job.server].run(server_stop_command(s.log), timeout=10).stdout


def alone_rounds(inventory: inv.Inventory, wanted: Sequence[tuple[str, str, str]]) -> list[list[Job]]:
    """Each (client, server, rail name) alone on its rail: per rail, rounds in which no node is in two
    pairs (a switch's rail: the circle method), then the rounds of different rails packed together
    where their nodes do not meet (a ring's cables)."""
    order = [n.name for n in sorted(inventory.nodes, key=lambda n: n.rank)]
    rails = {r.name: r for r in inventory.rails}
    per_rail: list[list[Job]] = []
    for rail in inventory.rails:
        pairs = [(a, b) for a, b, name in wanted if name == rail.name]
        per_rail += [[Job(rail, a, b) for a, b in r] for r in topology.rounds(pairs, order)]
    packed: list[list[Job]] = []
    for this in per_rail:
        busy = {n for job in this for n in job.pair}
        home = next((r for r in packed if not busy & {n for job in r for n in job.pair}), None)
        if home is None:
            packed.append(list(this))
        else:
            home += this
    assert all(rails[job.rail.name] is job.rail for r in packed for job in r)
    return packed


def together_rounds(inventory: inv.Inventory, pairs: Sequence[tuple[str, str]]) -> list[list[Job]]:
    """Each pair of nodes on every rail they share at once, the pairs in rounds as above."""
    order = [n.name for n in sorted(inventory.nodes, key=lambda n: n.rank)]
    return [
        [Job(rail, a, b) for a, b in this for rail in inventory.rails_between(a, b)]
        for this in topology.rounds(pairs, order)
    ]


def run_rounds(
    cluster: ClusterNodes,
    rounds: Sequence[Sequence[Job]],
    seconds: float,
    progress: Callable[[str], None] = lambda _line: None,
) -> list[BwRun]:
    """The rounds one after another, each round's jobs at once."""
    runs: list[BwRun] = []
    for i, this in enumerate(rounds, 1):
        shown = ", ".join(f"{j.client}-{j.server} {j.rail.name}" for j in this)
        progress(f"ib_write_bw round {i}/{len(rounds)}: {shown}")
        runs += measure(cluster, this, seconds)
    return runs
