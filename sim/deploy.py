"""A simulated node's deployment and system files, laid out under the node's own root folder.

The sim mounts these over the real paths inside the node's mount namespace (/home, /root,
/etc/netplan, /etc/ufw, /etc/default/ufw, /etc/passwd), so the suite reads them over SSH at the
paths the inventory names. Everything here is made from the scenario; nothing is copied from a
real deployment.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CHECKPOINTS",
    "COMPOSE_TEMPLATE",
    "COMPOSE_UP_TEMPLATE",
    "DOCKER_RUN_TEMPLATE",
    "GIB",
    "MODEL_CONFIG",
    "SHARDS",
    "SOCKET_VARS",
    "UNPRIVILEGED_UID",
    "ComposeCluster",
    "build_hf_cache",
    "digest",
    "place",
    "render_compose",
    "render_env",
    "render_netplan",
    "write_passwd",
]

COMPOSE_TEMPLATE = Path(__file__).parent / "deploy" / "compose.yml"
DOCKER_RUN_TEMPLATE = Path(__file__).parent / "deploy" / "docker-run.sh"  # the same deployment as a launch script
COMPOSE_UP_TEMPLATE = (
    Path(__file__).parent / "deploy" / "compose-up.sh"
)  # the compose, its rank in the launcher's shell
GIB = 1024**3
SOCKET_VARS = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME")

# Checkpoints the sim can lay out: config.json values of a Qwen3-Next-style hybrid model (48
# layers, every 4th full attention, 2 KV heads of 256, 36 Gated DeltaNet layers of 48 x 128 x 128)
# and the total weight size of each variant.
CHECKPOINTS: dict[str, dict[str, Any]] = {
    "fp8": {"total_size": int(172.78 * GIB), "quantization_config": {"quant_method": "fp8", "fmt": "e4m3"}},
    "bf16": {"total_size": int(335.28 * GIB), "quantization_config": None},
}
MODEL_CONFIG = {
    "architectures": ["Qwen3NextForCausalLM"],
    "model_type": "qwen3_next",
    "hidden_size": 2048,
    "num_hidden_layers": 48,
    "full_attention_interval": 4,
    "num_attention_heads": 16,
    "num_key_value_heads": 2,
    "head_dim": 256,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 48,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "linear_conv_kernel_dim": 4,
    "max_position_embeddings": 262144,
    "torch_dtype": "bfloat16",
}
SHARDS = 40


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def place(root: Path, path: str) -> Path:
    """`path` (absolute, as on the node) under the node's root folder."""
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


@dataclass(frozen=True)
class ComposeCluster:
    """What a node's compose says about a ring or a switch (the template is the pair's own)."""

    topology: str  # "ring" or "switch"
    size: int
    master: str  # rank 0's control-plane address
    control: str  # the control plane's netdev (NCCL, Gloo and TP sockets)
    devices: tuple[str, ...]  # the node's RDMA devices on the fabric (NCCL_IB_HCA, exact names)


def _for_cluster(text: str, cluster: ComposeCluster) -> str:
    """The pair's compose made the cluster's: TP and nnodes N, the master on the control plane, the
    sockets on its netdev, NCCL_IB_HCA exactly the node's fabric devices; on a ring the halves kept
    apart (NCCL_IB_MERGE_NICS=0) with subnet-aware routing, the ring algorithm from four nodes on."""
    n, item = cluster.size, "\n      - "
    shape = "in a ring" if cluster.topology == "ring" else "on a QSFP switch"
    merge_nics = "NCCL_IB_MERGE_NICS=1"
    if cluster.topology == "ring":
        merge_nics = item.join(
            ["NCCL_IB_MERGE_NICS=0", "NCCL_IB_SUBNET_AWARE_ROUTING=1", *(["NCCL_ALGO=Ring"] if n >= 4 else [])]
        )
    replacements = {
        "across two GB10 nodes.": f"across {n} GB10 nodes ({shape}).",
        "- MASTER_ADDR=169.254.94.252": f"- MASTER_ADDR={cluster.master}",
        **{f"- {var}=enp1s0f0np0": f"- {var}={cluster.control}" for var in SOCKET_VARS},
        "- NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0": "- NCCL_IB_HCA==" + ",".join(cluster.devices),
        "- NCCL_IB_MERGE_NICS=1": f"- {merge_nics}",
        "--tensor-parallel-size 2 --nnodes 2": f"--tensor-parallel-size {n} --nnodes {n}",
    }
    for old, new in replacements.items():
        if text.count(old) != 1:
            raise ValueError(f"sim/deploy/compose.yml must say {old!r} once, to be rendered for a {cluster.topology}")
        text = text.replace(old, new)
    return text


