"""What a simulated node boots from: its folder under the cluster's run directory.

State for the stub tools (driver, RDMA ports, docker, verbatim overrides), the stubs themselves,
a fake /sys and /proc/driver, /proc/meminfo, the deployment's files (compose, .env, HF cache,
netplan, passwd, ~/.ssh), sshd's config and the boot script that mounts all of it inside the
node's namespaces and runs real ufw before sshd.
"""

from __future__ import annotations

import ipaddress
import json
import os
import posixpath
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gb10check import inventory as inv
from gb10check.errors import SimError
from sim import container, deploy, language, layout, vllm_logs
from sim.node import COMPOSE_BINARY, PROJECT_ROOT, SSHD, STUB_PYTHON, SimNode
from sim.scenario import Scenario
from sim.stub import FS_TOOLS, LANGUAGE_TOOLS, TOOLS
from sim.tables import merge

__all__ = [
    "BOOT_KERNEL",
    "BOOT_LOG",
    "DGX_RELEASE",
    "GID_SLOTS",
    "LOGIND_CONF",
    "OS_RELEASE",
    "TIME_SCALE_ENV",
    "UBUNTU_LOGIND",
    "UFW_UNIT_LINK",
    "pci_address",
    "startup_lines",
    "time_scale",
    "write_node_files",
]

TIME_SCALE_ENV = "GB10SIM_TIME_SCALE"


def time_scale() -> float:
    """The share of a timed tool's set duration its stub spends running (ib_write_bw's `-D`): what the
    tool prints is the same (its iterations, its rate over the whole -D), only the wait is shorter.
    $GB10SIM_TIME_SCALE, a number in (0, 1], 1 when unset; the self-tests run the sim at 0.1
    (selftests/conftest.py), the demo and `--sim` in real time."""
    text = os.environ.get(TIME_SCALE_ENV, "").strip()
    if not text:
        return 1.0
    try:
        scale = float(text)
    except ValueError:
        scale = -1.0
    if not 0 < scale <= 1:
        raise SimError(f"${TIME_SCALE_ENV} is {text!r}: give a number in (0, 1] (1: the tools' real durations)")
    return scale


def _sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, text=True, timeout=15)


def write_node_files(node: SimNode, scenario: Scenario, inventory: inv.Inventory, cluster_dir: Path) -> None:
    """Everything a node boots from, under its own folder, one part at a time."""
    ports = _rdma_ports(node, scenario)
    _write_stubs(node, ports, scenario, inventory)
    _write_fake_sys(node, ports)
    _write_host_release(node, ports)
    _write_deployment(node, scenario, inventory, cluster_dir)
    _write_container(node, scenario, inventory)
    _write_sshd(node, cluster_dir)
    _write_boot(node)


def _dark(scenario: Scenario, rail: inv.Rail, end: inv.Member) -> bool:
    """No carrier at this end: a cable is dark when either end is down or unplugged (or its node off); a
    switch port when this end is (the switch and the other ports stay up)."""
    ends = [end] if scenario.model.switched(rail) else list(rail.members)
    nodes = scenario.model.nodes
    return any(
        e.netdev in nodes[e.node].down or e.netdev in nodes[e.node].unplugged or nodes[e.node].powered_off for e in ends
    )


def _rdma_ports(node: SimNode, scenario: Scenario) -> list[dict[str, Any]]:
    """Every RDMA port of a node: its ends of the rails (as this node names them, with the addresses its
    netdev got in order, and down when its end is, or on a cable either end) and the uncabled ones."""
    model = scenario.model
    ports: list[dict[str, Any]] = []
    for rail, end in model.ends_of(node.name):
        spec = node.spec.rdma.get(end.netdev)
        down = _dark(scenario, rail, end)
        toward = {}  # the peer's address on this rail (as the peer really has it) -> Gb/s from this end
        for peer, gbps in (spec.bw_to if spec else {}).items():
            peer_end = rail.member(peer)
            assert peer_end is not None  # the scenario's validation: bw_to names peers on this rail
            actual = model.nodes[peer].addresses.get(peer_end.netdev, peer_end.address)
            toward[str(ipaddress.ip_interface(actual).ip)] = gbps
        ports.append(
            {
                "rdma_device": (spec.device if spec and spec.device else end.rdma_device),
                "netdev": end.netdev,
                "rate": spec.rate if spec else "200 Gb/sec (2X NDR)",
                "bw_gbps": spec.bw_gbps if spec else 109.0,
                "bw_to": toward,
                "bw_failure": spec.bw_failure if spec else None,
                "down": down,
                "addresses": [
                    *(spec.extra_addresses if spec else []),
                    node.spec.addresses.get(end.netdev, end.address),
                ],
            }
        )
    ports += [
        {
            "rdma_device": dev,
            "netdev": nd,
            "rate": "",
            "down": True,
            "addresses": [],
            "bw_gbps": 0.0,
            "bw_to": {},
            "bw_failure": None,
        }
        for dev, nd in model.unused_ports.items()
    ]
    return sorted(ports, key=lambda p: p["rdma_device"].lower())


