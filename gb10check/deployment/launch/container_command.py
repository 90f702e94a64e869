"""What a container's command starts: its ENTRYPOINT and CMD as Docker joins them, run (as read, never
executed) with the container's environment through gb10check/deployment/shell.

A shell with `-c` is read as a script; a script file is read when the suite has its text (a bind mount
of a host file); `vllm serve ...` or `ray start ...` is itself the process. What runs inside the image
(its own entrypoint script) the suite cannot read from the host: that is decided at start, said so.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Callable

from gb10check.deployment.launch.plan import Mount
from gb10check.deployment.launch.process import Started, started
from gb10check.deployment.shell.values import Deferred, Value
from gb10check.deployment.shell.walk import Files, read

__all__ = ["argv_of", "container_started", "host_files"]


def argv_of(
    entrypoint: list[str] | None,
    command: list[str] | None,
    image_entrypoint: tuple[str, ...] | None,
    image_cmd: tuple[str, ...] | None,
    image_known: bool = True,
) -> list[str] | None:
    """ENTRYPOINT + CMD as Docker runs them: a container's own entrypoint drops the image's CMD; None when
    the image's part is needed and not known."""
    if entrypoint is not None:
        return [*entrypoint, *(command or [])]
    if image_entrypoint is None and image_cmd is None:
        return None  # the image's ENTRYPOINT (and CMD) come first: unknown without the image
    return [*(image_entrypoint or ()), *(command if command is not None else (image_cmd or ()))]


def host_files(mounts: tuple[Mount, ...], host: Callable[[str], str | None]) -> Files:
    """A container path's text, through the bind mounts that put a host file there."""

    def files(path: str) -> str | None:
        for m in sorted(mounts, key=lambda m: -len(m.target)):
            if m.kind != "bind":
                continue
            if path == m.target or path.startswith(m.target.rstrip("/") + "/"):
                return host(posixpath.normpath(m.source + path[len(m.target.rstrip("/")) :]))
        return None

    return files


def container_started(
    argv: list[str] | None,
    env: dict[str, Value],
    *,
    what: str,
    files: Files,
    env_complete: bool,
    env_missing: str,
) -> Started:
    """What the container's command starts (vLLM or a Ray node) with its environment."""
    if argv is None:
        deferred = Deferred("the image's ENTRYPOINT and CMD (the image is not on this node)", "<the image's command>")
        return Started(None, None, dict(env), None, (), (f"{what}: {deferred.why}: decided at start",))
    script = "exec " + " ".join(shlex.quote(a) for a in argv)
    reading = read(
        script,
        what=what,
        env=env,
        files=files,
        env_complete=env_complete,
        env_missing=env_missing,
    )
    return started(reading, what)
