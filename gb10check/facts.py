"""Facts the checks share, derived from a node's snapshot (no I/O of its own beyond the snapshot)."""

from __future__ import annotations

import posixpath

from gb10check import compose, compose_fallback, probes, redact
from gb10check import inventory as inv
from gb10check.errors import CommandTimeout, ComposeRejected, clip
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
        lambda: snap.fact(probes.DOTENV, lambda text: compose_fallback.parse_dotenv(text, deployment.env_file)),
    )


def compose_service(snap: Snapshot, deployment: inv.Deployment) -> compose.ComposeService:
    """The compose's vLLM service as the node's Docker Compose will create it (with this node's .env);
    gb10check's own reader where the node has no Compose plugin (the service's `reader` says which)."""

    def read() -> compose.ComposeService:
        text = snap.fact(probes.COMPOSE)  # the file itself first: a missing one keeps its own hint
        res = snap.raw(probes.COMPOSE_CONFIG)
        if res.timed_out:
            raise CommandTimeout(f"{snap.node}: `{res.command}` timed out after {res.duration:.1f} s")
        # no docker at all (the docker checks fail for that) or no Compose plugin: the file is still judged
        no_plugin = res.rc == 127 or compose.NO_PLUGIN.search(res.stderr)
        if not no_plugin and res.rc != 0:
            raise ComposeRejected(
                f"{snap.node}: docker compose rejects {deployment.compose_file} (`docker compose up` would too): "
                f"{clip(res.stderr.strip(), 400)}"
            )
        if not no_plugin:
            service = snap.fact(
                probes.COMPOSE_CONFIG,
                lambda out: compose.parse_compose_config(
                    out, container=deployment.container, what=f"docker compose config ({deployment.compose_file})"
                ),
            )
        else:
            env = dotenv(snap, deployment)
            overrides = snap.fact(probes.COMPOSE_OVERRIDES) if probes.COMPOSE_OVERRIDES.name in snap.results else []
            service = compose_fallback.load_service(
                text,
                env,
                container=deployment.container,
                what=deployment.compose_file,
                compose_dir=posixpath.dirname(deployment.compose_file),
                env_files={deployment.env_file: env},
                overrides=tuple(f.path for f in overrides),
                why=f"the node's docker says: {clip(res.stderr.strip().splitlines()[0], 120)}",
            )
        redact.register_secret_values(service.environment)
        return service

    return snap.derived(f"compose:{deployment.compose_file}", read)


def vllm_run(snap: Snapshot, deployment: inv.Deployment, rank: int) -> VllmRun:
    service = compose_service(snap, deployment)
    return snap.derived(
        f"run:{deployment.compose_file}:{rank}", lambda: rank_run(service, rank, deployment.compose_file)
    )