def _compose_binary(node: SimNode) -> Path:
    """The Compose the node's docker stub execs. An unprivileged login gets a copy in the sim's own
    folder (made once per cluster): the checkout may sit under a folder only root can enter (a
    `mktemp -d` clone is 0700), and a login that cannot exec it would fail every compose check."""
    if not node.spec.unprivileged:
        return COMPOSE_BINARY
    copy = node.dir.parent / "docker-compose"
    if not copy.exists():
        shutil.copy2(COMPOSE_BINARY, copy)
        copy.chmod(0o755)
    return copy


def _write_stubs(node: SimNode, ports: list[dict[str, Any]], scenario: Scenario, inventory: inv.Inventory) -> None:
    """The stub tools on the node's PATH, and the state they answer from (sim/stub.py)."""
    d, spec = node.dir, node.spec
    (d / "bin").mkdir(parents=True)
    shutil.copy2(PROJECT_ROOT / "sim" / "stub.py", d / "stub.py")  # readable whatever the checkout's modes
    (d / "stubs").mkdir()
    for module in (PROJECT_ROOT / "sim" / "stubs").glob("*.py"):  # one tool's module each (sim/stub.py's TOOLS)
        shutil.copy2(module, d / "stubs" / module.name)
    shutil.copy2(PROJECT_ROOT / "sim" / "collective_rank.py", d / "collective_rank.py")  # what its docker run runs
    state = {
        "node": node.name,
        "nodes": list(scenario.nodes),  # in rank order: the ranks nccl-tests lists
        "kernel_log": _kernel_log(node, ports),
        "nccl_tests": dict(node.spec.nccl_tests),
        "driver": _driver(node),
        "gpu_uuid": spec.gpu_uuid or "GPU-00000000-0000-0000-0000-000000000000",
        "gpu": spec.gpu.model_dump(),
        "hf_filesystem": spec.hf.filesystem or scenario.model.deployment.hf.filesystem,
        "hf_cache": (inventory.deployment.hf_cache.rstrip("/") if inventory.deployment else ""),
        "rdma_ports": ports,
        "stubs": [stub.model_dump() for stub in spec.stubs],
        "docker": _docker_state(node, scenario, inventory),
        "perftest": {
            "time_scale": time_scale(),
            "version": spec.perftest_version,
            "mb_label": "MB" if spec.perftest_version == "24.01" else "MiB",
            "ports": {
                p["rdma_device"]: {"gbps": p["bw_gbps"], "to": p["bw_to"], "failure": p["bw_failure"]} for p in ports
            },
        },
    }
    (d / "state.json").write_text(json.dumps(state, indent=2))
    # a node in another language: its ping translates as iputils' gettext build does (sim/language.py)
    filesystem = spec.hf.filesystem or scenario.model.deployment.hf.filesystem
    for tool in [
        *TOOLS,
        *(LANGUAGE_TOOLS if language.locales_named(spec.login_env) else ()),
        *(FS_TOOLS if filesystem else ()),
    ]:
        stub = d / "bin" / tool
        stub.write_text(f'#!/bin/sh\nexec {STUB_PYTHON} -I -S {d / "stub.py"} {d / "state.json"} {tool} "$@"\n')
        stub.chmod(0o755)


# what dmesg shows of a GB10's boot (the kernel's formats; the version strings of DGX OS 7)
BOOT_LOG = (
    "[    0.000000] Booting Linux on physical CPU 0x0000000000 [0x410fd871]",
    "[    0.000000] Linux version 6.17.0-1014-nvidia (buildd@bos03-arm64-051) (aarch64-linux-gnu-gcc-13 "
    "(Ubuntu 13.3.0-6ubuntu2~24.04) 13.3.0, GNU ld (GNU Binutils for Ubuntu) 2.42) #14-Ubuntu SMP PREEMPT_DYNAMIC",
    "[    0.000000] Memory: 124510208K/125829120K available",
    "[    5.482113] nvidia: loading out-of-tree module taints kernel.",
)


BOOT_KERNEL = "6.17.0-1014-nvidia"  # the boot log's kernel: the node's own (nodes.<name>.host.kernel) replaces it


