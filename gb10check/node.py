"""A node of the inventory: its transport and its fact snapshot (gathered once per session)."""

from __future__ import annotations

import copy
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from gb10check import inventory as inv
from gb10check import redact
from gb10check.errors import (
    CommandTimeout,
    GB10Error,
    MissingFile,
    ParseError,
    PrivilegeRequired,
    ToolMissing,
    TransportError,
    clip,
)
from gb10check.parallel import map_parallel
from gb10check.probes import NO_SUDO, probes_for
from gb10check.snapshot import Probe, build_script, new_boundary, script_timeout, split_output
from gb10check.transport import CommandResult, LocalTransport, SshTransport, Transport

T = TypeVar("T")
# dash: "sh: 1: docker: not found"; bash: "bash: line 1: docker: command not found"
_NOT_FOUND = re.compile(r"(?P<tool>[\w./+-]+): (?:command )?not found")
# cat: /home/x/.env: No such file or directory; find: '/home/x': No such file or directory
_NO_SUCH_FILE = re.compile(r"(?:^|\s)'?(?P<path>/[^':\n]+)'?: No such file or directory")
# sudo -n without a NOPASSWD rule, ufw run as a user, or the inventory forbidding sudo
_REFUSED = re.compile(
    rf"^sudo: (a password is required|a terminal is required)|You need to be root to run this script"
    rf"|{re.escape(NO_SUDO)}",
    re.MULTILINE,
)


@dataclass(frozen=True)
class Snapshot:
    node: str
    results: dict[str, CommandResult]
    error: GB10Error | None = None  # set when the node could not be asked at all

    def raw(self, probe: str) -> CommandResult:
        """The probe's result; raises the node's transport error when there is no evidence."""
        if self.error is not None:
            # a fresh copy per check: re-raising one stored exception grows its traceback with every check
            raise copy.copy(self.error) from None
        return self.results[probe]

    def ran(self, probe: str) -> CommandResult:
        """The probe's result, raising when its tool is not there (no evidence either way).
        A timeout is returned: some checks judge it themselves."""
        res = self.raw(probe)
        if res.rc == 127:  # sh: the command was not found
            named = _NOT_FOUND.search(res.stderr)
            tool = f"`{named['tool']}` is" if named else "a tool it runs is"
            raise ToolMissing(
                f"{self.node}: {tool} not installed or not on PATH (needed for `{clip(res.command, 120)}`): "
                f"{clip(res.stderr.strip(), 200)}"
            )
        return res

    def parsed(self, probe: str, parser: Callable[[str], T], *, accept_rc: Iterable[int] = (0,)) -> T:
        """Parse a probe's stdout. Timeouts, missing tools and unexpected exits raise, never pass."""
        res = self.ran(probe)
        if res.timed_out:
            raise CommandTimeout(
                f"{self.node}: `{res.command}` timed out after {res.duration:.1f} s",
                context={"command": res.command},
            )
        if res.rc != 0 and _REFUSED.search(res.stderr + res.stdout):
            raise PrivilegeRequired(
                f"{self.node}: `{res.command}` needs root and was refused: {clip(res.stderr.strip(), 200)!r}; "
                "run the suite as root there, or allow `sudo -n` (sudo = true and a NOPASSWD rule)"
            )
        if res.rc != 0 and not res.stdout.strip() and "No such file or directory" in res.stderr:
            named = _NO_SUCH_FILE.search(res.stderr)
            raise MissingFile(
                f"{self.node}: {clip(res.stderr.strip())}", context={"path": named["path"]} if named else None
            )
        text = res.stdout if res.stdout.strip() else res.stdout + res.stderr
        try:
            return parser(text)
        except ParseError as exc:
            if res.rc not in tuple(accept_rc):
                detail = f"exit status {res.rc}, stderr {clip(res.stderr.strip(), 200)!r}"
                raise ParseError(exc.what, detail, text, hint_ids=exc.hint_ids) from exc
            raise


class Node:
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
                self._snapshot = self._gather(self.probes)
            return self._snapshot

    def taken(self) -> Snapshot | None:
        """The snapshot if it was taken already (never starts one: for reports and hints)."""
        return self._snapshot

    def _gather(self, probes: tuple[Probe, ...]) -> Snapshot:
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


class ClusterNodes:
    """All nodes of an inventory; snapshots gathered in parallel on first use."""

    def __init__(self, inventory: inv.Inventory) -> None:
        self.inventory = inventory
        timeout = inventory.thresholds.command_timeout
        self.nodes = {
            s.name: Node(s, make_transport(s, inventory.ssh), timeout, probes_for(inventory, s))
            for s in inventory.nodes
        }
        self._gathered = False
        self._lock = threading.Lock()

    def __getitem__(self, name: str) -> Node:
        return self.nodes[name]

    def gather(self) -> None:
        """Every node's snapshot, in parallel, once per session (later calls return at once)."""
        with self._lock:
            if not self._gathered:
                map_parallel(Node.snapshot, self.nodes.values(), name="gb10check-snapshot")
                self._gathered = True

    def snapshot(self, name: str) -> Snapshot:
        self.gather()
        return self.nodes[name].snapshot()

    def close(self) -> None:
        for node in self.nodes.values():
            node.transport.close()
