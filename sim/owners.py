"""Who owns a simulated cluster, and cleaning the ones whose owner is gone.

Everything a cluster makes is named after its owner's pid (the namespaces `gb10sim-<pid>-r<rank>`, the
folder RUN_ROOT/<pid>), the owner's start time recorded beside, so a reused pid is not taken for the owner:
a later run removes what a crashed one left (`gb10check sim clean`) and leaves alone, naming it, what a live
one uses. Also the one bounded way the sim runs a host command (`sh`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from gb10check.errors import SimError, clip
from gb10check.safe_text.redact import redact

__all__ = [
    "NS_PREFIX",
    "OWNER_FILE",
    "RUN_ROOT",
    "Cleaned",
    "Owner",
    "clean_stale",
    "kill_netns_processes",
    "namespaces",
    "owner_of",
    "pid_alive",
    "record_owner",
    "remove_owner",
    "sh",
]

RUN_ROOT = Path("/run/gb10sim")
OWNER_FILE = "owner"  # in RUN_ROOT/<owner>: which process made the cluster (sim clean leaves it while it runs)
NS_PREFIX = "gb10sim-"


def sh(*args: str, check: bool = True, timeout: float = 15.0) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise SimError(f"`{' '.join(args)}` hung for {timeout:g} s") from exc
    if check and proc.returncode != 0:
        raise SimError(f"`{' '.join(args)}` failed (rc={proc.returncode}): {proc.stderr.strip()}")
    return proc


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields from the state on (field 3), None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def pid_alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (a zombie is dead, only unreaped)."""
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def _start_time(pid: int) -> str | None:
    """When the process started (clock ticks since boot, stat's field 22): with its pid, which process it is
    (a pid is reused, the pair is not)."""
    fields = _stat(pid)
    return fields[19] if fields is not None and fields[0] != "Z" and len(fields) > 19 else None


@dataclass(frozen=True)
class Owner:
    """The process a simulated cluster belongs to (the run that made it), as its name in the namespaces
    and under RUN_ROOT says (its pid), and whether it still runs."""

    name: str
    live: bool
    command: str = ""  # its command line, while it runs

    def describe(self) -> str:
        return f"{self.name}: {self.command or '(no command line)'}"


def record_owner(directory: Path, pid: int) -> None:
    """Who made the cluster: `<pid> <start time>` (a later clean tells a reused pid from the owner)."""
    (directory / OWNER_FILE).write_text(f"{pid} {_start_time(pid)}\n")


def owner_of(name: str) -> Owner:
    """Whether the cluster named after `name` is still in use: its owner's pid runs, and is the process that
    made it (the start time recorded in RUN_ROOT/<name>/owner; a cluster made before owners were recorded,
    or still being made, has none: its live pid is taken for the owner)."""
    started = _start_time(int(name)) if name.isdigit() else None
    if started is None:
        return Owner(name, False)
    try:
        recorded = (RUN_ROOT / name / OWNER_FILE).read_text().split()
    except (OSError, UnicodeDecodeError):
        recorded = []
    if recorded and recorded[-1] != started:  # the pid now belongs to another process
        return Owner(name, False)
    try:
        command = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        command = ""
    return Owner(name, True, clip(redact("".join(c if c.isprintable() else "?" for c in command)), 160))


def kill_netns_processes(ns: str) -> None:
    """SIGKILL whatever still runs in the namespace (its sshd's session children, after the
    main processes had their SIGTERM) and wait, bounded, until they are gone."""
    pids = [int(p) for p in sh("ip", "netns", "pids", ns, check=False).stdout.split()]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline and any(pid_alive(p) for p in pids):
        time.sleep(0.02)


def remove_owner(owner: str) -> None:
    for ns in namespaces():
        if ns.startswith(f"{NS_PREFIX}{owner}-"):
            kill_netns_processes(ns)
            sh("ip", "netns", "del", ns, check=False)
    shutil.rmtree(RUN_ROOT / owner, ignore_errors=True)


def namespaces() -> list[str]:
    out = sh("ip", "netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


@dataclass(frozen=True)
class Cleaned:
    removed: list[str]  # owners (pids) whose clusters were removed
    in_use: list[Owner]  # clusters left alone: their owner runs


def clean_stale() -> Cleaned:
    """Remove the simulated clusters whose owner is gone (a crashed or killed run's); leave, and name, the
    ones still in use: another run's checks are using them."""
    owners = {ns[len(NS_PREFIX) :].split("-")[0] for ns in namespaces() if ns.startswith(NS_PREFIX)}
    if RUN_ROOT.is_dir():
        owners |= {p.name for p in RUN_ROOT.iterdir()}
    removed, in_use = [], []
    for owner in sorted(owners):
        state = owner_of(owner)
        if state.live:
            in_use.append(state)
        else:
            remove_owner(owner)
            removed.append(owner)
    return Cleaned(removed, in_use)