def pci_address(netdev: str) -> str:
    """The PCI address a predictable netdev name encodes: enP2p1s0f0np0 -> 0002:01:00.0."""
    m = re.match(r"en(?:P(?P<domain>\d+))?p(?P<bus>\d+)s(?P<slot>\d+)f(?P<fn>\d+)", netdev)
    if m is None:
        return "0000:00:00.0"
    return f"{int(m['domain'] or 0):04x}:{int(m['bus']):02x}:{int(m['slot']):02x}.{m['fn']}"


def _kernel_log(node: SimNode, ports: list[dict[str, Any]]) -> list[str]:
    """The node's dmesg: its boot, each ConnectX port's probe, `Link up` for the cabled ports that came
    up, then the scenario's own lines."""
    lines = [line.replace(BOOT_KERNEL, node.spec.host.kernel) for line in BOOT_LOG]
    for i, port in enumerate(ports):
        pci = pci_address(port["netdev"])
        lines.append(f"[    {6 + i * 0.2:.6f}] mlx5_core {pci}: firmware version: {node.spec.host.cx_firmware}")
    for i, port in enumerate(p for p in ports if p["addresses"] and not p["down"]):
        lines.append(f"[   {12 + i * 0.3:.6f}] mlx5_core {pci_address(port['netdev'])} {port['netdev']}: Link up")
    return lines + list(node.spec.kernel_log)


def _driver(node: SimNode) -> dict[str, str]:
    driver = node.spec.driver
    return {**driver.model_dump(exclude={"installed"}), "installed": driver.installed or driver.userspace}


def _write_fake_sys(node: SimNode, ports: list[dict[str, str]]) -> None:
    """The files the boot script mounts over the node's /sys, /proc/driver and /proc/meminfo."""
    d, driver = node.dir, node.spec.driver
    sysdir = d / "sys"
    for port in ports:
        _write_rdma_port(sysdir / "class" / "infiniband" / port["rdma_device"], port)
    if driver.kernel:
        (sysdir / "module" / "nvidia").mkdir(parents=True)
        (sysdir / "module" / "nvidia" / "version").write_text(driver.kernel + "\n")
        (d / "proc_driver" / "nvidia").mkdir(parents=True)
        (d / "proc_driver" / "nvidia" / "version").write_text(
            f"NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  {driver.kernel}  Release Build  "
            f"(dvs-builder@U22-I3-AF03-09-1)  Tue Jun 23 08:38:17 UTC 2026\n"
            "GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04.1)\n"
        )
    else:
        (d / "proc_driver").mkdir()
    (d / "meminfo").write_text("".join(f"{k + ':':<16}{v:>8} kB\n" for k, v in node.spec.meminfo_kb().items()))


# Ubuntu 24.04's /etc/os-release (base-files 13ubuntu10), its point release the node's own
OS_RELEASE = """PRETTY_NAME="{pretty}"
NAME="Ubuntu"
VERSION_ID="{version_id}"
VERSION="{version} (Noble Numbat)"
VERSION_CODENAME=noble
ID=ubuntu
ID_LIKE=debian
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"
UBUNTU_CODENAME=noble
LOGO=ubuntu-logo
"""


# DGX OS's /etc/dgx-release: os-release's shape, the DGX_* keys a DGX system carries (the install's build and
# version, the platform, the serial number, then what its updates brought it to); the values are the sim's own
DGX_RELEASE = """DGX_NAME="DGX Spark"
DGX_PRETTY_NAME="NVIDIA DGX Spark"
DGX_SWBUILD_DATE="2025-09-10-13-50-03"
DGX_SWBUILD_VERSION="7.2.3"
DGX_COMMIT_ID="4b2c1f0"
DGX_PLATFORM="DGX Server for DGX Spark"
DGX_SERIAL_NUMBER="1970125000042"

DGX_OTA_VERSION="{version}"
DGX_OTA_DATE="Thu 12 Feb 2026 09:14:02 AM UTC"
"""


