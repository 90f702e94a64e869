"""Facts the checks share, derived from a node's snapshot (no I/O of its own beyond the snapshot).

The launch plan of a rank (gb10check/deployment/launch) is the one fact every deployment check reads: `plan`.
"""

from __future__ import annotations

import posixpath

from gb10check import inventory as inv
from gb10check.deployment import compose, compose_fallback
from gb10check.deployment.launch.docker_run import DockerRun, run_plan
from gb10check.deployment.launch.from_compose import compose_plan
from gb10check.deployment.launch.from_script import ScriptStart, read_script, started_by, started_remotely
from gb10check.deployment.launch.plan import LaunchPlan
from gb10check.deployment.shell.state import Ran
from gb10check.errors import CommandTimeout, ComposeRejected, GB10Error, ParseError, clip
from gb10check.reading import probes
from gb10check.reading.parsers.docker import Container, Image
from gb10check.reading.snapshot import Snapshot
from gb10check.safe_text import redact

__all__ = ["compose_service", "container", "dotenv", "image", "launch_script", "loaded_module", "plan"]


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


def dotenv(snap: Snapshot, inventory: inv.Inventory) -> dict[str, str]:
    """The node's env file as Compose reads it ({} when there is none and none is declared)."""
    path = inventory.env_file_of(snap.node) or ".env"
    return snap.derived(
        f"dotenv:{path}", lambda: snap.fact(probes.DOTENV, lambda text: compose_fallback.parse_dotenv(text, path))
    )


def _env_file_line(snap: Snapshot, inventory: inv.Inventory, said: str) -> str:
    """Compose names the env file's line it refuses ("line 8: key cannot contain a space"); gb10check's
    reader of the same file quotes it (masked), so the operator sees the line without opening the file."""
    path = inventory.env_file_of(snap.node) or ".env"
    if posixpath.basename(path) not in said or probes.DOTENV.name not in snap.results:
        return ""
    try:
        dotenv(snap, inventory)
    except GB10Error as e:
        return f" (gb10check's reader: {e})" if isinstance(e, ParseError) else ""
    return ""


def compose_service(
    snap: Snapshot,
    inventory: inv.Inventory,
    shell: tuple[dict[str, str], str] | None = None,
    service_name: str | None = None,
) -> compose.ComposeService:
    """The compose's vLLM service as the node's Docker Compose will create it (with this node's env file and
    launcher's shell); gb10check's own reader where the node has no Compose plugin (`reader` says which), or
    where the launcher's shell is read from its script (`shell`: its variables and where they are set), which
    the node's `docker compose config`, run before the script was read, did not have."""
    deployment = inventory.deployment
    assert deployment is not None and deployment.compose_file is not None
    compose_file = deployment.compose_file
    launch = inventory.launch_of(snap.node)
    shell_env, shell_why = shell if shell is not None else (launch.env, "")
    chosen = launch.service or service_name  # the inventory's, else the one the script's `up` names

    def read() -> compose.ComposeService:
        text = snap.fact(probes.COMPOSE)  # the file itself first: a missing one keeps its own hint
        res = snap.raw(probes.COMPOSE_CONFIG)
        if res.timed_out:
            raise CommandTimeout(f"{snap.node}: `{res.command}` timed out after {res.duration:.1f} s")
        # no docker at all (the docker checks fail for that) or no Compose plugin: the file is still judged
        no_plugin = res.rc == 127 or compose.NO_PLUGIN.search(res.stderr)
        if not no_plugin and res.rc != 0 and not shell_why:
            raise ComposeRejected(
                f"{snap.node}: docker compose rejects {deployment.compose_file} (`docker compose up` would too): "
                f"{clip(res.stderr.strip(), 400)}{_env_file_line(snap, inventory, res.stderr)}",
                node=snap.node,
            )
        if not no_plugin and not shell_why:
            service = snap.fact(
                probes.COMPOSE_CONFIG,
                lambda out: compose.parse_compose_config(
                    out,
                    container=deployment.container,
                    what=f"docker compose config ({deployment.compose_file})",
                    service=chosen,
                ),
            )
        else:
            env = dotenv(snap, inventory)
            overrides = snap.fact(probes.COMPOSE_OVERRIDES) if probes.COMPOSE_OVERRIDES.name in snap.results else []
            env_file = inventory.env_file_of(snap.node)
            service = compose_fallback.load_service(
                text,
                {**env, **shell_env},  # the launcher's shell wins over the .env in Compose's interpolation
                container=deployment.container,
                what=compose_file,
                compose_dir=posixpath.dirname(compose_file),
                env_files={env_file: env} if env_file else {},
                overrides=tuple(f.path for f in overrides),
                why=shell_why or f"the node's docker says: {clip(res.stderr.strip().splitlines()[0], 120)}",
                service=chosen,
            )
        redact.register_secret_values(service.environment)
        return service

    key = f"compose:{deployment.compose_file}" + (f":{sorted(shell_env.items())}" if shell_why else "")
    return snap.derived(key, read)


