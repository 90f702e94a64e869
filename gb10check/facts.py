"""Facts the checks share, read from a node's snapshot (no I/O of its own beyond the snapshot)."""

from __future__ import annotations

import posixpath

from gb10check import compose
from gb10check import inventory as inv
from gb10check.node import Snapshot
from gb10check.parsers.docker import Container, parse_container_inspect
from gb10check.parsers.nvidia import parse_module_version, parse_proc_driver_version
from gb10check.vllm_command import VllmRun, rank_run


def loaded_module(snap: Snapshot) -> str | None:
    """The loaded NVIDIA kernel module's version; None when no module is loaded."""
    if snap.raw("proc_driver_version").ok:
        return snap.parsed("proc_driver_version", parse_proc_driver_version).version
    if snap.raw("module_version").ok:
        return snap.parsed("module_version", parse_module_version)
    return None


def container(snap: Snapshot) -> Container | None:
    """The deployment's container, None when it does not exist (docker answers 1 for that)."""
    return snap.parsed("container", parse_container_inspect, accept_rc=(0, 1))


def dotenv(snap: Snapshot, deployment: inv.Deployment) -> dict[str, str]:
    return snap.parsed("dotenv", lambda text: compose.parse_dotenv(text, deployment.env_file))


def compose_service(snap: Snapshot, deployment: inv.Deployment) -> compose.ComposeService:
    """The compose's vLLM service as Docker Compose reads it on this node (with this node's .env)."""
    env = dotenv(snap, deployment)
    return snap.parsed(
        "compose",
        lambda text: compose.load_service(
            text,
            env,
            container=deployment.container,
            what=deployment.compose_file,
            compose_dir=posixpath.dirname(deployment.compose_file),
            env_files={deployment.env_file: env},
        ),
    )


def vllm_run(snap: Snapshot, deployment: inv.Deployment, rank: int) -> VllmRun:
    return rank_run(compose_service(snap, deployment), rank, deployment.compose_file)