def _write_host_release(node: SimNode, ports: list[dict[str, Any]]) -> None:
    """What the node runs and boots from (nodes.<name>.host): the kernel release the boot script mounts over
    /proc/sys/kernel/osrelease, /etc/os-release in its own /etc (a scenario's etc_files may replace it), the
    BIOS's DMI files and every RDMA device's fw_ver in its fake /sys (each file as the kernel prints it)."""
    d, host = node.dir, node.spec.host
    (d / "osrelease").write_text(host.kernel + "\n")
    version = host.os_release.removeprefix("Ubuntu ")
    version_id = ".".join(version.split()[0].split(".")[:2]) if version.strip() else ""
    deploy.place(d / "fs", "/etc/os-release").write_text(
        OS_RELEASE.format(pretty=host.os_release, version=version, version_id=version_id)
    )
    dmi = d / "sys" / "class" / "dmi" / "id"
    dmi.mkdir(parents=True)
    (dmi / "bios_version").write_text(host.bios_version + "\n")
    (dmi / "bios_date").write_text(host.bios_date + "\n")
    for port in ports:
        (d / "sys" / "class" / "infiniband" / port["rdma_device"] / "fw_ver").write_text(host.cx_firmware + "\n")
    if host.dgx_os != "none":
        deploy.place(d / "fs", "/etc/dgx-release").write_text(DGX_RELEASE.format(version=host.dgx_os))


# mlx5 when the port has no carrier: DOWN, Disabled, and its 4X QDR placeholder rate
_PORT_DOWN = {"state": "1: DOWN", "phys_state": "3: Disabled", "rate": "40 Gb/sec (4X QDR)"}
GID_SLOTS = 16  # mlx5 has 255; the sim's table needs only to be longer than what it fills


def _write_rdma_port(device_dir: Path, port: dict[str, Any]) -> None:
    """One port's sysfs as the kernel fills it (drivers/infiniband/core/sysfs.c formats): the state
    files and the GID table, in the order the kernel adds entries: the link-local GID (v1, v2),
    then each of the netdev's addresses as it was added (IPv4 mapped into ::ffff:0:0/96), v1 then v2."""
    pdir = device_dir / "ports" / "1"
    for sub in ("gids", "gid_attrs/types", "gid_attrs/ndevs"):
        (pdir / sub).mkdir(parents=True)
    (device_dir / "device" / "net" / port["netdev"]).mkdir(parents=True)
    state = _PORT_DOWN if port["down"] else {"state": "4: ACTIVE", "phys_state": "5: LinkUp", "rate": port["rate"]}
    for name, value in {**state, "link_layer": "Ethernet"}.items():
        (pdir / name).write_text(value + "\n")
    interface_id = deploy.digest(f"{device_dir.name}-mac")[:12]  # a stand-in MAC for the EUI-64 link-local GID
    mac = [int(interface_id[i : i + 2], 16) for i in range(0, 12, 2)]
    eui = [mac[0] ^ 2, mac[1], mac[2], 0xFF, 0xFE, mac[3], mac[4], mac[5]]
    link_local = ipaddress.IPv6Address(bytes([0xFE, 0x80, 0, 0, 0, 0, 0, 0, *eui]))
    entries = [link_local]
    for address in port["addresses"]:
        ip = ipaddress.ip_interface(address).ip
        entries.append(ipaddress.IPv6Address(b"\0" * 10 + b"\xff\xff" + ip.packed) if ip.version == 4 else ip)
    gids = [(gid, kind) for gid in entries for kind in ("IB/RoCE v1", "RoCE v2")]
    for index in range(GID_SLOTS):
        gid, kind = gids[index] if index < len(gids) else (ipaddress.IPv6Address(0), "")
        (pdir / "gids" / str(index)).write_text(":".join(f"{g:04x}" for g in _groups(gid)) + "\n")
        if kind:  # an unused slot's type and netdev cannot be read (EINVAL): the files are absent
            (pdir / "gid_attrs" / "types" / str(index)).write_text(kind + "\n")
            (pdir / "gid_attrs" / "ndevs" / str(index)).write_text(port["netdev"] + "\n")


def _groups(address: ipaddress.IPv6Address) -> list[int]:
    packed = address.packed
    return [int.from_bytes(packed[i : i + 2], "big") for i in range(0, 16, 2)]


def _write_sshd(node: SimNode, cluster_dir: Path) -> None:
    """sshd: its own host key, key-only root login, the stubs first on PATH."""
    d = node.dir
    _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", node.name, "-f", str(d / "host_key"))
    (d / "sshd_config").write_text(
        "\n".join(
            [
                "Port 22",
                "ListenAddress 0.0.0.0",
                f"HostKey {d / 'host_key'}",
                "PidFile none",
                # root reads the cluster's file; an unprivileged login its own ~/.ssh/authorized_keys
                f"AuthorizedKeysFile {cluster_dir / 'authorized_keys'} .ssh/authorized_keys",
                "PubkeyAuthentication yes",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "PermitRootLogin prohibit-password",
                "UsePAM no",
                "StrictModes no",
                "PrintMotd no",
                "MaxStartups 50",
                "KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org",
                "MaxSessions 50",
                "LogLevel INFO",
                # one line: sshd takes the first SetEnv only; the node's language after its name
                " ".join(
                    ["SetEnv", f"GB10SIM_NODE={node.name}", *(f"{k}={v}" for k, v in node.spec.login_env.items())]
                ),
                "",
            ]
        )
    )


