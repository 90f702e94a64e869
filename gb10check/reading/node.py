"""A node as this run reaches it (NodeSession: its transport, its fact snapshot gathered once per session,
every command sent), and the cluster's (ClusterNodes). The inventory's description of a node is
gb10check/inventory.py's Node; a node's name is a str."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

from gb10check import inventory as inv
from gb10check.deployment.launch.plan import LaunchPlan
from gb10check.errors import TransportError
from gb10check.reading.parallel import map_parallel
from gb10check.reading.probes import probes_for
from gb10check.reading.snapshot import Probe, Read, Snapshot, build_script, new_boundary, script_timeout, split_output
from gb10check.reading.transport import CommandResult, LocalTransport, SshTransport, Transport
from gb10check.safe_text import redact

__all__ = ["ClusterNodes", "NodeSession", "follows_from", "identifiers", "make_transport"]


class NodeSession:
    """A node of the inventory (`spec`) as this run reaches it: its transport, its snapshot, what was sent."""

    def __init__(
        self,
        spec: inv.Node,
        transport: Transport,
        command_timeout: float = 10.0,
        probes: tuple[Probe, ...] = (),
    ) -> None:
        self.spec = spec
        self.transport = transport
        self.command_timeout = command_timeout
        self.probes = probes
        self._snapshot: Snapshot | None = None
        self._lock = threading.Lock()
        self.sent: list[str] = []  # every command the suite gave this node (the snapshot's probe by probe): an audit

    @property
    def name(self) -> str:
        return self.spec.name

    def snapshot(self) -> Snapshot:
        with self._lock:
            if self._snapshot is None:
                self._snapshot = self.probe(self.probes)
            return self._snapshot

    def read_now(self, reads: tuple[Read[object], ...]) -> Snapshot:
        """These facts again, now, in one round trip (after a wait, the session's snapshot is stale)."""
        names = {r.name for r in reads}
        return self.probe(tuple(p for p in self.probes if p.name in names))

    def taken(self) -> Snapshot | None:
        """The snapshot if it was taken already (never starts one: for reports and hints)."""
        return self._snapshot

    def probe(self, probes: tuple[Probe, ...]) -> Snapshot:
        """These probes in one round trip, each bounded on its own (every command recorded as sent)."""
        boundary = new_boundary()
        self.sent += [p.command for p in probes]
        try:
            res = self.transport.run(
                build_script(probes, boundary, self.command_timeout),
                timeout=script_timeout(probes, self.command_timeout),
            )
        except TransportError as exc:
            return Snapshot(self.name, {}, error=exc)
        results = split_output(res.stdout, probes, boundary, res.duration)
        for result in results.values():  # .env, compose, container Env: hide their secrets everywhere from now on
            redact.register_assigned(result.stdout)
        return Snapshot(self.name, results)

    def run(self, command: str, timeout: float) -> CommandResult:
        self.sent.append(command)
        return self.transport.run(command, timeout)


def follows_from(unreachable: list[str]) -> str:
    """What a check says instead of its own advice when its evidence needs nodes that cannot be asked."""
    return (
        f"this follows from {', '.join(unreachable)}, which cannot be reached (a node that is off or hung "
        "darkens its end of every link): see its own checks first"
    )


def identifiers(inventory: inv.Inventory) -> list[str]:
    """The inventory's names the reports are keyed by (nodes, rails: their netdevs and RDMA devices) and
    the snapshot's probe names: never masked, whatever a node's .env holds (gb10check/safe_text/redact.py)."""
    names = [n.name for n in inventory.nodes]
    names += [
        name
        for rail in inventory.rails
        for name in (rail.name, *(n for m in rail.members for n in (m.netdev, m.rdma_device)))
    ]
    return names + [p.name for node in inventory.nodes for p in probes_for(inventory, node)]


def make_transport(spec: inv.Node, ssh: inv.SshSettings) -> Transport:
    if spec.transport == "local":
        return LocalTransport(spec.name)
    assert spec.host is not None  # the inventory validated this
    return SshTransport(
        spec.name,
        spec.host,
        user=spec.user,
        port=spec.port,
        key=spec.key,
        connect_timeout=ssh.connect_timeout,
        host_key_policy=ssh.host_key_policy,
        known_hosts=ssh.known_hosts,
        use_ssh_config=ssh.use_ssh_config,
    )


def _loggers_first() -> None:
    """The loggers an SSH connect creates, made here in the main thread: pytest's logging plugin walks
    the logger registry at session start, and a connect in the prefetch thread that added one then
    would break that walk (RuntimeError: dictionary changed size during iteration)."""
    import fabric  # noqa: F401  (its import creates invoke's and paramiko's module loggers)

    for name in ("paramiko", "paramiko.transport", "paramiko.transport.sftp", "invoke", "fabric"):
        logging.getLogger(name)


class ClusterNodes:
    """All nodes of an inventory; snapshots gathered in parallel on first use."""

    def __init__(self, inventory: inv.Inventory) -> None:
        self.inventory = inventory
        timeout = inventory.thresholds.command_timeout
        self.nodes = {
            s.name: NodeSession(s, make_transport(s, inventory.ssh), timeout, probes_for(inventory, s))
            for s in inventory.nodes
        }
        self._gathered = False
        self._lock = threading.Lock()
        self._prefetch: threading.Thread | None = None
        self.gather_seconds: float | None = None  # the wall time of the parallel snapshot, once taken

    def __getitem__(self, name: str) -> NodeSession:
        return self.nodes[name]

    def prefetch(self) -> None:
        """Start the snapshots now, in the background (while pytest collects): the first check then
        waits only for what is left of the round trip. Read-only, as the snapshot always is."""
        if self._prefetch is None and not self._gathered:
            _loggers_first()
            self._prefetch = threading.Thread(target=self._gather, name="gb10check-prefetch", daemon=True)
            self._prefetch.start()

    def wait_for_boot(self, budget: float, progress: Callable[[str], None]) -> list[str]:
        """--after-boot: every node reachable over SSH again, nodes in parallel, within `budget`;
        the names of those still down (their checks then fail with how long they were waited for)."""
        start = time.monotonic()
        up: list[str] = []

        def one(node: NodeSession) -> str | None:
            ok = node.transport.wait_reachable(budget)
            if ok:
                up.append(node.name)
                waiting = [n for n in self.nodes if n not in up]
                progress(
                    f"after boot: {node.name} answers SSH after {time.monotonic() - start:.0f} s"
                    + (f"; waiting for {', '.join(waiting)} (at most {budget:g} s)" if waiting else "")
                )
            return None if ok else node.name

        progress(f"after boot: waiting for {', '.join(self.nodes)} to answer SSH (at most {budget:g} s)")
        return [n for n in map_parallel(one, self.nodes.values(), name="gb10check-boot") if n]

    def gather(self) -> None:
        """Every node's snapshot, in parallel, once per session (later calls return at once)."""
        if self._prefetch is not None:
            self._prefetch.join()  # interruptible: SIGTERM reaches the waiting main thread
        self._gather()

    def _gather(self) -> None:
        with self._lock:
            if not self._gathered:
                start = time.monotonic()
                map_parallel(NodeSession.snapshot, self.nodes.values(), name="gb10check-snapshot")
                self.gather_seconds = time.monotonic() - start
                self._gathered = True

    def snapshot(self, name: str) -> Snapshot:
        self.gather()
        return self.nodes[name].snapshot()

    def plan(self, name: str) -> LaunchPlan:
        """The launch plan of the node's rank (gb10check/deployment/launch), from its snapshot."""
        from gb10check.reading.facts import plan  # facts reads the deployment; node.py only gathers

        runs_on = self.inventory.launch_of(name).runs_on  # a script another node runs: read there
        return plan(
            self.snapshot(name), self.inventory, self.nodes[name].spec.rank, self.snapshot(runs_on) if runs_on else None
        )

    def unreachable(self, names: Iterable[str]) -> list[str]:
        """Of these nodes, those that could not be asked (their snapshot failed): a finding that needs
        them (the carrier of a link whose other end they hold, a ping, a login) follows from them."""
        return [name for name in names if self.snapshot(name).error is not None]

    def close(self) -> None:
        for node in self.nodes.values():
            node.transport.close()
