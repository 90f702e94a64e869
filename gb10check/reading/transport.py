"""Running commands on a node: one bounded contract, an SSH (fabric) and a local backend.

Every command is bounded on both ends: the client stops waiting after `timeout` (+ a small
grace), and the command itself runs under `timeout -k` on the node so that a hung tool does
not linger there. And every command runs in the C locale (`LC_ALL=C LANGUAGE=`): a node installed
in Chinese or German has ufw, ping, coreutils and sudo print translated words and other decimal
marks, and the parsers read the tools' own English. A timeout is returned as a result
(timed_out=True), never raised; failing to reach the node at all raises NodeUnreachable.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import math
import shlex
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import tenacity

from gb10check.errors import NodeUnreachable, TransportError

__all__ = [
    "CLIENT_GRACE",
    "C_LOCALE",
    "C_LOCALE_ASSIGNMENTS",
    "DOCKER_C_LOCALE",
    "KILL_GRACE",
    "SYSTEM_KNOWN_HOSTS",
    "CommandResult",
    "LocalTransport",
    "SshTransport",
    "T",
    "Transport",
    "TransportStats",
    "bounded",
    "cut_short",
    "why_no_connection",
]

KILL_GRACE = 2.0  # seconds between TERM and KILL on the node
CLIENT_GRACE = 3.0  # how much longer the client waits than the node-side bound
SYSTEM_KNOWN_HOSTS = "/etc/ssh/ssh_known_hosts"
# paramiko's own threads log what the suite already reports as NodeUnreachable; without a handler
# Python prints those lines to stderr (after the run's last line, from an abandoned connect)
logging.getLogger("paramiko").addHandler(logging.NullHandler())
T = TypeVar("T")


def _within(seconds: float, work: Callable[[], T], on_abandon: Callable[[], object], what: str) -> T:
    """Run `work` in a daemon thread under a total deadline, the caller's thread waiting.

    paramiko bounds the TCP connect, the banner and the auth each on its own, and name
    resolution not at all: this bounds their sum. And invoke swallows KeyboardInterrupt while a
    remote command runs (it forwards it and keeps waiting): waiting here instead lets SIGTERM
    and Ctrl-C through at once. Work still running at the deadline is left to finish in its
    thread, then undone with `on_abandon`.
    """
    outcome: list[tuple[bool, object]] = []
    abandoned = threading.Event()

    def body() -> None:
        try:
            outcome.append((True, work()))
        except BaseException as exc:  # handed to the caller's thread
            outcome.append((False, exc))
        if abandoned.is_set():
            with contextlib.suppress(Exception):
                on_abandon()

    thread = threading.Thread(target=body, name=f"gb10check-{what}", daemon=True)
    thread.start()
    try:
        thread.join(seconds)
    finally:
        if not outcome:
            abandoned.set()
            if outcome:  # it finished between the join and the flag: undo it here
                with contextlib.suppress(Exception):
                    on_abandon()
    if not outcome:
        raise TimeoutError(f"no {what} within {seconds:g} s")
    ok, value = outcome[0]
    if not ok:
        assert isinstance(value, BaseException)
        raise value
    return value  # type: ignore[return-value]


@dataclass(frozen=True)
class CommandResult:
    command: str
    rc: int | None  # None when the client gave up waiting
    stdout: str
    stderr: str
    duration: float
    timed_out: bool
    # (stream, bytes it printed) for each stream the node cut to its head and tail (gb10check/reading/snapshot.py)
    cut: tuple[tuple[str, int], ...] = ()

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out


def cut_short(rc: int | None) -> bool:
    """coreutils timeout exits 124 when it sent TERM, 137 when it had to KILL."""
    return rc in (124, 137)


# The C locale for every command, whatever the node's LANG / LC_ALL (sshd's SetEnv, pam_env's
# /etc/default/locale): LC_ALL=C overrides them all; LANGUAGE is emptied too, since GNU gettext ignores it
# under C but Python's gettext (ufw's) reads it first and translates with LC_ALL=C set.
C_LOCALE = (("LC_ALL", "C"), ("LANGUAGE", ""))
C_LOCALE_ASSIGNMENTS = " ".join(f"{name}={value}" for name, value in C_LOCALE)  # LC_ALL=C LANGUAGE=
DOCKER_C_LOCALE = " ".join(f"--env {name}={value}" for name, value in C_LOCALE)  # for docker run / exec


def bounded(command: str, timeout: float) -> str:
    """The node-side bound (coreutils timeout sends TERM, then KILL after a grace), in the C locale."""
    return f"{C_LOCALE_ASSIGNMENTS} timeout -k {KILL_GRACE:g} {timeout:g} sh -c {shlex.quote(command)}"


class Transport(Protocol):
    name: str

    def run(self, command: str, timeout: float) -> CommandResult: ...

    def wait_reachable(self, budget: float) -> bool: ...

    def close(self) -> None: ...


@dataclass
class TransportStats:
    connections: int = 0  # made
    commands: int = 0
    connect_attempts: int = 0  # tried, made or not: an unreachable node costs one per session
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, *, connection: bool = False) -> None:
        with self.lock:
            self.connections += int(connection)
            self.commands += int(not connection)

    def attempt(self) -> None:
        with self.lock:
            self.connect_attempts += 1


class LocalTransport:
    """The node the suite runs on."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.stats = TransportStats()

    def wait_reachable(self, budget: float) -> bool:
        return True  # the suite runs here: this node is up

    def run(self, command: str, timeout: float) -> CommandResult:
        self.stats.count()
        start = time.monotonic()
        try:
            proc = subprocess.run(
                ["sh", "-c", bounded(command, timeout)],
                capture_output=True,
                text=True,
                errors="replace",
                stdin=subprocess.DEVNULL,
                timeout=timeout + KILL_GRACE + CLIENT_GRACE,
                start_new_session=True,
            )
        except subprocess.TimeoutExpired as exc:
            return CommandResult(command, None, _text(exc.stdout), _text(exc.stderr), time.monotonic() - start, True)
        timed_out = cut_short(proc.returncode)
        return CommandResult(command, proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start, timed_out)

    def close(self) -> None:
        pass