def render_compose(edits: list[tuple[str, str]], cluster: ComposeCluster | None = None) -> str:
    """The node's compose: the template (the pair's), made the cluster's if not a pair, then the scenario's edits."""
    text = COMPOSE_TEMPLATE.read_text(encoding="utf-8")
    if cluster is not None:
        text = _for_cluster(text, cluster)
    for old, new in edits:
        if old not in text:
            raise ValueError(f"compose edit: {old!r} does not occur in sim/deploy/compose.yml")
        text = text.replace(old, new)
    return text


def render_env(values: dict[str, str]) -> str:
    return "# this node's part of the deployment\n" + "".join(f"{k}={v}\n" for k, v in values.items())


def build_hf_cache(folder: Path, repo: str, spec: dict[str, Any]) -> None:
    """models--ORG--NAME with refs/main, blobs (sparse files of the real sizes) and snapshot links."""
    checkpoint = CHECKPOINTS[spec.get("checkpoint", "fp8")]
    revision = spec.get("revision", hashlib.sha1(repo.encode()).hexdigest())
    total = checkpoint["total_size"]
    config = dict(MODEL_CONFIG)
    if checkpoint["quantization_config"]:
        config["quantization_config"] = checkpoint["quantization_config"]
    config.update(spec.get("config", {}))
    shard = total // SHARDS
    names = [f"model-{i:05d}-of-{SHARDS:05d}.safetensors" for i in range(1, SHARDS + 1)]
    index = {
        "metadata": {"total_size": total},
        "weight_map": {f"model.layers.{i}.weight": n for i, n in enumerate(names)},
    }
    files: dict[str, bytes | int] = {
        "config.json": json.dumps(config, indent=2).encode(),
        "generation_config.json": b'{"do_sample": true, "temperature": 0.6}\n',
        "tokenizer.json": b'{"version": "1.0"}\n',
        "tokenizer_config.json": b'{"model_max_length": 262144}\n',
        "model.safetensors.index.json": json.dumps(index, indent=2).encode(),
    }
    for i, name in enumerate(names):
        files[name] = shard + (total - shard * SHARDS if i == 0 else 0)
    for name in spec.get("missing_files", []):
        files.pop(name, None)
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(revision)
    snap = folder / "snapshots" / revision
    (folder / "blobs").mkdir(parents=True)
    snap.mkdir(parents=True)
    dereferenced = spec.get("dereferenced", False)
    for name, content in files.items():
        blob = folder / "blobs" / hashlib.sha256(f"{repo}/{revision}/{name}".encode()).hexdigest()
        target = snap / name if dereferenced else blob
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            with target.open("wb") as fh:
                fh.truncate(content)  # sparse: the real size, no memory
        if not dereferenced:
            (snap / name).symlink_to(os.path.relpath(blob, snap))
    for path in folder.rglob("*"):
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)
    for name in spec.get("unreadable", []):  # as after a root-run download: owner nobody, mode 600
        content_path = (snap / name).resolve()
        content_path.chmod(0o600)
        os.chown(content_path, 65534, 65534)


def render_netplan(links: dict[str, str]) -> str:
    """links: netdev -> "link-local" or "addr/prefix"."""
    lines = ["network:", "  version: 2", "  ethernets:"]
    for netdev, how in links.items():
        lines.append(f"    {netdev}:")
        lines.append("      link-local: [ ipv4 ]" if how == "link-local" else f"      addresses: [ {how} ]")
    return "\n".join(lines) + "\n"


UNPRIVILEGED_UID = 1000


def write_passwd(etc: Path, users: list[str], unprivileged: bool = False) -> None:
    """The node's /etc/passwd and /etc/group: `users` first, then the machine's own entries.

    Normally all of `users` are uid 0: the suite logs in as root and the node calls that account
    users[0] (what `id -un` prints). With `unprivileged`, users[0] is an ordinary account (uid
    1000, its own group) and the suite logs in as it.
    """
    lines = [f"{u}:x:0:0:{u}:/home/{u}:/bin/sh\n" for u in users]
    # the suite logs in as root: with /bin/sh, no dotfile of this machine's root (its ~/.bashrc) runs in the node
    lines.append("root:x:0:0:root:/root:/bin/sh\n")
    groups = ""
    if unprivileged:
        name, uid = users[0], UNPRIVILEGED_UID
        lines[0] = f"{name}:x:{uid}:{uid}:{name}:/home/{name}:/bin/sh\n"
        groups = f"{name}:x:{uid}:\n"
    (etc / "passwd").write_text("".join(lines) + Path("/etc/passwd").read_text(encoding="utf-8"))
    (etc / "group").write_text(groups + Path("/etc/group").read_text(encoding="utf-8"))
