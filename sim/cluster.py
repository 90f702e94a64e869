"""Bringing the simulated cluster up and down.

Each node is a network namespace `gb10sim-<owner pid>-r<rank>` running a real OpenSSH server
inside its own mount and UTS namespaces: own hostname, a tmpfs /sys with hand-made infiniband
and nvidia-module entries (the namespace's real /sys/class/net and /sys/devices bound back in,
so carrier and operstate are live), its own /proc/meminfo and /proc/driver/nvidia, and stub
tools over /usr/local/bin. Links are veth pairs named and addressed like the QSFP netdevs; a
LAN veth (enP7s7) carries SSH, as the LAN does in production. Nothing is routed out of the
namespaces. Everything made is named after the owner's pid (its start time recorded beside, so a
reused pid is not taken for the owner), so a later run can clean what a crashed one left (`python -m
sim clean`), and leaves alone what a live one uses.
"""

from __future__ import annotations

import atexit
import contextlib
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from gb10check.errors import SimError, clip
from gb10check.redact import redact
from sim import netns, node_files
from sim.node import PROJECT_ROOT, SSHD, SimNode
from sim.node_files import write_node_files
from sim.scenario import Scenario, merge

EXAMPLE_INVENTORY = PROJECT_ROOT / "fixtures" / "cluster.example.toml"
RUN_ROOT = Path("/run/gb10sim")
OWNER_FILE = "owner"  # in RUN_ROOT/<owner>: which process made the cluster (sim clean leaves it while it runs)
NS_PREFIX = "gb10sim-"
LAN_NETDEV = "enP7s7"
REQUIRED_TOOLS = ("ip", "unshare", "ssh-keygen", "timeout", "mount")
# MemAvailable a started node keeps (the field report: ~12 GiB on rank 0, ~15 GiB on rank 1), kB
SERVING_AVAILABLE_KB = (12 * 1024 * 1024, 15 * 1024 * 1024)


def _loading_index(lines: list[tuple[float, str]]) -> int:
    """Where a start that never finishes loading stops: just after `Starting to load model`."""
    return next((i + 1 for i, (_, text) in enumerate(lines) if "Starting to load model" in text), len(lines))


def _sh(*args: str, check: bool = True, timeout: float = 15.0) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise SimError(f"`{' '.join(args)}` hung for {timeout:g} s") from exc
    if check and proc.returncode != 0:
        raise SimError(f"`{' '.join(args)}` failed (rc={proc.returncode}): {proc.stderr.strip()}")
    return proc


def _last_arg(proc: subprocess.Popen[bytes]) -> str:
    args = proc.args
    return str(args[-1]) if isinstance(args, list | tuple) else str(args)


def why_not_available() -> str | None:
    """None when this machine can run the sim, else the reason (for skips and --sim errors)."""
    if os.geteuid() != 0:
        return (
            "the simulated cluster needs root (network and mount namespaces, sshd); run as root or use a real cluster"
        )
    missing = [t for t in REQUIRED_TOOLS if shutil.which(t) is None]
    if not os.path.exists(SSHD):
        missing.append(SSHD + " (openssh-server)")
    if missing:
        return f"the simulated cluster needs {', '.join(missing)}: apt-get install openssh-server iproute2 util-linux"
    return None


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields from the state on (field 3), None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _pid_alive(pid: int) -> bool:
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


def _record_owner(directory: Path, pid: int) -> None:
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


def _kill_netns_processes(ns: str) -> None:
    """SIGKILL whatever still runs in the namespace (its sshd's session children, after the
    main processes had their SIGTERM) and wait, bounded, until they are gone."""
    pids = [int(p) for p in _sh("ip", "netns", "pids", ns, check=False).stdout.split()]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline and any(_pid_alive(p) for p in pids):
        time.sleep(0.02)


def _remove_owner(owner: str) -> None:
    for ns in _namespaces():
        if ns.startswith(f"{NS_PREFIX}{owner}-"):
            _kill_netns_processes(ns)
            _sh("ip", "netns", "del", ns, check=False)
    shutil.rmtree(RUN_ROOT / owner, ignore_errors=True)


