"""A read inside the deployment's container, on every node at once: `docker exec` into the running
container, else a throwaway `docker run --rm --pull never --network none` of the image (never a
pull, no network), each bounded by `docker_run_timeout`. What a node could not answer is its error
(with its hint), never a guess: the image missing, docker down, a timeout, an unexpected exit."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import TypeVar

from gb10check import inventory as inv
from gb10check.errors import CommandTimeout, GB10Error, clip
from gb10check.reading import probes
from gb10check.reading.facts import container
from gb10check.reading.node import ClusterNodes, NodeSession
from gb10check.reading.parallel import map_parallel
from gb10check.reading.snapshot import Snapshot
from gb10check.reading.transport import DOCKER_C_LOCALE

__all__ = ["T", "container_command", "read_in_containers"]

T = TypeVar("T")


def container_command(deployment: inv.Deployment, running: bool, program: str, args: str) -> str:
    """`program args` in the running container, else in a throwaway container of the image."""
    if running:
        return f"docker exec {DOCKER_C_LOCALE} {shlex.quote(deployment.container)} {program} {args}"
    return (
        f"docker run --rm --pull never --network none {DOCKER_C_LOCALE} --entrypoint {program} "
        f"{shlex.quote(deployment.image)} {args}"
    )


def read_in_containers(
    cluster: ClusterNodes,
    inventory: inv.Inventory,
    deployment: inv.Deployment,
    *,
    what: str,
    program: str,
    args: Callable[[Snapshot, NodeSession], str],
    accept_rc: tuple[int, ...],
    parse: Callable[[str, str], T],
) -> dict[str, T | GB10Error]:
    """Per node: `parse(stdout, where)` of `program args(snapshot, node)` inside the container, or the
    node's error. `what` names the read in the image-missing error ("its NCCL config")."""

    def one(name: str) -> tuple[str, T | GB10Error]:
        node = cluster[name]
        try:
            snap = node.snapshot()
            c = container(snap)
            running = c is not None and c.running
            if not running and snap.fact(probes.IMAGE) is None:
                return name, GB10Error(
                    f"{name}: the image {deployment.image} is not on this node: {what} cannot be read",
                    hint_ids=("image-missing",),
                )
            command = container_command(deployment, running, program, args(snap, node))
            res = node.run(command, inventory.thresholds.docker_run_timeout)
            where = f"`{clip(command, 200)}` on {name}"
            if res.timed_out:
                return name, CommandTimeout(f"{where} timed out after {res.duration:.0f} s")
            if res.rc not in accept_rc or res.stderr.strip():
                return name, GB10Error(
                    f"{where}: exit {res.rc}: {clip(res.stderr.strip(), 300)}", hint_ids=("unexpected-output",)
                )
            return name, parse(res.stdout, where)
        except GB10Error as exc:
            return name, exc

    cluster.gather()
    return dict(map_parallel(one, cluster.nodes, name="gb10check-in-container"))