def _write_boot(node: SimNode) -> None:
    """The boot script: mounts the fake files inside the node's namespaces, real ufw, then sshd.
    Runs as: ip netns exec NS unshare --mount --uts --propagation private sh boot.sh"""
    d, sysdir = node.dir, node.dir / "sys"
    hostname = node.spec.hostname or node.name
    ufw = "\n".join(filter(None, [_ufw_commands(node), _forwarding_commands(node)]))
    # sshd = false: the node is up (links, firewall) but nothing listens on port 22, so logins are refused
    sshd = f"exec {SSHD} -D -e -f {d}/sshd_config" if node.spec.sshd else "echo 'sshd: disabled'"
    if node.spec.boot_delay:  # still booting: everything is there but sshd, which starts later
        sshd = f"sleep {node.spec.boot_delay:g}\n{sshd}"
    (d / "boot.sh").write_text(
        f"""set -e
hostname {hostname}
mkdir -p {d}/realsys
mount --bind /sys {d}/realsys
mount -t tmpfs -o mode=755 gb10sim-sys /sys
cp -a {sysdir}/. /sys/
mkdir -p /sys/class/net /sys/devices /sys/fs
mount --rbind {d}/realsys/class/net /sys/class/net
mount --rbind {d}/realsys/devices /sys/devices
mount --rbind {d}/realsys/fs /sys/fs
mount -t tmpfs -o mode=755 gb10sim-driver /proc/driver
cp -a {d}/proc_driver/. /proc/driver/
mount --bind {d}/meminfo /proc/meminfo
mount --bind {d}/osrelease /proc/sys/kernel/osrelease
mount --bind {d}/bin /usr/local/bin
mkdir -p {d}/etc-work
mount -t overlay gb10sim-etc -o lowerdir=/etc,upperdir={d}/fs/etc,workdir={d}/etc-work /etc
mount --bind {d}/fs/home /home
mkdir -p {d}/var-systemd {d}/var-systemd-work
mount -t overlay gb10sim-var -o lowerdir=/var/lib/systemd,upperdir={d}/var-systemd,workdir={d}/var-systemd-work \
  /var/lib/systemd
mkdir -p /var/lib/systemd/linger
mount --bind {d}/linger /var/lib/systemd/linger
{language.boot_lines(d, node.spec.login_env)}
{ufw}
{sshd}
"""
    )


def _docker_state(node: SimNode, scenario: Scenario, inventory: inv.Inventory) -> dict[str, Any]:
    """What the node's docker stub knows: images (same layers everywhere, IDs per node, as after
    `docker load`), the vLLM container (running on every node while the deployment runs, unless the
    scenario says otherwise) and its log, cgroup set-up, and the GPU runtime."""
    deployment = inventory.deployment
    layers = [f"sha256:{deploy.digest(f'layer-{i}')}" for i in range(6)]
    running = scenario.model.deployment.running and deployment is not None
    state: dict[str, Any] = {
        "images": [
            {
                "tags": [deployment.image if deployment else "vllm/vllm-openai:qwen38-flash-next"],
                "id": f"sha256:{deploy.digest(f'image-{node.name}')}",
                "layers": layers,
                "arch": "arm64",
            }
        ],
        "container": {"name": deployment.container, "image": deployment.image} if running and deployment else None,
        "gpu": "ok",
        "cgroup_driver": "systemd",
        "cgroup_version": "2",
    }
    state = merge(
        state,
        node.spec.docker.model_dump(exclude_unset=True, exclude={"log", "log_extra", "log_long_line", "nccl_library"}),
    )
    state["nccl_library"] = _nccl_library(node, scenario)
    state["mlx5_dmabuf"] = node.spec.docker.mlx5_dmabuf
    state["collective"] = node.spec.docker.collective.model_dump()
    image_env = state.pop("image_env", None)
    if image_env is not None:
        for image in state["images"]:
            image["env"] = image_env
    if state.pop("compose_plugin", True):
        if not COMPOSE_BINARY.is_file():
            raise SimError(
                f"the sim's Docker Compose v2 is not at {COMPOSE_BINARY}, beside {sys.executable} or on PATH: run "
                "bin/setup in a clone (it installs it there), or put docker-compose beside this Python"
            )
        state["compose"] = str(_compose_binary(node))
    created = _created_file(node, scenario)
    if state["container"] is not None and created is not None and _created_by_docker(node):
        state["container"]["created_file"] = str(created)
    if state["container"] is not None:
        state["log_file"] = str(node.dir / "container.log")
        state["stopped_file"] = str(node.dir / "container.stopped")  # `docker stop` leaves it (opt-in watchdog)
        _write_container_log(node, scenario, inventory, Path(state["log_file"]))
    return state