def _text(value: bytes | str | None) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else value.decode(errors="replace")


class SshTransport:
    """A node reached over SSH through fabric: keys or agent only, never a password prompt.

    The connection opens lazily on the first command and is reused for the session.
    """

    def __init__(
        self,
        name: str,
        host: str,
        *,
        user: str | None = None,
        port: int | None = None,
        key: str | None = None,
        connect_timeout: float = 5.0,
        host_key_policy: str = "known_hosts",
        known_hosts: str | None = None,
        use_ssh_config: bool = True,
        system_known_hosts: str = SYSTEM_KNOWN_HOSTS,
    ) -> None:
        self.name = name
        self.system_known_hosts = system_known_hosts
        self.host = host
        self.user = user
        self.port = port
        self.key = key
        self.connect_timeout = connect_timeout
        self.host_key_policy = host_key_policy
        self.known_hosts = known_hosts
        self.use_ssh_config = use_ssh_config
        self.stats = TransportStats()
        self._conn: Any = None
        self._unreachable: NodeUnreachable | None = None  # the first failed connect: the answer for the session
        self._lock = threading.Lock()

    @property
    def where(self) -> str:
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port else ""
        return f"{user}{self.host}{port}"

    def _lost(self, message: str, hint_ids: tuple[str, ...] = ()) -> NodeUnreachable:
        """This node cannot be reached: its hint's commands are for it, whichever check met it (a pair's)."""
        return NodeUnreachable(message, hint_ids=hint_ids, context={"node": self.name})

    def _connect(self) -> Any:
        import paramiko
        from fabric import Config, Connection

        self.stats.attempt()
        config = Config(lazy=not self.use_ssh_config, overrides={"runners": {"remote": _remote_runner()}})
        connect_kwargs: dict[str, Any] = {
            "banner_timeout": self.connect_timeout,
            "auth_timeout": self.connect_timeout,
            "channel_timeout": self.connect_timeout,
            "allow_agent": True,
        }
        if self.key:
            connect_kwargs["key_filename"] = [str(Path(self.key).expanduser())]
            connect_kwargs["look_for_keys"] = False
        conn = Connection(
            self.host,
            user=self.user,
            port=self.port,
            config=config,
            connect_timeout=max(1, math.ceil(self.connect_timeout)),  # fabric takes whole seconds
            connect_kwargs=connect_kwargs,
        )
        client = conn.client
        for path in self._known_hosts_files():
            client.load_system_host_keys(str(path))  # never written back; accept-new appends to the user file
        if self.host_key_policy == "accept-new":
            client.set_missing_host_key_policy(_AcceptNew(self.known_hosts))
        else:
            client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            _within(self.connect_timeout, conn.open, conn.close, "SSH session (name resolution, TCP, banner, login)")
        except paramiko.BadHostKeyException as exc:
            raise self._lost(
                f"{self.name} ({self.where}): host key does not match known_hosts (possible impostor, or the node was "
                f"reinstalled): {exc}",
                hint_ids=("host-key-changed",),
            ) from exc
        except paramiko.SSHException as exc:
            text = str(exc)
            if "not found in known_hosts" in text:
                raise self._lost(
                    f"{self.name} ({self.where}): SSH failed: {text} (compare its fingerprint out of band, then log in "
                    'once by hand, or set [ssh] host_key_policy = "accept-new")',
                    hint_ids=("host-key-unknown",),
                ) from exc
            if "banner" in text:  # paramiko's own banner_timeout fired before the suite's bound on the whole
                raise self._lost(
                    f"{self.name} ({self.where}): cannot connect within {self.connect_timeout:g} s: the port accepts, "
                    f"no SSH banner came ({text})"
                ) from exc
            raise self._lost(f"{self.name} ({self.where}): SSH failed: {text}") from exc
        except (TimeoutError, OSError, EOFError) as exc:
            raise self._lost(f"{self.name} ({self.where}): {why_no_connection(exc, self.connect_timeout)}") from exc
        self.stats.count(connection=True)
        return conn

    def _known_hosts_files(self) -> list[Path]:
        """OpenSSH's order: the user's file (or the inventory's), then the system-wide one."""
        user = Path(self.known_hosts or "~/.ssh/known_hosts").expanduser()
        return [p for p in (user, Path(self.system_known_hosts)) if p.is_file()]

    def run(self, command: str, timeout: float) -> CommandResult:
        from invoke.exceptions import CommandTimedOut

        with self._lock:
            if self._unreachable is not None:  # one connect timeout per node per session, not one per command
                raise copy.copy(self._unreachable) from None
            if self._conn is None:
                try:
                    self._conn = self._connect()
                except NodeUnreachable as exc:
                    self._unreachable = exc
                    raise
            conn = self._conn
        self.stats.count()
        start = time.monotonic()
        client_bound = timeout + KILL_GRACE + CLIENT_GRACE

        def execute() -> Any:
            return conn.run(
                bounded(command, timeout), hide=True, warn=True, in_stream=False, pty=False, timeout=client_bound
            )

        try:
            res = _within(client_bound + CLIENT_GRACE, execute, self.close, "command result")
        except TimeoutError:  # invoke itself did not give up in time: the connection is stuck
            self.close()
            return CommandResult(command, None, "", "", time.monotonic() - start, True)
        except CommandTimedOut as exc:
            r = exc.result
            return CommandResult(command, None, r.stdout, r.stderr, time.monotonic() - start, True)
        except (OSError, EOFError) as exc:
            self.close()
            raise self._lost(f"{self.name} ({self.where}): connection lost: {exc}") from exc
        except Exception as exc:  # paramiko raises bare SSHException subclasses mid-session
            self.close()
            raise TransportError(f"{self.name} ({self.where}): command failed to run: {exc}") from exc
        timed_out = cut_short(res.exited)
        return CommandResult(command, res.exited, res.stdout, res.stderr, time.monotonic() - start, timed_out)

    def wait_reachable(self, budget: float) -> bool:
        """After a reboot: connect again and again (backing off, at most 5 s apart) until the node
        answers or `budget` seconds are spent; a node still down then fails every check with how long
        it was waited for. A host key that does not match is not a node still booting: at once."""
        start = time.monotonic()
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception(_still_booting),
            stop=tenacity.stop_after_delay(budget),
            wait=tenacity.wait_exponential(multiplier=0.25, max=5.0),
            reraise=True,
            sleep=time.sleep,
        )
        with self._lock:
            if self._conn is not None:
                return True
            try:
                self._conn = retrying(self._connect)
                return True
            except NodeUnreachable as exc:
                waited = time.monotonic() - start
                last = str(exc).removeprefix(f"{self.name} ({self.where}): ")
                self._unreachable = self._lost(
                    f"{self.name} ({self.where}): still unreachable after waiting {waited:.0f} s for it to boot "
                    f"(ssh.boot_timeout {budget:g} s); the last try: {last}",
                    hint_ids=exc.hint_ids,
                )
                return False

    def close(self) -> None:
        # Never wait for a connect in progress (an interrupted run exits at once): that thread,
        # holding the lock, is a daemon and goes with the process.
        if not self._lock.acquire(timeout=0.2):
            return
        try:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
        finally:
            self._lock.release()