def _namespaces() -> list[str]:
    out = _sh("ip", "netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


@dataclass(frozen=True)
class Cleaned:
    removed: list[str]  # owners (pids) whose clusters were removed
    in_use: list[Owner]  # clusters left alone: their owner runs


def clean_stale() -> Cleaned:
    """Remove the simulated clusters whose owner is gone (a crashed or killed run's); leave, and name, the
    ones still in use: another run's checks are using them."""
    owners = {ns[len(NS_PREFIX) :].split("-")[0] for ns in _namespaces() if ns.startswith(NS_PREFIX)}
    if RUN_ROOT.is_dir():
        owners |= {p.name for p in RUN_ROOT.iterdir()}
    removed, in_use = [], []
    for owner in sorted(owners):
        state = owner_of(owner)
        if state.live:
            in_use.append(state)
        else:
            _remove_owner(owner)
            removed.append(owner)
    return Cleaned(removed, in_use)


@dataclass
class SimCluster:
    scenario: Scenario
    owner: str = field(default_factory=lambda: str(os.getpid()))
    nodes: list[SimNode] = field(default_factory=list)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _up: bool = False

    @property
    def dir(self) -> Path:
        return RUN_ROOT / self.owner

    @property
    def inventory_path(self) -> Path:
        return self.dir / "cluster.toml"

    @property
    def api_namespace(self) -> str:
        return self.nodes[0].ns

    @property
    def inventory_data(self) -> dict[str, Any]:
        """The example inventory (the seed's expectations) with the scenario's `inventory` overrides."""
        data = tomllib.loads(EXAMPLE_INVENTORY.read_text(encoding="utf-8"))
        return merge(data, self.scenario.data.get("inventory", {}))

    # -- bring-up ---------------------------------------------------------------------------
    def up(self, ready_timeout: float = 10.0) -> Path:
        reason = why_not_available()
        if reason:
            raise SimError(reason)
        clean_stale()
        atexit.register(self.down)
        self._up = True
        try:
            self.dir.mkdir(parents=True)
            self.dir.chmod(0o711)  # an unprivileged login must reach its node's stubs; no listing
            if self.owner.isdigit():
                _record_owner(self.dir, int(self.owner))
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation dir
            _sh(
                "ssh-keygen",
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-C",
                "gb10sim-client",
                "-f",
                str(self.dir / "client_key"),
            )
            (self.dir / "authorized_keys").write_text((self.dir / "client_key.pub").read_text())
            for rank, (name, spec) in enumerate(self.scenario.nodes.items()):
                if spec.rank != rank:
                    raise SimError(f"{self.scenario.source}: node ranks must be 0..n-1 (node {name})")
                node = SimNode(name, rank, f"{NS_PREFIX}{self.owner}-r{rank}", self.dir / name, spec)
                self.nodes.append(node)
                _sh("ip", "netns", "add", node.ns)
                _sh("ip", "-n", node.ns, "link", "set", "lo", "up")
                write_node_files(node, self.scenario, self.inventory_data, self.dir)
            self._wire()
            for node in self.nodes:
                if not node.spec.powered_off:
                    self._start_sshd(node)  # with sshd = false the node boots, but sshd exits: port closed
            self._start_api()
            self._write_known_hosts()
            self._write_inventory()
            self._wait_ready(ready_timeout)
        except BaseException:
            self.down()
            raise
        return self.inventory_path

    def _wire(self) -> None:
        by_name = {n.name: n for n in self.nodes}
        a, b = self.nodes[0], self.nodes[1] if len(self.nodes) > 1 else None
        pairs: list[tuple[str, dict[str, str]]] = []
        if b is not None:
            pairs.append((LAN_NETDEV, {a.name: a.lan_address, b.name: b.lan_address}))
        pairs += [(netdev, link["addresses"]) for netdev, link in self.scenario.links.items()]
        for index, (netdev, addresses) in enumerate(pairs):
            names = list(addresses)
            if len(names) != 2:
                raise SimError(f"{self.scenario.source}: links.{netdev} must join exactly two nodes (a cable)")
            tmp = [f"g{self.owner}l{index}{side}" for side in "ab"]
            _sh("ip", "link", "add", tmp[0], "type", "veth", "peer", "name", tmp[1])
            for tmp_name, node_name in zip(tmp, names, strict=True):
                node = by_name[node_name]
                _sh("ip", "link", "set", tmp_name, "netns", node.ns)
                _sh("ip", "-n", node.ns, "link", "set", tmp_name, "name", netdev)
                address = node.spec.addresses.get(netdev, addresses[node_name])  # renumbered, or the link's
                rdma = node.spec.rdma.get(netdev)
                for extra in rdma.extra_addresses if rdma else []:  # added first: the kernel's GIDs shift
                    _sh("ip", "-n", node.ns, "addr", "add", extra, "dev", netdev, *(["nodad"] if ":" in extra else []))
                _sh("ip", "-n", node.ns, "addr", "add", address, "dev", netdev)
                if netdev in node.spec.mtu:
                    _sh("ip", "-n", node.ns, "link", "set", netdev, "mtu", str(node.spec.mtu[netdev]))
                if netdev not in node.spec.down and not node.spec.powered_off:
                    _sh("ip", "-n", node.ns, "link", "set", netdev, "up")
        for node in self.nodes:
            for index, netdev in enumerate(self.scenario.data.get("unused_ports", {}).values()):
                # a port with no cable: a veth whose peer stays in the same namespace, both down
                _sh(
                    "ip",
                    "-n",
                    node.ns,
                    "link",
                    "add",
                    netdev,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    f"gb10nc{index}",
                )
            for route in node.spec.routes:  # a scenario's extra route (its gateway is a sim node, never outside)
                _sh("ip", "-n", node.ns, "route", "add", *route.split())

    def _start_sshd(self, node: SimNode) -> None:
        log = (node.dir / "sshd.log").open("wb")
        node.process = subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                node.ns,
                "unshare",
                "--mount",
                "--uts",
                "--propagation",
                "private",
                "sh",
                str(node.dir / "boot.sh"),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.processes.append(node.process)

    def _serves_api(self) -> bool:
        # while loading weights vLLM has bound its port but accepts nothing: clients are refused
        service = self.scenario.model.service
        return (
            service.served_model_name is not None
            and service.state == "ready"
            and self.scenario.model.deployment.running
        )

    def _spawn(self, module: str, config: dict[str, Any], name: str, namespace: str | None) -> None:
        cfg = self.dir / f"{name}.json"
        cfg.write_text(json.dumps(config))
        log = (self.dir / f"{name}.log").open("wb")
        prefix = ["ip", "netns", "exec", namespace] if namespace else []
        self.processes.append(
            subprocess.Popen(
                [*prefix, sys.executable, "-m", module, "--config", str(cfg)],
                cwd=PROJECT_ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )

    def ranks_gone(self) -> list[str]:
        """The other ranks whose vLLM is not running: powered off, Docker down, or its container not
        running. Rank 0's engine cannot generate without them (sim/fake_vllm.py: `ranks_gone`)."""
        gone = []
        for node in self.nodes[1:]:
            docker = node.spec.docker
            container = docker.container.status if docker.container is not None else "running"
            if node.spec.powered_off or docker.daemon == "down" or container != "running":
                gone.append(node.name)
        return gone

    def _start_api(self) -> None:
        service = self.scenario.model.service
        if service.startup_seconds and self.scenario.model.deployment.running:
            self._start_startup()
        if self._serves_api():
            config = service.model_dump() | {"ranks_gone": self.ranks_gone()}
            if service.startup_seconds and self.scenario.model.deployment.running:
                config["startup_done"] = str(self.dir / "startup.done")  # listens once the start is over
            self._spawn("sim.fake_vllm", config, "fake_vllm", self.api_namespace)

    def _start_startup(self) -> None:
        """The deployment starting in real time (sim/startup.py): memory falls, the logs grow."""
        service = self.scenario.model.service
        nodes = []
        for node in self.nodes:
            lines = node_files.startup_lines(node, self.scenario, self.inventory_data)
            if service.state != "ready":  # it never finishes loading
                lines = lines[: _loading_index(lines)]
            meminfo = node.spec.meminfo_kb()
            nodes.append(
                {
                    "meminfo_path": str(node.dir / "meminfo"),
                    "meminfo": meminfo,
                    "end_available_kb": service.startup_min_available_kb or SERVING_AVAILABLE_KB[node.rank % 2],
                    "log_path": str(node.dir / "container.log"),
                    "lines": lines,
                }
            )
        config = {"seconds": service.startup_seconds, "nodes": nodes, "done_file": str(self.dir / "startup.done")}
        self._spawn("sim.startup", config, "startup", None)

    def _node_addresses(self, node: SimNode) -> list[str]:
        addrs = [node.lan_ip] + [
            str(ipaddress.ip_interface(lk["addresses"][node.name]).ip)
            for lk in self.scenario.links.values()
            if node.name in lk["addresses"]
        ]
        return [node.name, *addrs]

    def _write_known_hosts(self) -> None:
        lines = []
        for node in self.nodes:
            key = " ".join((node.dir / "host_key.pub").read_text().split()[:2])
            lines += [f"{host} {key}" for host in self._node_addresses(node)]
        text = "\n".join(lines) + "\n"
        (self.dir / "known_hosts").write_text(text)
        for node in self.nodes:  # for the nodes' own SSH to each other over QSFP
            user = node.spec.login_user
            (node.dir / "fs" / "home" / user / ".ssh" / "known_hosts").write_text(text)

    def _write_inventory(self) -> None:
        """The example inventory (the seed's expectations), with the sim's nodes and how to reach them."""
        data = self.inventory_data
        data["ssh"] = {
            "connect_timeout": 5,
            **self.scenario.data.get("inventory", {}).get("ssh", {}),  # a scenario may shorten the bound
            "host_key_policy": "known_hosts",
            "known_hosts": str(self.dir / "known_hosts"),
            "use_ssh_config": False,
        }
        data["nodes"] = [
            {
                "name": n.name,
                "rank": n.rank,
                "transport": "ssh",
                "host": n.spec.ssh_host or n.lan_ip,
                "port": 22,
                "user": n.spec.login_user if n.spec.unprivileged else "root",
                "key": str(self.dir / "client_key"),
                **({"sudo": n.spec.sudo} if n.spec.sudo is not None else {}),
            }
            for n in self.nodes
        ]
        # a short bandwidth run: the sim's links are veths, the figures the scenario's
        data["thresholds"] = {"bandwidth_seconds": 1, **data.get("thresholds", {})}
        examples = {lk["netdev"]: lk for lk in data.pop("rails", data.pop("links", []))}
        data["rails"] = [
            {
                **{k: v for k, v in examples.get(netdev, {}).items() if k in ("gid_index", "min_gbps", "mtu")},
                "netdev": netdev,
                "rdma_device": link["rdma_device"],
                "addresses": link["addresses"],
                **({"mtu": link["mtu"]} if "mtu" in link else {}),
            }
            for netdev, link in self.scenario.links.items()
        ]
        header = (
            f"# Written by the simulated cluster, scenario {self.scenario.name} ({self.scenario.source}).\n"
            "# Expectations are fixtures/cluster.example.toml's; nodes are reached over the sim's LAN.\n"
        )
        self.inventory_path.write_text(header + tomli_w.dumps(data))

    def _wait_ready(self, timeout: float) -> None:
        targets = [(n.lan_ip, 22, n.name) for n in self.nodes if n.reachable]
        if self._serves_api() and not self.scenario.model.service.startup_seconds:
            targets.append(("127.0.0.1", self.scenario.model.service.port, "fake vLLM"))
        pending: list[str] = []

        def probe() -> None:
            deadline = time.monotonic() + timeout
            with netns.inside(self.api_namespace):
                for host, port, what in targets:
                    while True:
                        try:
                            socket.create_connection((host, port), timeout=0.5).close()
                            break
                        except OSError:
                            if time.monotonic() > deadline:
                                pending.append(f"{what} ({host}:{port})")
                                break
                            time.sleep(0.05)

        worker = threading.Thread(target=probe)  # its own thread: only it enters the namespace
        worker.start()
        worker.join()
        if pending:
            logs = "; ".join(f"{_last_arg(p)}: rc={p.poll()}" for p in self.processes if p.poll() is not None)
            raise SimError(f"simulated cluster not ready within {timeout:g} s: {', '.join(pending)} {logs}".strip())

    # -- teardown ---------------------------------------------------------------------------
    def down(self) -> None:
        if not self._up:
            return
        self._up = False
        for proc in self.processes:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.processes:
            try:
                proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=3)
        _remove_owner(self.owner)
        with contextlib.suppress(Exception):
            atexit.unregister(self.down)
