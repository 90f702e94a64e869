"""RDMA write bandwidth over the QSFP links: perftest's ib_write_bw, a server on the peer and a client
on rank 0 per link, bounded on both nodes, the server gone afterwards on every path.

One run (`measure`) takes any set of links at once (one link alone, or all of them together for
the aggregate, each on its own TCP port and device):
1. on each peer, one command starts the server in its own session (setsid, under `timeout`: it
   ends by itself even if this process dies) and returns once `ss` shows it listening, with its
   process group and log file;
2. the clients run on rank 0 at once, each bounded by the duration plus a margin;
3. in `finally` (pass, failure, timeout, Ctrl-C): each server's process group is killed, its log read
   and removed, and the node confirms it is gone.
These are the suite's only commands that start processes on a node (selftests/e2e/test_read_only.py).
"""

from __future__ import annotations

import secrets
import shlex
from dataclasses import dataclass

from gb10check import inventory as inv
from gb10check.errors import GB10Error
from gb10check.node import ClusterNodes
from gb10check.parallel import map_parallel
from gb10check.parsers.perftest import BwFailure, classify_failure, parse_bw
from gb10check.transport import cut_short

PORT_BASE = 18515  # perftest's default exchange port; the n-th link of a run takes PORT_BASE + n
LISTEN_WAIT = 3.0  # seconds the server gets to listen


def margin(seconds: float) -> float:
    """Beyond the duration: the TCP exchange and QP set-up (well under a second), with room for a slow node."""
    return 3.0 + seconds


LOG_DIR = "/tmp"  # the server's output and pid file, removed by the stop
STILL_RUNNING = "gb10check: the ib_write_bw server is still running"


@dataclass(frozen=True)
class BwRun:
    link: inv.Link
    server: str  # node names
    client: str
    port: int
    seconds: float  # ib_write_bw -D
    gbps: float | None  # the client's average; None when the run failed
    failure: BwFailure | None
    client_output: str
    server_output: str

    @property
    def where(self) -> str:
        return (
            f"{self.client} -> {self.server} over {self.link.netdev} ({self.link.rdma_device}, GID index "
            f"{self.link.gid_index}, TCP port {self.port}, {self.seconds:g} s)"
        )


def _perftest(link: inv.Link, port: int, seconds: float) -> str:
    return (
        f"ib_write_bw -d {shlex.quote(link.rdma_device)} -i 1 -x {link.gid_index} -p {port} "
        f"-D {seconds:g} -F --report_gbits"
    )


def server_start_command(link: inv.Link, port: int, seconds: float, log: str) -> str:
    """Start the server in its own session under `timeout`, its pid beside its log at once (so a stop
    can find it even before this command returns); return when `ss` shows it listening."""
    bound = seconds + margin(seconds) + LISTEN_WAIT
    polls = int(LISTEN_WAIT / 0.1)
    q = shlex.quote
    return (
        f"setsid timeout -k 2 {bound:g} {_perftest(link, port, seconds)} </dev/null >{q(log)} 2>&1 & "
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


def client_command(link: inv.Link, peer: str, port: int, seconds: float) -> str:
    return f"timeout -k 2 {seconds + margin(seconds):g} {_perftest(link, port, seconds)} {shlex.quote(link.ip(peer))}"


@dataclass
class _Server:
    link: inv.Link
    node: str
    port: int
    log: str
    output: str = ""
    failure: BwFailure | None = None
    timed_out: bool = False


def measure(cluster: ClusterNodes, links: list[inv.Link], client: str, seconds: float) -> list[BwRun]:
    """One run over `links` at once, the client on `client`, each server on the link's other node."""
    token = secrets.token_hex(4)
    servers = [
        _Server(
            link, next(n for n in link.addresses if n != client), PORT_BASE + i, f"{LOG_DIR}/gb10check-bw.{token}.{i}"
        )
        for i, link in enumerate(links)
    ]
    try:
        map_parallel(lambda s: _start(cluster, s, seconds), servers, name="gb10check-bw-server")
        ready = [s for s in servers if s.failure is None]
        outputs = dict(
            zip(
                [id(s) for s in ready],
                map_parallel(lambda s: _client(cluster, s, client, seconds), ready, name="gb10check-bw-client"),
                strict=True,
            )
        )
    finally:
        map_parallel(lambda s: _stop(cluster, s), servers, name="gb10check-bw-stop")
    runs = []
    for s in servers:
        text = outputs.get(id(s), "")
        gbps, failure = None, s.failure
        if failure is None and s.timed_out and "BW Test" not in text:  # the TCP exchange never completed
            failure = BwFailure(
                hint="bw-connect-failed",
                what=f"the client never completed the TCP exchange with {s.node}:{s.port} within "
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
                "command-timeout", f"the server on {s.node} did not end when told to (pid file {s.log}.pid)"
            )
        runs.append(BwRun(s.link, s.node, client, s.port, seconds, gbps, failure, text, s.output))
    return runs


def _start(cluster: ClusterNodes, s: _Server, seconds: float) -> None:
    res = cluster[s.node].run(server_start_command(s.link, s.port, seconds, s.log), timeout=LISTEN_WAIT + 10)
    if res.rc == 0 and res.stdout.strip() == "listening":
        return
    text = res.stdout + res.stderr
    s.failure = classify_failure(text) or BwFailure(
        hint="unexpected-output",
        what=f"the server on {s.node} did not listen on port {s.port}: " + (text.strip()[-200:] or f"exit {res.rc}"),
    )


def _client(cluster: ClusterNodes, s: _Server, client: str, seconds: float) -> str:
    res = cluster[client].run(client_command(s.link, s.node, s.port, seconds), timeout=seconds + margin(seconds) + 5)
    s.timed_out = res.timed_out or cut_short(res.rc)
    return res.stdout + res.stderr


def _stop(cluster: ClusterNodes, s: _Server) -> None:
    s.output = cluster[s.node].run(server_stop_command(s.log), timeout=10).stdout
