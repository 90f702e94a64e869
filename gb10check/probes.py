"""The snapshot's probes for one node of an inventory: every cheap read-only fact, one round trip.

Probes that read root-only files go through `as_root`: directly when the session is root, else
`sudo -n` (never a prompt) when the inventory allows sudo on that node, else a clear refusal.
"""

from __future__ import annotations

import shlex

from gb10check import inventory as inv
from gb10check.parsers.framed import framed_files_command
from gb10check.parsers.hfcache import LISTING_FORMAT
from gb10check.snapshot import Probe

NO_SUDO = "gb10check: needs root; the session is not root and the inventory sets sudo = false for this node"


# The root-only reads, as sudo resolves them (secure_path): what a sudoers rule must name exactly.
ROOT_READS = ("/usr/sbin/ufw status verbose", "/usr/bin/cat /etc/ufw/user.rules")


def root_reads(netplan_files: list[str]) -> list[str]:
    """Every root-only read of a node's snapshot, one per file: a sudoers rule without wildcards."""
    return [*ROOT_READS, *(f"/usr/bin/cat {shlex.quote(path)}" for path in netplan_files)]


def as_root(command: str, sudo: bool) -> str:
    fallback = f"sudo -n {command}" if sudo else f"echo {shlex.quote(NO_SUDO)} >&2; exit 126"
    return f'if [ "$(id -u)" = 0 ]; then {command}; else {fallback}; fi'


def hub_folder(hf_cache: str, model: str) -> str:
    """Where the hub keeps a model: <cache>/hub/models--ORG--NAME."""
    return f"{hf_cache.rstrip('/')}/hub/models--{model.replace('/', '--')}"


def _base(node: inv.Node, t: inv.Thresholds) -> list[Probe]:
    q = shlex.quote
    return [
        Probe("proc_driver_version", "cat /proc/driver/nvidia/version"),
        Probe("module_version", "cat /sys/module/nvidia/version"),
        Probe("modinfo_version", "modinfo -F version nvidia"),
        Probe(
            "nvidia_smi_query",
            "nvidia-smi --query-gpu=driver_version,name --format=csv,noheader",
            timeout=t.nvidia_smi_timeout,
        ),
        Probe("ibdev2netdev", "ibdev2netdev"),
        Probe("meminfo", "cat /proc/meminfo"),
        Probe("whoami", "id -un"),
        Probe("groups", "id -Gn"),
        Probe("ufw_status", as_root("ufw status verbose", node.sudo), display="ufw status verbose (as root)"),
        Probe("ufw_rules", as_root("cat /etc/ufw/user.rules", node.sudo), display="cat /etc/ufw/user.rules (as root)"),
        Probe("ufw_conf", "cat /etc/ufw/ufw.conf"),
        Probe("ufw_default", "cat /etc/default/ufw"),
        Probe("ufw_unit", "systemctl is-enabled ufw.service"),
        Probe(
            "netplan",
            framed_files_command("/etc/netplan/*.yaml /etc/netplan/*.yml", as_root_reader(node.sudo)),
            display="cat /etc/netplan/*.yaml (as root)",
        ),
        Probe("docker_info", "docker info --format " + q("{{json .}}")),
        Probe("docker_images", "docker image ls --format " + q("{{.Repository}}:{{.Tag}}")),
    ]


def as_root_reader(sudo: bool) -> str:
    """A `cat FILE` that may read root-only files (the reader of framed_files_command's loop)."""
    return "sh -c " + shlex.quote(as_root('cat "$1"', sudo)) + " _"


def _deployment(d: inv.Deployment, model: str | None) -> list[Probe]:
    q = shlex.quote
    out = [
        Probe("image_inspect", f"docker image inspect {q(d.image)}"),
        Probe("container", f"docker container inspect {q(d.container)}"),
        Probe("compose", f"cat {q(d.compose_file)}"),
        Probe("dotenv", f"cat {q(d.env_file)}"),
    ]
    if model:
        folder = q(hub_folder(d.hf_cache, model))
        snapshot = f'{folder}/snapshots/"$(cat {folder}/refs/main)"'
        out += [
            Probe("hf_listing", f"find {folder} -printf {q(LISTING_FORMAT)}"),
            Probe("hf_revision", f"cat {folder}/refs/main"),
            Probe("hf_config", f"cat {snapshot}/config.json"),
            Probe("hf_index", f"head -c 65536 {snapshot}/model.safetensors.index.json"),
        ]
    return out


def ssh_probe(peer: str, netdev: str) -> str:
    """The name of rank 0's probe that logs in to `peer` over the QSFP address on `netdev`."""
    return f"ssh_to:{peer}:{netdev}"


def _ssh_mesh(inventory: inv.Inventory, this: inv.Node) -> list[Probe]:
    """From rank 0: a non-interactive SSH login to every peer over each of its QSFP addresses
    (one probe each, so they run at once and each has its own verdict)."""
    timeout = max(1, round(inventory.ssh.connect_timeout))
    return [
        Probe(
            ssh_probe(peer, link.netdev),
            f"ssh -n -o BatchMode=yes -o ConnectTimeout={timeout} -o StrictHostKeyChecking=yes "
            f"-o PasswordAuthentication=no {shlex.quote(link.ip(peer))} true",
            timeout=float(timeout + 5),
        )
        for link in inventory.links
        for peer in link.addresses
        if peer != this.name
    ]


def probes_for(inventory: inv.Inventory, node: inv.Node) -> tuple[Probe, ...]:
    probes = _base(node, inventory.thresholds)
    if inventory.deployment is not None:
        model = inventory.service.model if inventory.service else None
        probes += _deployment(inventory.deployment, model)
    if node.rank == 0 and len(inventory.nodes) > 1 and inventory.links:
        probes += _ssh_mesh(inventory, node)
    return tuple(probes)
