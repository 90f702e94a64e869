"""Every fact the snapshot reads, declared once: its name, its command, its bound and its parser.

A check asks the snapshot for a fact by its declaration (`snap.fact(MEMINFO)`), never by a
string. `probes_for` turns the declarations that apply to a node into the probes of its one
snapshot round trip. Probes that read root-only files go through `as_root`: directly when the
session is root, else `sudo -n` (never a prompt) when the inventory allows sudo on that node,
else a clear refusal.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Callable

from gb10check import inventory as inv
from gb10check.deployment.compose_fallback import parse_dotenv
from gb10check.deployment.launch.running import PROCESSES_SCRIPT, Process, parse_processes
from gb10check.judging.fit import ModelDims, parse_model_config
from gb10check.reading.parsers.docker import (
    Container,
    DockerInfo,
    Image,
    client_error,
    parse_container_inspect,
    parse_docker_info,
    parse_image_inspect,
    parse_image_list,
)
from gb10check.reading.parsers.framed import FileRead, framed_files_command, parse_framed_files, parse_word
from gb10check.reading.parsers.getent import parse_getent_hosts
from gb10check.reading.parsers.gpu_clocks import QUERY as GPU_CLOCKS_QUERY
from gb10check.reading.parsers.gpu_clocks import GpuClocks, parse_gpu_clocks
from gb10check.reading.parsers.hfcache import (
    LISTING_FORMAT,
    SMALL_FILES,
    Entry,
    parse_fs_type,
    parse_index_total_size,
    parse_listing,
    parse_revision,
    parse_sha256sums,
)
from gb10check.reading.parsers.host_release import (
    NO_DGX_RELEASE,
    Bios,
    OsRelease,
    parse_bios,
    parse_dgx_release,
    parse_fw_versions,
    parse_kernel_release,
    parse_os_release,
)
from gb10check.reading.parsers.ibdev2netdev import RdmaPort, parse_ibdev2netdev
from gb10check.reading.parsers.iproute import Netdev, Route, parse_ip_addr, parse_ip_route
from gb10check.reading.parsers.iptables import Chain, parse_chain
from gb10check.reading.parsers.kernel_log import KernelLog, parse_kernel_log
from gb10check.reading.parsers.logind import parse_linger
from gb10check.reading.parsers.meminfo import MemInfo, parse_meminfo
from gb10check.reading.parsers.nccl_conf import NcclSetting, parse_conf_lines
from gb10check.reading.parsers.neigh import Neighbour, parse_ip_neigh
from gb10check.reading.parsers.nvidia import (
    KernelModule,
    NvidiaSmiResult,
    parse_modinfo_version,
    parse_module_version,
    parse_nvidia_smi_query,
    parse_proc_driver_version,
)
from gb10check.reading.parsers.ping import PingResult, parse_ping
from gb10check.reading.parsers.rdma_sysfs import UNUSED_GID, RdmaPortState, parse_rdma_ports
from gb10check.reading.parsers.sysctl import parse_flag
from gb10check.reading.parsers.ufw import (
    UfwRule,
    UfwStatus,
    parse_default_input_policy,
    parse_ufw_conf,
    parse_ufw_status,
    parse_user_rules,
)
from gb10check.reading.parsers.vllm_log import LogLine, parse_docker_log
from gb10check.reading.snapshot import NO_SUDO, Probe, Read, Where
from gb10check.reading.transport import DOCKER_C_LOCALE

__all__ = [
    "BIOS",
    "COMPOSE",
    "COMPOSE_CONFIG",
    "COMPOSE_OVERRIDES",
    "CONTAINER",
    "CONTAINER_PROCESSES",
    "CX_FIRMWARE",
    "DEFAULT_NAMES",
    "DGX_RELEASE",
    "DOCKER_IMAGES",
    "DOCKER_INFO",
    "DOCKER_LOGS",
    "DOTENV",
    "GPU_CLOCKS",
    "GROUPS",
    "HF_CACHE_FS",
    "HF_CONFIG",
    "HF_INDEX",
    "HF_LISTING",
    "HF_REVISION",
    "HF_SMALL_FILES",
    "HOSTNAME_ADDRESSES",
    "HOST_NCCL_CONF",
    "IBDEV2NETDEV",
    "IMAGE",
    "IP_ADDR",
    "IP_FORWARD",
    "IP_FORWARD_FILE",
    "IP_ROUTE",
    "KERNEL_LOG",
    "KERNEL_LOG_PATTERN",
    "KERNEL_RELEASE",
    "LAUNCH_SCRIPT",
    "LINGER",
    "LOGIND",
    "LOG_TAIL",
    "MEMINFO",
    "MODINFO_VERSION",
    "MODULE_VERSION",
    "NCCL_CONF",
    "NEIGHBOURS",
    "NETPLAN",
    "NVIDIA_SMI",
    "OS_RELEASE",
    "OVERRIDE_NAMES",
    "PROC_DRIVER_VERSION",
    "RDMA_PORTS",
    "ROOT_READS",
    "SNAPSHOT_READS",
    "UFW_CONF",
    "UFW_DEFAULT",
    "UFW_RULES",
    "UFW_STATUS",
    "UFW_UNIT",
    "WHOAMI",
    "as_root",
    "as_root_reader",
    "compose_config_command",
    "master_pings",
    "ping_over",
    "pings",
    "probes_for",
    "probes_of",
    "q",
    "root_reads",
    "ssh_login",
    "ssh_logins",
]


def as_root(command: str, sudo: bool) -> str:
    fallback = f"sudo -n {command}" if sudo else f"echo {shlex.quote(NO_SUDO)} >&2; exit 126"
    return f'if [ "$(id -u)" = 0 ]; then {command}; else {fallback}; fi'


def as_root_reader(sudo: bool) -> str:
    """A `cat FILE` that may read root-only files (the reader of framed_files_command's loop)."""
    return "sh -c " + shlex.quote(as_root('cat "$1"', sudo)) + " _"


# The root-only reads, as sudo resolves them (secure_path): what a sudoers rule must name exactly.
ROOT_READS: tuple[str, ...] = ("/usr/sbin/ufw status verbose", "/usr/bin/cat /etc/ufw/user.rules", "/usr/bin/dmesg")
# the FORWARD chain and Docker's DOCKER-USER (the address plan: a node that forwards for the ring)
ROOT_READS += ("/usr/sbin/iptables -S FORWARD", "/usr/sbin/iptables -S DOCKER-USER")


def root_reads(netplan_files: list[str]) -> list[str]:
    """Every root-only read of a node's snapshot, one per file: a sudoers rule without wildcards."""
    return [*ROOT_READS, *(f"/usr/bin/cat {shlex.quote(path)}" for path in netplan_files)]


def _always(command: str) -> Callable[[Where], str]:
    return lambda _where: command


def _deployed(command: Callable[[inv.Deployment], str | None]) -> Callable[[Where], str | None]:
    return lambda w: command(w.deployment) if w.deployment is not None else None


def _in_hub(command: Callable[[str], str]) -> Callable[[Where], str | None]:
    return lambda w: command(w.hub) if w.hub is not None else None


def _snapshot_file(name: str) -> Callable[[str], str]:
    return lambda hub: f'{hub}/snapshots/"$(cat {hub}/refs/main)"/{name}'


q = shlex.quote

# -- the driver ----------------------------------------------------------------------------------
PROC_DRIVER_VERSION: Read[KernelModule] = Read(
    "proc_driver_version", _always("cat /proc/driver/nvidia/version"), parse_proc_driver_version
)
MODULE_VERSION: Read[str] = Read("module_version", _always("cat /sys/module/nvidia/version"), parse_module_version)
MODINFO_VERSION: Read[str] = Read("modinfo_version", _always("modinfo -F version nvidia"), parse_modinfo_version)
# nvidia-smi exits 18 (NVML_ERROR_LIB_RM_VERSION_MISMATCH) or 9 (no driver) with a message it parses
NVIDIA_SMI: Read[NvidiaSmiResult] = Read(
    "nvidia_smi_query",
    _always("nvidia-smi --query-gpu=driver_version,name --format=csv,noheader"),
    parse_nvidia_smi_query,
    accept_rc=(0, 9, 18),
    bound=lambda t: t.nvidia_smi_timeout,
)
# the GPU's clocks, power, temperature and clock event reasons (tests_preflight/test_gpu_clocks.py; the decode
# check samples it while it runs); its own read, so a field this nvidia-smi lacks never costs the driver checks
GPU_CLOCKS: Read[GpuClocks] = Read(
    "gpu_clocks", _always(GPU_CLOCKS_QUERY), parse_gpu_clocks, bound=lambda t: t.nvidia_smi_timeout
)
# -- the host ------------------------------------------------------------------------------------
IBDEV2NETDEV: Read[tuple[RdmaPort, ...]] = Read("ibdev2netdev", _always("ibdev2netdev"), parse_ibdev2netdev)
MEMINFO: Read[MemInfo] = Read("meminfo", _always("cat /proc/meminfo"), parse_meminfo)
# every port's state files, its netdev and its used GID slots (with type and netdev), one grep per port
RDMA_PORTS: Read[dict[str, RdmaPortState]] = Read(
    "rdma_ports",
    _always(
        'for p in /sys/class/infiniband/*/ports/*; do [ -d "$p" ] || continue; '
        'echo "=== $p $(ls "${p%/ports/*}/device/net" 2>/dev/null | tr "\n" " ")"; '
        'grep -H . "$p/state" "$p/phys_state" "$p/link_layer" "$p/rate" "$p"/gids/* "$p"/gid_attrs/types/* '
        f'"$p"/gid_attrs/ndevs/* 2>/dev/null | grep -v ":{UNUSED_GID}$"; done; exit 0'
    ),
    parse_rdma_ports,
)
IP_ADDR: Read[dict[str, Netdev]] = Read("ip_addr", _always("ip -j -d addr"), parse_ip_addr)
IP_ROUTE: Read[tuple[Route, ...]] = Read("ip_route", _always("ip -j route"), parse_ip_route)
# what the kernel logged since boot about the ConnectX ports (mlx5), PCIe hotplug and the GPU (NVRM);
# dmesg is root-only where kernel.dmesg_restrict = 1 (Ubuntu's default). Streamed through awk (no copy of the
# log on the node's disk): the matching lines, then how many lines dmesg printed; dmesg's exit status is
# awk's (a failed dmesg prints no count, so it is never read as an empty log)
KERNEL_LOG_PATTERN = "mlx5_core|pciehp|NVRM"
_KERNEL_LOG_AWK = (
    "/^gb10check-dmesg-exit [0-9]+$/ { rc = $2; next } { n++ } $0 ~ p { print } "
    'END { if (rc) exit rc; print "gb10check: kernel log lines " n + 0 }'
)
KERNEL_LOG: Read[KernelLog] = Read(
    "kernel_log",
    lambda w: (
        "{ " + as_root("dmesg", w.node.sudo) + '; echo "gb10check-dmesg-exit $?"; } | '
        f"awk -v p={q(KERNEL_LOG_PATTERN)} {q(_KERNEL_LOG_AWK)}"
    ),
    parse_kernel_log,
    display="dmesg (as root), its mlx5_core, pciehp and NVRM lines",
)
# systemd-logind: RemoveIPC (the main file and every drop-in), and who lingers
LOGIND: Read[list[FileRead]] = Read(
    "logind",
    _always(
        framed_files_command(
            "/etc/systemd/logind.conf /usr/lib/systemd/logind.conf.d/*.conf /run/systemd/logind.conf.d/*.conf "
            "/etc/systemd/logind.conf.d/*.conf"
        )
    ),
    lambda t: parse_framed_files(t, "logind.conf and its drop-ins"),
)
LINGER: Read[list[str]] = Read("linger", _always("ls -1 /var/lib/systemd/linger 2>/dev/null; exit 0"), parse_linger)
# NCCL's system-wide config file on the host (the container's: tests_network/test_nccl_env.py asks docker)
NCCL_CONF = "/etc/nccl.conf"
HOST_NCCL_CONF: Read[list[NcclSetting]] = Read(
    "host_nccl_conf",
    _always(f"if [ -e {NCCL_CONF} ]; then grep -H = {NCCL_CONF}; [ $? -le 1 ]; fi"),
    lambda t: parse_conf_lines(t, f"grep -H = {NCCL_CONF}"),
)
WHOAMI: Read[str] = Read("whoami", _always("id -un"), lambda t: parse_word(t, "id -un"))
# what the node's hostname resolves to (PyTorch's Gloo binds it when GLOO_SOCKET_IFNAME is unset); getent
# exits 2 when it resolves to nothing
HOSTNAME_ADDRESSES: Read[tuple[str, ...]] = Read(
    "hostname_addresses", _always('getent ahostsv4 "$(hostname)"'), parse_getent_hosts, accept_rc=(0, 2)
)
GROUPS: Read[list[str]] = Read("groups", _always("id -Gn"), str.split)
# -- the firewall --------------------------------------------------------------------------------
UFW_STATUS: Read[UfwStatus] = Read(
    "ufw_status",
    lambda w: as_root("ufw status verbose", w.node.sudo),
    parse_ufw_status,
    display="ufw status verbose (as root)",
)
UFW_RULES: Read[list[UfwRule]] = Read(
    "ufw_rules",
    lambda w: as_root("cat /etc/ufw/user.rules", w.node.sudo),
    parse_user_rules,
    display="cat /etc/ufw/user.rules (as root)",
)
UFW_CONF: Read[bool] = Read("ufw_conf", _always("cat /etc/ufw/ufw.conf"), parse_ufw_conf)
UFW_DEFAULT: Read[str] = Read("ufw_default", _always("cat /etc/default/ufw"), parse_default_input_policy)
# systemctl is-enabled exits 1 for "disabled", with the word
UFW_UNIT: Read[str] = Read(
    "ufw_unit",
    _always("systemctl is-enabled ufw.service"),
    lambda t: parse_word(t, "systemctl is-enabled ufw"),
    accept_rc=(0, 1),
)
NETPLAN: Read[list[FileRead]] = Read(
    "netplan",
    lambda w: framed_files_command("/etc/netplan/*.yaml /etc/netplan/*.yml", as_root_reader(w.node.sudo)),
    lambda t: parse_framed_files(t, "/etc/netplan/*.yaml"),
    display="cat /etc/netplan/*.yaml (as root)",
)
# -- docker --------------------------------------------------------------------------------------
# docker's reads check stderr first: with the daemon down, stdout alone reads as "no image" (`[]`); not the
# log, whose stderr is the container's own (with the daemon down its stdout is empty and stderr is read)
DOCKER_INFO: Read[DockerInfo] = Read(
    "docker_info",
    _always("docker info --format " + q("{{json .}}")),
    parse_docker_info,
    check_stderr=client_error("docker info"),
)
DOCKER_IMAGES: Read[list[str]] = Read(
    "docker_images",
    _always("docker image ls --format " + q("{{.Repository}}:{{.Tag}}")),
    parse_image_list,
    check_stderr=client_error("docker image ls"),
)
# docker exits 1 for an image or a container that does not exist: None
IMAGE: Read[Image | None] = Read(
    "image_inspect",
    _deployed(lambda d: f"docker image inspect {q(d.image)}"),
    parse_image_inspect,
    accept_rc=(0, 1),
    check_stderr=client_error("docker image inspect"),
)
CONTAINER: Read[Container | None] = Read(
    "container",
    _deployed(lambda d: f"docker container inspect {q(d.container)}"),
    parse_container_inspect,
    accept_rc=(0, 1),
    check_stderr=client_error("docker container inspect"),
)
# the processes of the running container (gb10check/deployment/launch/running.py): what preflight compares with the
# files (tests_preflight/test_launch_plan.py) and `gb10check plan --running` reads; docker exits 1 when the
# container does not run
CONTAINER_PROCESSES: Read[list[Process]] = Read(
    "container_processes",
    _deployed(lambda d: f"docker exec {DOCKER_C_LOCALE} {q(d.container)} sh -c {q(PROCESSES_SCRIPT)}"),
    parse_processes,
    accept_rc=(0, 1),
)
# the container's log (the service checks read startup, NCCL's transport and known faults from it); docker
# exits 1 for a container that does not exist
LOG_TAIL = 4000
DOCKER_LOGS: Read[list[LogLine]] = Read(
    "docker_logs",
    _deployed(lambda d: f"docker logs --tail {LOG_TAIL} --timestamps {q(d.container)}"),
    parse_docker_log,
    accept_rc=(0,),
)
# -- the deployment's files (the compose is read with the node's .env: gb10check/reading/facts.py) ------------
COMPOSE: Read[str] = Read("compose", _deployed(lambda d: f"cat {q(d.compose_file)}" if d.compose_file else None), str)
# the files `docker compose up` merges over a default-named compose file in its folder
OVERRIDE_NAMES = (
    "compose.override.yaml",
    "compose.override.yml",
    "docker-compose.override.yaml",
    "docker-compose.override.yml",
)
DEFAULT_NAMES = ("compose.yaml", "compose.yml", "docker-compose.yaml", "docker-compose.yml")


def compose_config_command(inventory: inv.Inventory, node: str) -> str | None:
    """The node's own Compose reading the deployment as its launcher's `docker compose up` will: in the
    compose's folder, a default-named file with its override files and COMPOSE_FILE, else `-f` that file;
    the node's env file when it is not the folder's own (`--env-file`); the launcher's shell variables in
    the environment (`NODE_RANK=1 HEADLESS=1 docker compose ...`); the service it starts, when it names
    one (`config SERVICE`: a file whose services share a container_name is only valid one at a time).
    Reads; creates nothing."""
    d = inventory.deployment
    if d is None or d.compose_file is None:
        return None
    launch = inventory.launch_of(node)
    folder, name = posixpath.split(d.compose_file)
    args = "" if name in DEFAULT_NAMES else f" -f {q(d.compose_file)}"
    env_file = inventory.env_file_of(node)
    if env_file is not None and env_file != posixpath.join(folder, ".env"):
        args += f" --env-file {q(env_file)}"
    shell = "".join(f"{k}={q(v)} " for k, v in launch.env.items())
    service = f" {q(launch.service)}" if launch.service else ""
    return (
        f"cd {q(folder or '/')} && docker compose version --short && "
        f"{shell}docker compose{args} config --format json{service}"
    )


def _overrides(d: inv.Deployment) -> str | None:
    if d.compose_file is None:
        return None
    folder, name = posixpath.split(d.compose_file)
    if name not in DEFAULT_NAMES:
        return None
    return framed_files_command(" ".join(q(posixpath.join(folder, o)) for o in OVERRIDE_NAMES))


# judged in gb10check/reading/facts.py: Compose's JSON, its refusal of the file, or no Compose plugin at all
COMPOSE_CONFIG: Read[str] = Read(
    "compose_config", lambda w: compose_config_command(w.inventory, w.node.name), str, accept_rc=(0, 1, 15)
)
COMPOSE_OVERRIDES: Read[list[FileRead]] = Read(
    "compose_overrides",
    lambda w: _overrides(w.deployment) if w.deployment is not None else None,
    lambda t: parse_framed_files(t, "compose override files"),
)


def _dotenv_command(w: Where) -> str | None:
    """The node's env file: a declared one must be there (`cat`: a missing one is file-missing); without one
    declared, the compose folder's .env is read when it exists (Compose's default, optional)."""
    path = w.inventory.env_file_of(w.node.name)
    if path is None:
        return None
    declared = w.inventory.launch_of(w.node.name).env_file or (w.deployment and w.deployment.env_file)
    return f"cat {q(path)}" if declared else f"if [ -e {q(path)} ]; then cat {q(path)}; fi"


DOTENV: Read[dict[str, str]] = Read("dotenv", _dotenv_command, parse_dotenv)
# the node's launch script (inventory: launch = { script = ... }), read with bash's grammar
# (gb10check/deployment/launch)
LAUNCH_SCRIPT: Read[str] = Read(
    "launch_script",
    lambda w: (
        f"cat {q(launch.script)}"
        if (launch := w.inventory.launch_of(w.node.name)).script and launch.runs_on is None
        else None
    ),  # a script another node runs (runs_on) is read there
    str,
)
# -- the model's hub folder ----------------------------------------------------------------------
HF_LISTING: Read[dict[str, Entry]] = Read(
    "hf_listing", _in_hub(lambda h: f"find {h} -printf {q(LISTING_FORMAT)}"), parse_listing
)
HF_REVISION: Read[str] = Read("hf_revision", _in_hub(lambda h: f"cat {h}/refs/main"), parse_revision)
HF_CONFIG: Read[ModelDims] = Read(
    "hf_config", _in_hub(lambda h: "cat " + _snapshot_file("config.json")(h)), parse_model_config
)
# the small files' content, hashed (tests_preflight/test_weights.py; the shards are compared by name and size)
HF_SMALL_FILES: Read[dict[str, str]] = Read(
    "hf_small_files",
    _in_hub(
        lambda h: (
            f'cd {h}/snapshots/"$(cat {h}/refs/main)" && for f in {" ".join(SMALL_FILES)}; do '
            'if [ -e "$f" ]; then sha256sum -- "$f"; fi; done'
        )
    ),
    parse_sha256sums,
)
# the filesystem the HF cache is on (a network one is shared between the nodes)
HF_CACHE_FS: Read[str] = Read("hf_cache_fs", _deployed(lambda d: f"stat -f -c %T {q(d.hf_cache)}"), parse_fs_type)
HF_INDEX: Read[int] = Read(
    "hf_index",
    _in_hub(lambda h: "head -c 65536 " + _snapshot_file("model.safetensors.index.json")(h)),
    parse_index_total_size,
)

# -- what every node must run alike (tests_preflight/test_skew.py): cheap reads, no root -------------
KERNEL_RELEASE: Read[str] = Read("kernel_release", _always("cat /proc/sys/kernel/osrelease"), parse_kernel_release)
OS_RELEASE: Read[OsRelease] = Read("os_release", _always("cat /etc/os-release"), parse_os_release)
BIOS: Read[Bios] = Read("bios", _always("cat /sys/class/dmi/id/bios_version /sys/class/dmi/id/bios_date"), parse_bios)
CX_FIRMWARE: Read[dict[str, str]] = Read(
    "cx_firmware", _always("grep -H . /sys/class/infiniband/*/fw_ver"), parse_fw_versions
)
# DGX OS's release (tests_preflight/test_known_issues.py); a system without the file is no DGX OS
DGX_RELEASE: Read[str | None] = Read(
    "dgx_release",
    _always(f"if [ -e /etc/dgx-release ]; then cat /etc/dgx-release; else echo {q(NO_DGX_RELEASE)}; fi"),
    parse_dgx_release,
)

# -- the wire (the cabling, proven): who answers each peer's address on each rail -------------------


def _neighbours_command(w: Where) -> str | None:
    """One ARP (a one-packet ping) per peer address, out of the netdev of the rail they share, all at
    once; when the peer does not answer, the same out of that netdev for every address of every other
    node (whoever the cable really reaches answers for its own); then the neighbour tables: which MAC
    answered for which address on which netdev."""
    asks = [
        (mine.netdev, other) for rail, mine in w.inventory.members_of(w.node.name) for other in rail.members
        if other.node != w.node.name
    ]  # fmt: skip
    if not asks:
        return None
    every = [(m.node, m.ip) for rail in w.inventory.rails for m in rail.members if m.node != w.node.name]
    parts = []
    for netdev, peer in asks:
        ask = f"ping -n -c 1 -W 1 -I {q(netdev)} {q(peer.ip)} >/dev/null 2>&1"
        others = " ".join(q(ip) for node, ip in dict.fromkeys(every) if node != peer.node)
        if others:
            ask = (
                f'{{ {ask} || for a in {others}; do ping -n -c 1 -W 1 -I {q(netdev)} "$a" >/dev/null 2>&1 & '
                "done; wait; }"
            )
        parts.append(f"{ask} & ")
    return "".join(parts) + "wait; ip -j neigh show"


NEIGHBOURS: Read[tuple[Neighbour, ...]] = Read("neighbours", _neighbours_command, parse_ip_neigh)
# -- the address plan: whether the node forwards what other nodes route through it ----------------
IP_FORWARD_FILE = "/proc/sys/net/ipv4/ip_forward"
IP_FORWARD: Read[bool] = Read(
    "ip_forward", _always(f"cat {IP_FORWARD_FILE}"), lambda t: parse_flag(t, f"cat {IP_FORWARD_FILE}")
)


def _chain(name: str) -> Read[Chain]:
    # iptables exits 1 for a chain that does not exist (DOCKER-USER without Docker): an absent chain
    return Read(
        f"iptables_{name.lower().replace('-', '_')}",
        lambda w: as_root(f"iptables -S {name}", w.node.sudo),
        lambda t: parse_chain(t, name),
        accept_rc=(0, 1),
        display=f"iptables -S {name} (as root)",
    )


FORWARD_CHAIN, DOCKER_USER_CHAIN = _chain("FORWARD"), _chain("DOCKER-USER")

SNAPSHOT_READS: tuple[Read[object], ...] = (
    PROC_DRIVER_VERSION,
    MODULE_VERSION,
    MODINFO_VERSION,
    NVIDIA_SMI,
    GPU_CLOCKS,
    IBDEV2NETDEV,
    RDMA_PORTS,
    IP_ADDR,
    IP_ROUTE,
    KERNEL_LOG,
    LOGIND,
    LINGER,
    HOST_NCCL_CONF,
    MEMINFO,
    WHOAMI,
    HOSTNAME_ADDRESSES,
    GROUPS,
    UFW_STATUS,
    UFW_RULES,
    UFW_CONF,
    UFW_DEFAULT,
    UFW_UNIT,
    NETPLAN,
    DOCKER_INFO,
    DOCKER_IMAGES,
    IMAGE,
    CONTAINER,
    CONTAINER_PROCESSES,
    DOCKER_LOGS,
    COMPOSE,
    COMPOSE_CONFIG,
    COMPOSE_OVERRIDES,
    DOTENV,
    LAUNCH_SCRIPT,
    HF_LISTING,
    HF_REVISION,
    HF_CONFIG,
    HF_INDEX,
    HF_SMALL_FILES,
    HF_CACHE_FS,
    # skew across the nodes
    KERNEL_RELEASE,
    OS_RELEASE,
    BIOS,
    CX_FIRMWARE,
    DGX_RELEASE,
    NEIGHBOURS,
    IP_FORWARD,
    FORWARD_CHAIN,
    DOCKER_USER_CHAIN,
)


def ssh_login(target: inv.Member, connect_timeout: float) -> Read[str]:
    """A non-interactive SSH login to `target`'s node over its fabric address (from the node whose
    snapshot runs it: one probe per peer and rail, so they run at once and each has its own verdict).
    Judged raw."""
    timeout = max(1, round(connect_timeout))
    command = (
        f"ssh -n -o BatchMode=yes -o ConnectTimeout={timeout} -o StrictHostKeyChecking=yes "
        f"-o PasswordAuthentication=no {q(target.ip)} true"
    )
    return Read(f"ssh_to:{target.node}:{target.netdev}", _always(command), str, bound=lambda _t: float(timeout + 5))


def ssh_logins(inventory: inv.Inventory, node: inv.Node) -> list[Read[str]]:
    """The node logs in to every node it shares a rail with, over each rail."""
    t = inventory.ssh.connect_timeout
    return [
        ssh_login(other, t) for rail, _ in inventory.members_of(node.name) for other in rail.members
        if other.node != node.name
    ]  # fmt: skip


PING_COUNT, PING_INTERVAL = 2, 0.2  # 0.2 s: the shortest interval ping allows without root (one interval per snapshot)


def ping_over(mine: inv.Member, target: inv.Member) -> Read[PingResult]:
    """Ping `target`'s address out of this node's netdev on their rail (`mine`), don't-fragment, with
    the largest payload the netdev's MTU carries (a path that drops full frames shows as loss)."""
    return _ping(f"ping:{target.node}:{mine.netdev}", mine.netdev, target.ip)


def _ping(name: str, netdev: str, ip: str) -> Read[PingResult]:
    size = f"$(( $(cat /sys/class/net/{q(netdev)}/mtu) - 28 ))"
    command = f"ping -n -c {PING_COUNT} -i {PING_INTERVAL:g} -W 1 -M do -s {size} -I {q(netdev)} {q(ip)}"
    # ping exits 1 when nothing came back, with its summary: a verdict, not an error
    return Read(name, _always(command), parse_ping, accept_rc=(0, 1), bound=lambda _t: 5.0)


def pings(inventory: inv.Inventory, node: inv.Node) -> list[Read[PingResult]]:
    """The node pings every node of higher rank it shares a rail with, on that rail (a reply proves
    both directions; the pair's lower rank asks)."""
    rank = {n.name: n.rank for n in inventory.nodes}
    return [
        ping_over(mine, other) for rail, mine in inventory.members_of(node.name) for other in rail.members
        if rank[other.node] > node.rank
    ]  # fmt: skip


def master_pings(inventory: inv.Inventory, node: inv.Node) -> list[Read[PingResult]]:
    """A follower pings the master address out of its control-plane netdev, as its ranks will reach
    rank 0 (full frames, don't fragment); rank 0, or an inventory without them, has none."""
    netdev, master = inventory.control_netdev(node.name), inventory.master_address
    if node.rank == 0 or netdev is None or master is None:
        return []
    return [_ping(f"master_ping:{netdev}", netdev, master)]


def probes_for(inventory: inv.Inventory, node: inv.Node) -> tuple[Probe, ...]:
    """The probes of one node's snapshot: every declared read that applies to it."""
    reads = (*SNAPSHOT_READS, *ssh_logins(inventory, node), *pings(inventory, node), *master_pings(inventory, node))
    return probes_of(reads, inventory, node)


def probes_of(reads: tuple[Read[object], ...], inventory: inv.Inventory, node: inv.Node) -> tuple[Probe, ...]:
    """The probes of these reads on one node (a read that does not apply there has none)."""
    where = Where(inventory, node)
    probes = []
    for read in reads:
        command = read.command(where)
        if command is not None:
            bound = read.bound(inventory.thresholds) if read.bound else None
            probes.append(Probe(read.name, command, bound, read.display))
    return tuple(probes)