def image(snap: Snapshot) -> Image | None:
    """The deployment image as the node's docker has it (its ENV, entrypoint and command); None when it is
    not there or docker cannot be asked (the image and docker checks say which)."""
    try:
        return snap.fact(probes.IMAGE)
    except GB10Error:
        return None


def launch_script(snap: Snapshot, inventory: inv.Inventory, runs_on: Snapshot | None = None) -> ScriptStart:
    """What the node's launch script starts its rank with (gb10check/deployment/launch/from_script.py). A script another
    node runs (launch.runs_on) is read from that node's snapshot (`runs_on`), and what it sends this node
    over ssh is the start."""
    deployment = inventory.deployment
    assert deployment is not None
    launch = inventory.launch_of(snap.node)
    assert launch.script is not None
    script = launch.script
    if launch.runs_on is not None and runs_on is None:
        raise ParseError(script, f"the script runs on {launch.runs_on}, whose snapshot was not read", script)

    def read() -> ScriptStart:
        text = (runs_on or snap).fact(probes.LAUNCH_SCRIPT)
        reading = read_script(text, script=script, args=launch.args, env=launch.env, files=None)
        if launch.runs_on is not None:
            hosts = inventory.addresses_of(snap.node)
            return started_remotely(reading, hosts=hosts, container=deployment.container, image=deployment.image)
        return started_by(reading, container=deployment.container, image=deployment.image)

    return snap.derived(f"script:{script}", read)


def plan(snap: Snapshot, inventory: inv.Inventory, rank: int, runs_on: Snapshot | None = None) -> LaunchPlan:
    """The rank's launch plan, from the node's deployment files as its launcher starts them: its launch
    script's `docker run`, or the compose (with the launcher's shell, the script's where it runs compose)."""
    deployment = inventory.deployment
    assert deployment is not None
    launch = inventory.launch_of(snap.node)

    def from_docker_run(ran: Ran, run: DockerRun) -> LaunchPlan:
        img = image(snap) if run.image == deployment.image else None
        return run_plan(run, ran, node=snap.node, rank=rank, image=img, host_file=lambda _path: None)

    def read() -> LaunchPlan:
        shell: tuple[dict[str, str], str] | None = None
        shell_source = f"the inventory's launch env for {snap.node}" if launch.env else ""
        if launch.script is not None:
            start = launch_script(snap, inventory, runs_on)
            if start.docker_run is not None:
                made = from_docker_run(*start.docker_run)
                redact.register_secret_values(made.known_env())
                return made
            up = start.compose_up
            assert up is not None
            if deployment.compose_file is None:
                raise ParseError(
                    launch.script,
                    f"line {up.ran.line} runs `docker compose up`, and the inventory names no compose_file: name "
                    "it in [deployment] so the suite reads it",
                    " ".join(str(w) for w in up.ran.argv),
                )
            shell_source = f"{launch.script}:{up.ran.line}"
            env = {**up.env, **launch.env}
            if env != launch.env:
                shell = (env, f"the launcher's shell ({shell_source}) sets what `docker compose config` had not")
        assert deployment.compose_file is not None
        named = start.compose_up.service if launch.script is not None and start.compose_up is not None else None
        service = compose_service(snap, inventory, shell, named if isinstance(named, str) else None)
        env_file = inventory.env_file_of(snap.node)
        env_files: dict[str, str] = {}
        if env_file is not None and snap.raw(probes.DOTENV).ok:
            env_files[env_file] = snap.raw(probes.DOTENV).stdout
        made = compose_plan(
            service,
            node=snap.node,
            rank=rank,
            compose_file=deployment.compose_file,
            compose_text=snap.fact(probes.COMPOSE),
            env_files=env_files,
            image=image(snap),
            image_ref=deployment.image,
            host_file=lambda _path: None,
            shell_env=shell[0] if shell else launch.env,
            shell_source=shell_source,
        )
        redact.register_secret_values(made.known_env())
        return made

    return snap.derived(f"plan:{rank}", read)
