"""Docker CLI output: `docker info`, `docker image inspect`, `docker container inspect`, `docker ps`, and what
`docker run/exec ... nvidia-smi -L` printed (the GPUs, or the known failure texts)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gb10check.errors import ParseError, clip, excerpt
from gb10check.reading.parsers import bounded_chunks

__all__ = [
    "Container",
    "ContainerGpuFailure",
    "ContainerGpus",
    "DockerInfo",
    "Image",
    "Running",
    "client_error",
    "parse_container_gpus",
    "parse_container_inspect",
    "parse_docker_info",
    "parse_docker_ps",
    "parse_image_inspect",
    "parse_image_list",
]

_NO_SUCH = re.compile(r"No such (image|container|object)", re.IGNORECASE)
_DENIED = re.compile(r"permission denied while trying to connect to the Docker daemon", re.IGNORECASE)
# the daemon down: "Cannot connect to the Docker daemon at unix://..." (to 28), "failed to connect to the docker API
# at ..." (29 on)
_NO_DAEMON = re.compile(r"Cannot connect to the Docker daemon|failed to connect to the docker API", re.IGNORECASE)


def client_error(what: str) -> Callable[[str], None]:
    """A check of the docker CLI's stderr, for a read whose stdout alone would mislead: with the daemon
    down, `docker image inspect` prints `[]` (as for a missing image) and `docker info` a JSON of empty
    server fields, and only stderr says why."""

    def check(stderr: str) -> None:
        if _DENIED.search(stderr) or _NO_DAEMON.search(stderr):
            _json(stderr, what)  # raises with the hint of the one that matched

    return check


def _json(text: str, what: str) -> Any:
    if _DENIED.search(text):
        raise ParseError(
            what,
            "the deployment user may not use docker (not in the docker group?)",
            text,
            hint_ids=("docker-permission-denied",),
        )
    if _NO_DAEMON.search(text):
        raise ParseError(what, "the Docker daemon is not running", text, hint_ids=("docker-daemon-down",))
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(what, f"not JSON ({exc.msg} at char {exc.pos})", text) from exc


@dataclass(frozen=True)
class DockerInfo:
    server_version: str | None
    cgroup_driver: str | None
    cgroup_version: str | None
    runtimes: tuple[str, ...]


def parse_docker_info(text: str) -> DockerInfo:
    """`docker info --format '{{json .}}'`."""
    data = _json(text, "docker info")
    if not isinstance(data, dict) or "CgroupDriver" not in data:
        raise ParseError("docker info", "no CgroupDriver in the JSON", text)
    if not data.get("ServerVersion"):  # the client's own fields only: no daemon answered
        raise ParseError(
            "docker info", "no server fields (ServerVersion empty): the Docker daemon did not answer", text,
            hint_ids=("docker-daemon-down",),
        )  # fmt: skip
    runtimes = tuple(sorted((data.get("Runtimes") or {}).keys()))
    version = data.get("CgroupVersion")
    return DockerInfo(
        data.get("ServerVersion"), data.get("CgroupDriver"), None if version is None else str(version), runtimes
    )


@dataclass(frozen=True)
class Image:
    id: str
    repo_tags: tuple[str, ...]
    layers: tuple[str, ...]
    architecture: str | None
    env: tuple[str, ...] = ()  # Config.Env: what every container of the image starts with (NAME=value)
    entrypoint: tuple[str, ...] | None = None  # Config.Entrypoint (None: none)
    cmd: tuple[str, ...] | None = None  # Config.Cmd
    user: str = ""  # Config.User

    @property
    def environment(self) -> dict[str, str]:
        return dict(e.partition("=")[::2] for e in self.env if "=" in e)


def parse_image_inspect(text: str) -> Image | None:
    """`docker image inspect REF`; None when the image is not there."""
    if _NO_SUCH.search(text) and not text.lstrip().startswith("["):
        return None
    data = _json(text, "docker image inspect")
    if data == []:  # docker prints [] and "No such image" on stderr
        return None
    if not isinstance(data, list) or len(data) != 1 or not isinstance(data[0], dict) or "Id" not in data[0]:
        raise ParseError("docker image inspect", "expected a JSON list with one image", text)
    img = data[0]
    layers = (img.get("RootFS") or {}).get("Layers") or []
    config = img.get("Config") or {}
    entrypoint, cmd = config.get("Entrypoint"), config.get("Cmd")
    return Image(
        img["Id"],
        tuple(img.get("RepoTags") or ()),
        tuple(layers),
        img.get("Architecture"),
        tuple(str(e) for e in config.get("Env") or ()),
        tuple(map(str, entrypoint)) if isinstance(entrypoint, list) else None,
        tuple(map(str, cmd)) if isinstance(cmd, list) else None,
        str(config.get("User") or ""),
    )


def parse_image_list(text: str) -> list[str]:
    """`docker image ls --format '{{.Repository}}:{{.Tag}}'`: one reference a line."""
    if _DENIED.search(text) or _NO_DAEMON.search(text):
        _json(text, "docker image ls")
    refs = [line.strip() for line in text.splitlines() if line.strip()]
    bad = [r for r in refs if ":" not in r or " " in r]
    if bad:
        raise ParseError("docker image ls", f"unexpected line {excerpt(bad[0], 120)}", text)
    return refs


@dataclass(frozen=True)
class Container:
    name: str
    status: str  # created / running / paused / restarting / exited / dead
    running: bool
    image: str | None
    args: tuple[str, ...]
    started_at: str | None
    exit_code: int | None = None
    pid: int | None = None  # State.Pid: the container's first process, on the host (0 when not running)
    inspect: dict[str, Any] = field(
        default_factory=dict, compare=False, repr=False
    )  # the whole object, as docker printed it


def parse_container_inspect(text: str) -> Container | None:
    """`docker container inspect NAME`; None when there is no such container."""
    if _NO_SUCH.search(text) and not text.lstrip().startswith("["):
        return None
    data = _json(text, "docker container inspect")
    if data == []:
        return None
    if not isinstance(data, list) or len(data) != 1 or not isinstance(data[0], dict) or "State" not in data[0]:
        raise ParseError("docker container inspect", "expected a JSON list with one container", text)
    c = data[0]
    state = c["State"] or {}
    return Container(
        name=str(c.get("Name", "")).lstrip("/"),
        status=str(state.get("Status", "")),
        running=bool(state.get("Running")),
        image=(c.get("Config") or {}).get("Image"),
        args=tuple(c.get("Args") or ()),
        started_at=state.get("StartedAt"),
        exit_code=state.get("ExitCode") if isinstance(state.get("ExitCode"), int) else None,
        pid=state.get("Pid") if isinstance(state.get("Pid"), int) else None,
        inspect=c,
    )


# -- GPU inside a container ---------------------------------------------------------------------
@dataclass(frozen=True)
class ContainerGpus:
    gpus: tuple[str, ...]  # "GPU 0: NVIDIA GB10 (UUID: GPU-...)"


@dataclass(frozen=True)
class ContainerGpuFailure:
    kind: str  # no-gpu-runtime / nvml-mismatch / other
    message: str


_GPU_LINE = re.compile(r"^GPU \d+: .+\(UUID: GPU-[0-9a-fA-F-]+\)\s*$", re.MULTILINE)
_FAILURES = (
    ("no-gpu-runtime", re.compile(r'could not select device driver ".*" with capabilities: \[\[gpu\]\]')),
    ("no-gpu-runtime", re.compile(r"unknown or invalid runtime name: nvidia")),
    ("nvml-mismatch", re.compile(r"driver/library version mismatch", re.IGNORECASE)),
    ("nvml-mismatch", re.compile(r"nvidia-container-cli: initialization error")),
)


def parse_container_gpus(text: str) -> ContainerGpus | ContainerGpuFailure:
    """What `nvidia-smi -L` printed inside a container (stdout and stderr together); read with each line
    bounded (a failure's `".*"` costs up to the square of a line's length)."""
    whole, text = text, "\n".join(bounded_chunks(text))
    for kind, pattern in _FAILURES:
        match = pattern.search(text)
        if match:  # the line that says it, not the whole runc chain
            start, end = text.rfind("\n", 0, match.start()) + 1, text.find("\n", match.end())
            line = text[start : end if end >= 0 else len(text)].strip()
            return ContainerGpuFailure(kind, clip(line, 240))
    gpus = tuple(m.group(0).strip() for m in _GPU_LINE.finditer(text))
    if gpus:
        return ContainerGpus(gpus)
    if "Error" in text or "error" in text:
        return ContainerGpuFailure("other", clip(text.strip(), 240))
    raise ParseError("nvidia-smi -L in a container", "no 'GPU n: ... (UUID: ...)' line", whole)


@dataclass(frozen=True)
class Running:
    """One line of `docker ps --no-trunc --format '{{json .}}'` (docker CLI's container formatter)."""

    name: str
    image: str
    command: str
    state: str
    labels: dict[str, str]

    @property
    def compose_files(self) -> str | None:
        """The compose file(s) Compose started it from (its label), None: not started by Compose."""
        return self.labels.get("com.docker.compose.project.config_files") or None

    @property
    def serves_vllm(self) -> bool:
        return "vllm" in self.image.lower() or "vllm" in self.command.lower()


def parse_docker_ps(text: str) -> tuple[Running, ...]:
    """`docker ps --no-trunc --format '{{json .}}'`: one JSON object per running container (none: empty)."""
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            labels = dict(part.partition("=")[::2] for part in str(item.get("Labels") or "").split(",") if "=" in part)
            out.append(
                Running(
                    name=str(item["Names"]).split(",")[0],
                    image=str(item["Image"]),
                    command=str(item.get("Command") or "").strip('"'),
                    state=str(item.get("State") or ""),
                    labels=labels,
                )
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ParseError("docker ps", f"not a container's JSON line ({exc})", line) from None
    return tuple(out)