def _created_file(node: SimNode, scenario: Scenario) -> Path | None:
    """Where the running container, as Docker created it from the compose or the `docker run` launcher, is
    written (None: no container runs; sim/container.py)."""
    if not scenario.model.deployment.running:
        return None
    return node.dir / "container.json"


def _created_by_docker(node: SimNode) -> bool:
    """Whether the node's container is the one Docker creates from the deployment: no scenario container, or
    one the scenario only names (its name and image); one with its own state, arguments or environment is
    the scenario's as it wrote it."""
    spec = node.spec.docker.container
    if "container" not in node.spec.docker.model_fields_set or spec is None:
        return True
    return not (spec.model_fields_set - {"name", "image"})


def _write_container(node: SimNode, scenario: Scenario, inventory: inv.Inventory) -> None:
    path, dep = _created_file(node, scenario), inventory.deployment
    if path is None or dep is None or not _created_by_docker(node):
        return
    launch = inventory.launch_of(node.name)
    state = json.loads((node.dir / "state.json").read_text())
    image = state["docker"]["images"][0]
    if scenario.model.deployment.launcher == "docker-run":  # the script run with real bash, docker recorded
        assert launch.script is not None
        container.write_run_created(
            path,
            script=deploy.place(node.dir / "fs", launch.script),
            args=list(launch.args),
            root=node.dir / "fs",
            container=dep.container,
            image_env=image.get("env"),
            image_id=image["id"],
        )
        return
    if dep.compose_file is None:
        return
    shell = dict(launch.env)
    if scenario.model.deployment.launcher == "compose-script":  # sim/deploy/compose-up.sh: NODE_RANK=$1
        shell["NODE_RANK"] = launch.args[0]
    before = _compose_at_start(node, scenario, inventory)
    if before is not None:  # the container was created from the compose as it was before these edits
        now = deploy.place(node.dir / "fs", dep.compose_file).read_text()
        deploy.place(node.dir / "fs", dep.compose_file).write_text(before)
    if not container.compose_accepts(
        _compose_binary(node), node.dir / "fs", dep.compose_file, inventory.env_file_of(node.name), shell
    ):  # a compose the node's Compose refuses (a scenario's fault) created nothing: the short inspect stands
        return
    try:
        container.write_created(
            path,
            compose=_compose_binary(node),
            root=node.dir / "fs",
            compose_file=dep.compose_file,
            env_file=inventory.env_file_of(node.name),
            shell=shell,
            container=dep.container,
            image_env=image.get("env"),
            image_id=image["id"],
        )
    finally:
        if before is not None:
            deploy.place(node.dir / "fs", dep.compose_file).write_text(now)


def _compose_at_start(node: SimNode, scenario: Scenario, inventory: inv.Inventory) -> str | None:
    """The node's compose as it was when its container started, where the scenario edited it after
    (nodes.<name>.edited_after_start); None where the file is what started it."""
    if not node.spec.edited_after_start:
        return None
    edits = [*scenario.model.deployment.compose_edits, *node.spec.compose_edits]
    return deploy.render_compose(edits, _compose_cluster(node, scenario, inventory))


def _nccl_library(node: SimNode, scenario: Scenario) -> dict[str, str]:
    """The libnccl the node's container loads: its path, version (the deployment's NCCL, built for CUDA 13.0)
    and the file's sha256 (a digest of path and version: the same file on every node unless a scenario says)."""
    lib = node.spec.docker.nccl_library
    version = lib.version or f"{scenario.model.deployment.nccl_version}+cuda13.0"
    return {
        "path": lib.path,
        "version": version,
        "sha256": lib.sha256 or deploy.digest(f"libnccl-{lib.path}-{version}"),
    }


def _write_container_log(node: SimNode, scenario: Scenario, inventory: inv.Inventory, path: Path) -> None:
    """The container's log so far: a healthy start that ended minutes ago (or the scenario's own
    lines), then the scenario's extra lines and its one long line. A scenario with a startup time writes
    it live instead (sim/startup.py)."""
    service, docker = scenario.model.service, node.spec.docker
    lines = list(docker.log) if docker.log is not None else []
    if docker.log is None and not service.startup_seconds:
        started = datetime.now(UTC) - timedelta(seconds=1200)
        lines = vllm_logs.stamped(_startup(node, scenario, inventory, started), started)
    lines += docker.log_extra
    long = docker.log_long_line
    if long is not None:
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        lines.append(f"{stamp} {(long.unit * (long.chars // len(long.unit) + 1))[: long.chars]}")
    path.write_text("".join(f"{line}\n" for line in lines))


