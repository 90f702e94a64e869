"""Bringing the simulated cluster up and down.

Each node is a network namespace `gb10sim-<owner pid>-r<rank>` running a real OpenSSH server
inside its own mount and UTS namespaces: own hostname, a tmpfs /sys with hand-made infiniband
and nvidia-module entries (the namespace's real /sys/class/net and /sys/devices bound back in,
so carrier and operstate are live), its own /proc/meminfo and /proc/driver/nvidia, and stub
tools over /usr/local/bin. Links are veth pairs named and addressed like the QSFP netdevs; a
LAN veth (enP7s7) carries SSH, as the LAN does in production. Nothing is routed out of the
namespaces. Everything made is named after the owner's pid (its start time recorded beside, so a
reused pid is not taken for the owner), so a later run can clean what a crashed one left (`python -m
sim clean`), and leaves alone what a live one uses (sim/owners.py).
"""

from __future__ import annotations

import atexit
import contextlib
import ipaddress
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from gb10check import inventory as inv
from gb10check.errors import SimError
from sim import inventory_file, netns, node_files
from sim.layout import LAN_NETDEV
from sim.node import PROJECT_ROOT, SSHD, SimNode
from sim.node_files import write_node_files
from sim.owners import (
    NS_PREFIX,
    RUN_ROOT,
    clean_stale,
    record_owner,
    remove_owner,
    sh,
)
from sim.scenario import Scenario

__all__ = [
    "REQUIRED_TOOLS",
    "SERVING_AVAILABLE_KB",
    "SWITCH_MTU",
    "SimCluster",
    "why_not_available",
]

SWITCH_MTU = 9216  # what a QSFP switch's ports carry
REQUIRED_TOOLS = ("ip", "unshare", "ssh-keygen", "timeout", "mount")
# MemAvailable a started node keeps (the field report: ~12 GiB on rank 0, ~15 GiB on rank 1), kB
SERVING_AVAILABLE_KB = (12 * 1024 * 1024, 15 * 1024 * 1024)


def _loading_index(lines: list[tuple[float, str]]) -> int:
    """Where a start that never finishes loading stops: just after `Starting to load model`."""
    return next((i + 1 for i, (_, text) in enumerate(lines) if "Starting to load model" in text), len(lines))


