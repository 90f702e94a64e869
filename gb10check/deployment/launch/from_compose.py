"""A rank's launch plan from a compose service, as Docker Compose will create its container.

The service is Compose's own reading (gb10check/deployment/compose.py: the node's `docker compose config`, or the
fallback reader) with the launcher's shell variables in its interpolation; the image's ENV is under
the service's environment, as Docker puts it; the container's command (the service's entrypoint and
command, else the image's) is read with gb10check/deployment/launch/container_command.py. Each value's source is
the line of the compose file or env file that sets it, found by its name. Pure.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

from gb10check.deployment.compose import ComposeService, parse_size
from gb10check.deployment.launch.container_command import argv_of, container_started, host_files
from gb10check.deployment.launch.plan import Container, LaunchPlan, Mount, Setting, Source
from gb10check.deployment.shell.values import Value
from gb10check.reading.parsers.docker import Image

__all__ = ["compose_plan", "line_of"]


def line_of(text: str, pattern: str) -> int | None:
    """The first line of a file that matches (where a value is set)."""
    regex = re.compile(pattern)
    for number, row in enumerate(text.splitlines(), 1):
        if regex.search(row) and not row.lstrip().startswith("#"):
            return number
    return None


def _key(text: str, key: str, path: str, what: str) -> Source:
    return Source(path, line_of(text, rf"^\s*{re.escape(key)}\s*:"), what)


def compose_plan(
    service: ComposeService,
    *,
    node: str,
    rank: int,
    compose_file: str,
    compose_text: str,
    env_files: dict[str, str],
    image: Image | None,
    image_ref: str | None,
    host_file: Callable[[str], str | None],
    shell_env: dict[str, str] | None = None,
    shell_source: str = "",
) -> LaunchPlan:
    """`env_files`: the env files the suite read (path -> text), to say which line sets a value; `shell_env`:
    the launcher's shell variables Compose interpolated with (their source: `shell_source`)."""
    raw = service.raw
    ref = service.image or image_ref
    container = _container(service, compose_file, compose_text)
    environment: dict[str, Setting[str]] = {}
    ref_shown = ref or "the image"
    if image is not None:
        for k, v in image.environment.items():
            environment[k] = Setting(v, Source(f"image ENV ({ref_shown})"))
    for k, v in service.environment.items():
        environment[k] = Setting(
            v, _env_source(k, compose_file, compose_text, env_files, shell_env or {}, shell_source)
        )
    if "HOME" not in environment and not service.get("user") and not (image and image.user):
        environment["HOME"] = Setting("/root", Source("Docker's default (the container runs as root)"))
    env_complete = image is not None
    env_missing = "" if env_complete else f"the ENV of {ref_shown}, which is not on this node"
    argv = argv_of(
        _words(raw.get("entrypoint")),
        _words(raw.get("command")),
        image.entrypoint if image else None,
        image.cmd if image else None,
    )
    values: dict[str, Value] = {k: s.value for k, s in environment.items() if isinstance(s.value, str)}
    launch = container_started(
        argv,
        values,
        what=f"{compose_file}: services.{service.name} command",
        files=host_files(container.mounts, host_file),
        env_complete=env_complete,
        env_missing=env_missing,
    )
    exported = _process_env(
        environment, launch.env, Source(compose_file, _command_line(compose_text), "exported by the command")
    )
    command_key = "command" if raw.get("command") is not None else "entrypoint"
    return LaunchPlan(
        node=node,
        rank=rank,
        launcher="compose",
        read_by=service.reader + (f", with the launcher's shell ({shell_source})" if shell_env else ""),
        image=Setting(ref, _key(compose_text, "image", compose_file, "image") if service.image else None),
        container_name=Setting(
            str(raw.get("container_name")) if raw.get("container_name") else None,
            _key(compose_text, "container_name", compose_file, "container_name"),
        ),
        container=container,
        environment=exported,
        started=launch,
        command=_key(compose_text, command_key, compose_file, command_key),
        env_complete=env_complete,
        env_missing=env_missing,
        notes=tuple(launch.notes),
    )


def _words(value: object) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, list):
        return [str(v) for v in value]
    import shlex

    return shlex.split(str(value))


def _command_line(text: str) -> int | None:
    return line_of(text, r"^\s*(command|entrypoint)\s*:")