def startup_lines(node: SimNode, scenario: Scenario, inventory: inv.Inventory) -> list[vllm_logs.Line]:
    """A healthy start's log lines on this node (seconds after the start, text): what sim/startup.py writes live."""
    return _startup(node, scenario, inventory, datetime.now(UTC))


def _fabric_devices(node: SimNode, inventory: inv.Inventory) -> list[str]:
    """The node's RDMA devices on the fabric, in one order for every node (NCCL_IB_HCA, NCCL's log)."""
    devices = {m.rdma_device for _, m in inventory.members_of(node.name)}
    order = {d: i for i, d in enumerate(layout.DEVICE_ORDER)}
    return sorted(devices, key=lambda d: (order.get(d, len(order)), d))


def _startup(node: SimNode, scenario: Scenario, inventory: inv.Inventory, started: datetime) -> list[vllm_logs.Line]:
    service, deployment = scenario.model.service, scenario.model.deployment
    control = inventory.control_netdev(node.name) or ""
    return vllm_logs.startup_log(
        node.rank,
        started,
        version=service.vllm_version,
        model=inventory.service.model if inventory.service else "",
        served=service.served_model_name or "",
        port=service.port,
        transport=deployment.nccl_transport,
        eager=deployment.eager,
        nccl_version=deployment.nccl_version,
        retune=service.retune_seconds,
        host=node.spec.hostname or node.name,
        world=inventory.size,
        master=inventory.master_address or "",
        devices=_fabric_devices(node, inventory),
        oob=f"{control}:{inventory.control_address(node.name) or ''}",
        dmabuf=node.spec.docker.mlx5_dmabuf,
    )


def _compose_cluster(node: SimNode, scenario: Scenario, inventory: inv.Inventory) -> deploy.ComposeCluster | None:
    """What the node's compose says about the cluster (None: the pair's, the template as it is)."""
    if scenario.topology == "pair":
        return None
    return deploy.ComposeCluster(
        topology=scenario.topology,
        size=inventory.size,
        master=inventory.master_address or "",
        control=inventory.control_netdev(node.name) or "",
        devices=tuple(_fabric_devices(node, inventory)),
    )


def _write_compose(fs: Path, dep: inv.Deployment, compose: str, node: SimNode, service, spec, inventory) -> None:  # type: ignore[no-untyped-def]
    """The compose and the node's .env beside it (its rank, its address, the model)."""
    assert dep.compose_file is not None and dep.env_file is not None
    deploy.place(fs, dep.compose_file).write_text(compose)
    env = {
        "MODEL_ID": service.model if service else "",
        "NODE_RANK": str(node.rank),
        "VLLM_HOST_IP": inventory.control_address(node.name) or "",  # its control-plane address
        **spec.env,
    }
    deploy.place(fs, dep.env_file).write_text(deploy.render_env(env))