def _batch(commands: list[str], namespace: str | None = None) -> None:
    """`ip -batch`: many link and address commands in one process (in `namespace`, if given)."""
    if not commands:
        return
    args = ["ip", *(["-n", namespace] if namespace else []), "-batch", "-"]
    try:
        proc = subprocess.run(args, input="\n".join(commands) + "\n", capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired as exc:
        raise SimError(f"`{' '.join(args)}` hung for 30 s") from exc
    if proc.returncode != 0:
        line = re.search(r"Command failed -:(\d+)", proc.stderr)
        failed = f" at `ip {commands[int(line[1]) - 1]}`" if line and int(line[1]) <= len(commands) else ""
        raise SimError(f"`{' '.join(args)}` failed{failed} (rc={proc.returncode}): {proc.stderr.strip()}")


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


@dataclass
class SimCluster:
    scenario: Scenario
    owner: str = field(default_factory=lambda: str(os.getpid()))
    nodes: list[SimNode] = field(default_factory=list)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # bring-up's phases: seconds since it began
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

    @cached_property
    def inventory_data(self) -> dict[str, Any]:
        """The inventory the suite gets (sim/inventory_file.py): the example's expectations, the sim's nodes."""
        return inventory_file.written(self.scenario.model, self.dir)

    @cached_property
    def inventory(self) -> inv.Inventory:
        """The same inventory, as the suite reads it (the nodes' files are written from it)."""
        return inv.Inventory.model_validate({**self.inventory_data, "source": str(self.inventory_path)})

    # -- bring-up ---------------------------------------------------------------------------
    def up(self, ready_timeout: float | None = None) -> Path:
        """Bring the cluster up; return the inventory's path once every sshd (and the API) answers,
        within `ready_timeout` (default: 10 s and 2 s a node more)."""
        started = time.monotonic()
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
                record_owner(self.dir, int(self.owner))
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege-separation dir
            sh(
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
                sh("ip", "netns", "add", node.ns)
                write_node_files(node, self.scenario, self.inventory, self.dir)
            self._lap("files", started)
            self._wire()
            self._lap("wiring", started)
            for node in self.nodes:
                if not node.spec.powered_off:
                    self._start_sshd(node)  # with sshd = false the node boots, but sshd exits: port closed
            self._start_api()
            self._write_known_hosts()
            self._write_inventory()
            self._wait_ready(10.0 + 2.0 * max(0, len(self.nodes) - 2) if ready_timeout is None else ready_timeout)
            self._lap("ready", started)
        except BaseException:
            self.down()
            raise
        return self.inventory_path

    def _lap(self, phase: str, started: float) -> None:
        """Bring-up's phases, seconds since it began (benchmarks/bench_sim_bringup.py prints them)."""
        self.timings[phase] = time.monotonic() - started

    @property
    def switch_namespace(self) -> str:
        """The namespace of the sim's switches: the LAN's bridge and each switched rail's."""
        return f"{NS_PREFIX}{self.owner}-sw"

    def _wire(self) -> None:
        """The LAN (a bridge every node's enP7s7 plugs into), each switched rail (a bridge of its own,
        every end's netdev a veth into it), each cable half (a veth pair between its two ends), the
        uncabled ports (present, down) and the scenario's routes. One `ip -batch` creates every link,
        then one per namespace addresses and raises them."""
        by_name = {n.name: n for n in self.nodes}
        sw = self.switch_namespace
        sh("ip", "netns", "add", sw)
        create: list[str] = []  # from the root namespace: each veth made with its ends in their namespaces
        unused: dict[str, int] = {}  # per node: uncabled ports so far
        inside: dict[str, list[str]] = {sw: ["link set lo up"], **{n.ns: ["link set lo up"] for n in self.nodes}}

        def switch(bridge: str) -> None:
            # a switch passes jumbo frames: its ports take 9216 bytes, the nodes' MTUs decide what is sent
            inside[sw] += [
                f"link add {bridge} type bridge",
                f"link set {bridge} mtu {SWITCH_MTU}",
                f"link set {bridge} up",
            ]

        def plug(node: SimNode, netdev: str, bridge: str, port: str) -> None:
            create.append(
                f"link add name {node.spec.placed(netdev)} netns {node.ns} type veth peer name {port} netns {sw}"
            )
            inside[sw] += [f"link set {port} mtu {SWITCH_MTU}", f"link set {port} master {bridge}"]
            if netdev not in node.spec.unplugged:  # else the switch port stays down: no carrier at the node
                inside[sw].append(f"link set {port} up")

        def uncabled(node: SimNode, netdev: str) -> None:
            # a port with no cable: a veth whose peer stays in the same namespace, down
            index = unused[node.ns] = unused.get(node.ns, -1) + 1
            inside[node.ns].append(f"link add {node.spec.placed(netdev)} type veth peer name gb10nc{index}")

        def configure(node: SimNode, netdev: str, address: str) -> None:
            rdma = node.spec.rdma.get(netdev)
            for extra in rdma.extra_addresses if rdma else []:  # added first: the kernel's GIDs shift
                inside[node.ns].append(f"addr add {extra} dev {netdev}" + (" nodad" if ":" in extra else ""))
            inside[node.ns].append(f"addr add {node.spec.addresses.get(netdev, address)} dev {netdev}")
            if netdev in node.spec.mtu:
                inside[node.ns].append(f"link set {netdev} mtu {node.spec.mtu[netdev]}")
            if netdev not in node.spec.down and not node.spec.powered_off:
                inside[node.ns].append(f"link set {netdev} up")

        switch("lan")
        for node in self.nodes:
            plug(node, LAN_NETDEV, "lan", f"lan{node.rank}")
            configure(node, LAN_NETDEV, node.lan_address)
        model = self.scenario.model
        for index, rail in enumerate(model.rails):
            ends = [(by_name[m.node], m) for m in rail.members]
            if model.switched(rail):
                switch(f"s{index}")
                for node, end in ends:
                    plug(node, end.netdev, f"s{index}", f"s{index}n{node.rank}")
            else:
                if len(ends) != 2:
                    raise SimError(f"{self.scenario.source}: rail {rail.name} must join exactly two nodes (a cable)")
                (a, a_end), (b, b_end) = ends
                if a_end.netdev in a.spec.unplugged or b_end.netdev in b.spec.unplugged:  # the cable is out
                    uncabled(a, a_end.netdev)
                    uncabled(b, b_end.netdev)
                elif rail.name in model.wired:  # cabled between other ends than the inventory's
                    (x, x_dev), (y, y_dev) = ((by_name[n], d) for n, d in model.wired[rail.name])
                    create.append(f"link add name {x_dev} netns {x.ns} type veth peer name {y_dev} netns {y.ns}")
                else:
                    create.append(
                        f"link add name {a.spec.placed(a_end.netdev)} netns {a.ns} "
                        f"type veth peer name {b.spec.placed(b_end.netdev)} netns {b.ns}"
                    )
            for node, end in ends:
                configure(node, end.netdev, end.address)
        for node in self.nodes:
            for netdev in self.scenario.model.unused_ports.values():
                uncabled(node, netdev)
        _batch(create)
        for ns, commands in inside.items():
            _batch(commands, ns)
        for node in self.nodes:  # a scenario's extra routes (their gateways are sim nodes, never outside)
            try:
                _batch([f"route add {route}" for route in node.spec.routes], node.ns)
            except SimError as exc:
                raise SimError(f"{self.scenario.source}: nodes.{node.name}.routes: {exc}") from exc

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
            lines = node_files.startup_lines(node, self.scenario, self.inventory)
            if service.state != "ready":  # it never finishes loading
                lines = lines[: _loading_index(lines)]
            meminfo = node.spec.meminfo_kb()
            nodes.append(
                {
                    "meminfo_path": str(node.dir / "meminfo"),
                    "meminfo": meminfo,
                    "end_available_kb": service.startup_min_available_kb or SERVING_AVAILABLE_KB[min(node.rank, 1)],
                    "log_path": str(node.dir / "container.log"),
                    "lines": lines,
                }
            )
        config = {"seconds": service.startup_seconds, "nodes": nodes, "done_file": str(self.dir / "startup.done")}
        self._spawn("sim.startup", config, "startup", None)

    def _node_addresses(self, node: SimNode) -> list[str]:
        """What SSH may call the node: its name, its LAN address, its address on each of its rails."""
        ends = [str(ipaddress.ip_interface(end.address).ip) for _, end in self.scenario.model.ends_of(node.name)]
        return [node.name, node.lan_ip, *ends]

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
        """The example inventory (the seed's expectations), with the sim's nodes, rails and control plane."""
        header = (
            f"# Written by the simulated cluster, scenario {self.scenario.name} ({self.scenario.source}).\n"
            "# Expectations are fixtures/cluster.example.toml's; nodes are reached over the sim's LAN.\n"
        )
        self.inventory_path.write_text(header + inventory_file.dumps(self.inventory_data))

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
        remove_owner(self.owner)
        with contextlib.suppress(Exception):
            atexit.unregister(self.down)
