"""`gb10check sim clean`: it removes the simulated clusters whose owner is gone, and only those.

Other runs' clusters (this machine's other self-tests) are live while this runs: the test makes its own
clusters (a namespace and a run folder each, as SimCluster names them) owned by processes it starts,
and checks that every cluster that was in use before the clean, and whose owner still lives, is there
after it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sim.owners import NS_PREFIX, RUN_ROOT

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the simulated cluster needs root")
GB10CHECK = str(Path(sys.executable).with_name("gb10check"))


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=15).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def _start_time(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _fake_cluster(owner: int, started: str, procs: list[subprocess.Popen[bytes]]) -> str:
    """A cluster as SimCluster leaves it: RUN_ROOT/<owner> with the owner's record, a namespace with a
    process in it (what sshd is in a real one)."""
    ns = f"{NS_PREFIX}{owner}-r0"
    subprocess.run(["ip", "netns", "add", ns], check=True, timeout=15)
    (RUN_ROOT / str(owner)).mkdir(parents=True)
    (RUN_ROOT / str(owner) / "owner").write_text(f"{owner} {started}\n")
    procs.append(subprocess.Popen(["ip", "netns", "exec", ns, "sleep", "300"], start_new_session=True))
    return ns


def _clean(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([GB10CHECK, "sim", "clean", *args], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)  # fmt: skip


def test_clean_removes_clusters_whose_owner_is_gone_and_names_those_in_use():
    before = {ns for ns in _namespaces() if ns.startswith(NS_PREFIX)}
    in_use = {ns for ns in before if _alive(int(ns[len(NS_PREFIX) :].split("-")[0]))}  # other runs', live
    procs: list[subprocess.Popen[bytes]] = []
    live = subprocess.Popen(["sleep", "300"], start_new_session=True)  # owns a cluster in use
    reused = subprocess.Popen(["sleep", "300"], start_new_session=True)  # has the pid of a gone owner
    dead = subprocess.Popen(["true"])
    dead.wait(timeout=15)
    assert not _alive(dead.pid)
    try:
        live_ns = _fake_cluster(live.pid, _start_time(live.pid), procs)
        reused_ns = _fake_cluster(reused.pid, str(int(_start_time(reused.pid)) - 1), procs)  # another start
        dead_ns = _fake_cluster(dead.pid, "1", procs)
        live_inside, reused_inside, dead_inside = procs

        proc = _clean()
        assert proc.returncode == 0, proc.stdout + proc.stderr
        out = proc.stdout
        removed = re.search(r"removed \d+ simulated cluster\(s\) whose owner is gone: (.*)", out)
        assert removed, out
        assert {str(dead.pid), str(reused.pid)} <= set(removed.group(1).split(", "))
        assert re.search(rf"left \d+ in use[^\n]*\n(.*\n)*  {live.pid}: sleep 300\n", out), out
        after = _namespaces()
        assert live_ns in after and dead_ns not in after and reused_ns not in after
        assert (RUN_ROOT / str(live.pid)).is_dir() and not (RUN_ROOT / str(dead.pid)).exists()
        assert not (RUN_ROOT / str(reused.pid)).exists()
        assert live_inside.poll() is None  # nothing of a cluster in use was killed
        assert dead_inside.wait(timeout=10) == -9 and reused_inside.wait(timeout=10) == -9
        assert live.poll() is None and reused.poll() is None  # the owners themselves: never touched
        for ns in in_use:  # other runs' clusters: none removed by the clean while its owner lives
            owner = ns[len(NS_PREFIX) :].split("-")[0]  # (a run that ends takes its own cluster down)
            gone = owner in removed.group(1).split(", ")
            assert not gone or not _alive(int(owner)), f"{ns} removed while its owner {owner} runs"

        # --all removed live clusters: it is refused, saying what to do, and removes nothing
        refused = _clean("--all")
        assert refused.returncode == 4, refused.stdout + refused.stderr
        assert "sim: clean --all is no longer taken" in refused.stderr
        assert "kill PID" in refused.stderr
        assert live_ns in _namespaces() and live_inside.poll() is None
    finally:
        for p in (live, reused, *procs):
            if p.poll() is None:
                p.kill()
            p.wait(timeout=10)
        for owner in (live.pid, reused.pid, dead.pid):  # only what this test made
            subprocess.run(["ip", "netns", "del", f"{NS_PREFIX}{owner}-r0"], capture_output=True, timeout=15)
            if (RUN_ROOT / str(owner)).is_dir():
                for f in (RUN_ROOT / str(owner)).iterdir():
                    f.unlink()
                (RUN_ROOT / str(owner)).rmdir()