def _env_source(
    name: str, compose_file: str, text: str, env_files: dict[str, str], shell_env: dict[str, str], shell_source: str
) -> Source:
    """The line that sets a variable: the compose file's environment, else an env file; a value Compose
    interpolated from the launcher's shell says so."""
    line = line_of(text, rf"(^|[\s\"'-]){re.escape(name)}\s*[=:]|^\s*-\s*{re.escape(name)}\s*$")
    if line is not None:
        source = Source(compose_file, line, "environment")
        row = text.splitlines()[line - 1]
        var = re.search(r"\$\{?([A-Za-z_]\w*)", row)
        if var and var[1] in shell_env:
            return Source(compose_file, line, f"environment, ${{{var[1]}}} from the launcher's shell ({shell_source})")
        return source
    for path, body in env_files.items():
        at = line_of(body, rf"^\s*(export\s+)?{re.escape(name)}\s*=")
        if at is not None:
            return Source(path, at, "env_file")
    return Source(compose_file, None, "environment")


def _process_env(
    container_env: dict[str, Setting[str]], process_env: dict[str, Value], exported: Source
) -> dict[str, Setting[str]]:
    """The vLLM process's environment with each value's source: the container's, or the command's own export."""
    out: dict[str, Setting[str]] = {}
    for k, v in process_env.items():
        given = container_env.get(k)
        out[k] = given if given is not None and given.value == v else Setting(v, exported)
    return out


def _container(service: ComposeService, path: str, text: str) -> Container:
    raw = service.raw

    def src(key: str) -> Source:
        return _key(text, key, path, key)

    memlock = service.ulimit("memlock")
    memory = service.memory_limit
    mounts = []
    for v in raw.get("volumes") or []:
        if isinstance(v, dict):
            mounts.append(
                Mount(
                    str(v.get("source", "")),
                    str(v.get("target", "")),
                    str(v.get("type", "bind")),
                    bool(v.get("read_only")),
                )
            )
        else:
            parts = str(v).split(":")
            if len(parts) >= 2:
                source = parts[0]
                kind = "bind" if source.startswith(("/", ".", "~")) else "volume"
                if source.startswith("."):
                    source = posixpath.normpath(posixpath.join(posixpath.dirname(path), source))
                mounts.append(Mount(source, parts[1], kind, len(parts) > 2 and "ro" in parts[2].split(",")))
    gpus = raw.get("gpus")
    reservations = (((raw.get("deploy") or {}).get("resources") or {}).get("reservations") or {}).get("devices") or []
    if gpus is None and any("gpu" in (d.get("capabilities") or []) for d in reservations if isinstance(d, dict)):
        gpus = next(str(d.get("count", "all")) for d in reservations if isinstance(d, dict))
    shm = raw.get("shm_size")
    rules = raw.get("device_cgroup_rules")
    return Container(
        network=Setting(raw.get("network_mode"), src("network_mode") if raw.get("network_mode") else None),
        ipc=Setting(raw.get("ipc"), src("ipc") if raw.get("ipc") else None),
        shm_size=Setting(
            parse_size(shm, f"services.{service.name}.shm_size") if shm is not None else None, src("shm_size")
        ),
        privileged=Setting(service.privileged if raw.get("privileged") is not None else None, src("privileged")),
        cap_add=Setting(tuple(service.cap_add) if raw.get("cap_add") else None, src("cap_add")),
        devices=Setting(tuple(service.devices) if raw.get("devices") else None, src("devices")),
        device_cgroup_rules=Setting(tuple(map(str, rules)) if rules else None, src("device_cgroup_rules")),
        memlock=Setting(memlock if memlock is not None else None, src("ulimits") if memlock is not None else None),  # type: ignore[arg-type]
        restart=Setting(service.restart, src("restart") if service.restart is not None else None),
        memory=Setting(
            memory, src("mem_limit") if raw.get("mem_limit") is not None else src("memory") if memory else None
        ),
        user=Setting(str(raw["user"]) if raw.get("user") else None, src("user")),
        gpus=Setting(str(gpus) if gpus is not None else None, src("gpus") if raw.get("gpus") else src("devices")),
        runtime=Setting(raw.get("runtime"), src("runtime") if raw.get("runtime") else None),
        mounts=tuple(mounts),
    )