def _write_deployment(node: SimNode, scenario: Scenario, inventory: inv.Inventory, cluster_dir: Path) -> None:
    """The node's files, under its own root folder: compose, .env, HF cache, netplan, /etc/passwd
    (naming the login account), ~/.ssh for the fabric's mesh."""
    spec, fs = node.spec, node.dir / "fs"
    dep, service = inventory.deployment, inventory.service
    home = fs / "home" / spec.login_user
    ssh_dir = home / ".ssh"  # the home of the node's first name (what ssh reads)
    for sub in (fs / "etc", ssh_dir):
        sub.mkdir(parents=True, exist_ok=True)
    if dep is not None:
        edits = [*scenario.model.deployment.compose_edits, *spec.compose_edits, *spec.edited_after_start]
        cluster = _compose_cluster(node, scenario, inventory)
        try:
            compose = deploy.render_compose(edits, cluster)
        except ValueError as exc:  # an edit written for another topology's compose
            shape = f"a {cluster.topology} of {cluster.size}" if cluster else "the pair"
            raise SimError(f"{scenario.source}: {exc} (rendered for {shape}, as on {node.name})") from exc
        launcher = scenario.model.deployment.launcher
        if launcher != "docker-run":
            _write_compose(fs, dep, compose, node, service, spec, inventory)
        if launcher != "compose":  # the launch script the inventory names
            assert dep.launch.script is not None
            script = deploy.place(fs, dep.launch.script)
            template = deploy.DOCKER_RUN_TEMPLATE if launcher == "docker-run" else deploy.COMPOSE_UP_TEMPLATE
            script_dir = posixpath.dirname(dep.launch.script)
            text = template.read_text(encoding="utf-8").replace("{folder}", script_dir)
            for old, new in scenario.model.deployment.launcher_edits:
                if old not in text:
                    raise SimError(f"{scenario.source}: launcher edit {old!r} does not occur in {template.name}")
                text = text.replace(old, new)
            script.write_text(text)
            script.chmod(0o755)
        if service is not None and service.model and not spec.hf.absent:
            hf = merge(
                scenario.model.deployment.hf.model_dump(exclude_unset=True), spec.hf.model_dump(exclude_unset=True)
            )
            folder = fs / dep.hf_cache.lstrip("/") / "hub" / ("models--" + service.model.replace("/", "--"))
            deploy.build_hf_cache(folder, service.model, hf)
    # its own netdevs; the pair's first half link-local, as the seed's netplan has it
    pair = scenario.topology == "pair"
    plan = {
        end.netdev: ("link-local" if pair and i == 0 else end.address)
        for i, (_, end) in enumerate(scenario.model.ends_of(node.name))
        if end.netdev not in spec.netplan.omit
    }
    if not spec.netplan.absent:
        path = deploy.place(fs, "/etc/netplan/40-cx7.yaml")
        path.write_text(deploy.render_netplan(plan))
        path.chmod(int(spec.netplan.mode, 8))
    # the node's own logind.conf (Ubuntu's, all defaults), so the machine's own never shows through
    for etc_path, text in {LOGIND_CONF: UBUNTU_LOGIND, **spec.etc_files}.items():
        deploy.place(fs, etc_path).write_text(text)
    linger = node.dir / "linger"  # mounted over /var/lib/systemd/linger by the boot script
    linger.mkdir()
    for user in spec.linger:
        (linger / user).touch()
    deploy.write_passwd(fs / "etc", spec.users, unprivileged=spec.unprivileged)
    if spec.ssh_key:
        shutil.copy2(cluster_dir / "client_key", ssh_dir / "id_ed25519")
    if spec.unprivileged:  # the suite logs in as this account: its own keys, its own home
        shutil.copy2(cluster_dir / "authorized_keys", ssh_dir / "authorized_keys")
        for path in [home, *home.rglob("*")]:
            os.chown(path, deploy.UNPRIVILEGED_UID, deploy.UNPRIVILEGED_UID, follow_symlinks=False)


LOGIND_CONF = "/etc/systemd/logind.conf"
UBUNTU_LOGIND = "[Login]\n#KillUserProcesses=no\n#RemoveIPC=yes\n#InhibitorsMax=8192\n#SessionsMax=8192\n"
UFW_UNIT_LINK = "/etc/systemd/system/multi-user.target.wants/ufw.service"


def _ufw_commands(node: SimNode) -> str:
    """Real ufw, run in the node's namespaces at boot: rules into its own /etc/ufw (the overlay).

    The ufw.service link is set in the node's own /etc too, so the real `systemctl is-enabled`
    answers from the scenario, not from this machine's set-up.
    """
    ufw = node.spec.ufw
    if ufw.unit == "enabled":
        lines = [
            f"mkdir -p {UFW_UNIT_LINK.rsplit('/', 1)[0]}",
            f"ln -sf /lib/systemd/system/ufw.service {UFW_UNIT_LINK}",
        ]
    else:
        lines = [f"rm -f {UFW_UNIT_LINK}"]
    if ufw.enabled:
        lines += ["ufw --force reset >/dev/null 2>&1", "ufw default deny incoming >/dev/null"]
        lines += [f"ufw {rule} >/dev/null" for rule in ufw.rules]
        lines.append("ufw --force enable >/dev/null")
        if not ufw.enabled_on_boot:
            lines.append("sed -i 's/^ENABLED=yes/ENABLED=no/' /etc/ufw/ufw.conf")
    if node.spec.blackholed:  # sshd runs, but its port drops every packet: a firewall black hole
        lines.append("iptables -I INPUT -p tcp --dport 22 -j DROP")
    return "\n".join(lines)


def _forwarding_commands(node: SimNode) -> str:
    """Forwarding and the FORWARD chain, set at boot in the node's namespaces (real sysctl, real iptables)."""
    lines = ["sysctl -qw net.ipv4.ip_forward=1"] if node.spec.ip_forward else []
    lines += [f"iptables {rule}" for rule in node.spec.iptables]
    return "\n".join(lines)
