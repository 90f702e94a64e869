"""Facts the checks share, derived from a node's snapshot (no I/O of its own beyond the snapshot)."""

from __future__ import annotations

import posixpath

from gb10check import compose, probes
from gb10check import inventory as inv
from gb10check.parsers.docker import Container
from gb10check.snapshot import Snapshot
from gb10check.vllm_command import VllmRun, rank_run


def loaded_module(snap: Snapshot) -> str | None:
    """The loaded NVIDIA kernel module's version; None when no module is loaded."""
    if snap.raw(probes.PROC_DRIVER_VERSION).ok:
        return snap.fact(probes.PROC_DRIVER_VERSION).version
    if snap.raw(probes.MODULE_VERSION).ok:
        return snap.fact(probes.MODULE_VERSION)
    return None


def container(snap: Snapshot) -> Container | None:
    """The deployment's container, None when it does not exist (docker answers 1 for that)."""
    return snap.fact(probes.CONTAINER)


def dotenv(snap: Snapshot, deployment: inv.Deployment) -> dict[str, str]:
    return snap.derived(
        f"dotenv:{deployment.env_file}",
        lambda: snap.fact(probes.DOTENV, lambda text: compose.parse_dotenv(text, deployment.env_file)),
    )


def compose_service(snap: Snapshot, deployment: inv.Deployment) -> compose.ComposeService:
    """The compose's vLLM service as Docker Compose reads it on this node (with this node's .env)."""

    def read() -> compose.ComposeService:
        env = dotenv(snap, deployment)
        return snap.fact(
            probes.COMPOSE,
            lambda text: compose.load_service(
                text,
                env,
                container=deployment.container,
                what=deployment.compose_file,
                compose_dir=posixpath.dirname(deployment.compose_file),
                env_files={deployment.env_file: env},
            ),
        )

    return snap.derived(f"compose:{deployment.compose_file}", read)


def vllm_run(snap: Snapshot, deployment: inv.Deployment, rank: int) -> VllmRun:
    service = compose_service(snap, deployment)
    return snap.derived(
        f"run:{deployment.compose_file}:{rank}", lambda: rank_run(service, rank, deployment.compose_file)
    )