def _remote_runner() -> type:
    """fabric's runner, reading in 64 KiB chunks and without watchers: invoke joins all the output read so far
    on every 1000-byte chunk to show it to watchers (the suite has none), so reading grew with the square of
    the output: a 33 MB snapshot (a flooding tool's head and tail) did not arrive within its bound."""
    from fabric.runners import Remote

    class _Remote(Remote):  # type: ignore[misc]
        read_chunk_size = 64 * 1024

        def respond(self, buffer_: list[str]) -> None:
            return None

    return _Remote


def why_no_connection(exc: BaseException, connect_timeout: float) -> str:
    """What stopped the SSH connect, in the words of what happened: a name that does not resolve or a port
    that refuses is no timeout (and no amount of waiting fixes it)."""
    import errno
    import socket

    from paramiko.ssh_exception import NoValidConnectionsError

    if isinstance(exc, socket.gaierror):
        return (
            f"the name does not resolve ({exc.strerror or exc}), which no wait fixes: check how the host is spelled "
            "(ssh_host in the inventory, a name given to gb10check init) and that DNS or /etc/hosts knows it"
        )
    if isinstance(exc, NoValidConnectionsError) and exc.errors:
        codes = {getattr(e, "errno", None) for e in exc.errors.values()}
        if codes == {errno.ECONNREFUSED}:
            return "the port refuses the connection: nothing accepts SSH there (is sshd running, is the port right?)"
        if codes <= {errno.EHOSTUNREACH, errno.ENETUNREACH}:
            return f"no route to the host ({exc})"
    if isinstance(exc, ConnectionRefusedError):
        return "the port refuses the connection: nothing accepts SSH there (is sshd running, is the port right?)"
    if isinstance(exc, OSError) and exc.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
        return f"no route to the host ({exc.strerror})"
    return f"cannot connect within {connect_timeout:g} s: {str(exc) or type(exc).__name__}"


def _still_booting(exc: BaseException) -> bool:
    """A node that does not answer yet (not one that answers with the wrong host key)."""
    return isinstance(exc, NodeUnreachable) and not any(h.startswith("host-key") for h in exc.hint_ids)


class _AcceptNew:
    """OpenSSH's StrictHostKeyChecking=accept-new: record unknown keys, still reject changed ones."""

    def __init__(self, known_hosts: str | None) -> None:
        self.path = Path(known_hosts or "~/.ssh/known_hosts").expanduser()

    def missing_host_key(self, client: Any, hostname: str, key: Any) -> None:
        client.get_host_keys().add(hostname, key.get_name(), key)
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with self.path.open("a", encoding="ascii") as fh:
            fh.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
