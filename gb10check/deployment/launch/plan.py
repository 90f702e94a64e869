"""The launch plan of one rank: what vLLM on that node will run (or runs), and where every value comes from.

Whatever starts it (a compose file, a `docker run` script, a Ray launch, or the running container read
back), a rank's plan says the same things: the image; the container's settings (network, IPC, shared
memory, ulimits, capabilities, devices, mounts, restart, memory limit); the environment as the vLLM
process sees it; and what runs: a `vllm serve` with its options, or a Ray node (a worker's vLLM is sent
by the head at run time). Each value carries its Source: the file and line to change, "image ENV", "the
running process". A value only the start decides is Deferred (gb10check/deployment/shell/values.py): the checks
that need it skip, saying so (errors.DecidedAtStart), never fail. Rules read nothing else
(gb10check/deployment/launch/rules.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from gb10check.deployment.launch.process import Started
from gb10check.deployment.launch.vllm_args import RayCommand, VllmCommand
from gb10check.deployment.shell.values import Deferred
from gb10check.errors import DecidedAtStart

__all__ = ["DEFAULT", "Container", "LaunchPlan", "Mount", "Setting", "Source", "T", "unset"]

T = TypeVar("T")


@dataclass(frozen=True)
class Source:
    """Where a value is set: a file (and line) to change, or a place that is not a file."""

    where: str  # "/home/u/vllm/compose.yml", "image ENV (vllm/vllm-openai:v0.12.0)", "the running vLLM (pid 4242)"
    line: int | None = None
    what: str = ""  # "environment", "env_file", "docker run -e", "command", "ulimits"...

    def __str__(self) -> str:
        at = f"{self.where}:{self.line}" if self.line else self.where
        return f"{at} ({self.what})" if self.what else at


DEFAULT = Source("Docker's default")


@dataclass(frozen=True)
class Setting(Generic[T]):
    """A value (None: not set, the default applies) and where it is set."""

    value: T | Deferred | None
    source: Source | None = None

    def known(self) -> T | None:
        """The value; DecidedAtStart when only the start decides it."""
        if isinstance(self.value, Deferred):
            raise DecidedAtStart(f"{self.value.why}: decided at start")
        return self.value

    @property
    def deferred(self) -> bool:
        return isinstance(self.value, Deferred)

    def shown(self) -> str:
        return "not set" if self.value is None else str(self.value)


def unset() -> Setting[object]:
    return Setting(None, None)


@dataclass(frozen=True)
class Mount:
    source: str  # the host path (a bind) or the volume's name
    target: str  # the path inside the container
    kind: str = "bind"  # bind, volume, tmpfs
    read_only: bool = False


@dataclass(frozen=True)
class Container:
    """The container's settings as Docker will create it (None in a Setting: Docker's default)."""

    network: Setting[str] = field(default_factory=lambda: Setting(None))  # host, bridge, none, a network's name
    ipc: Setting[str] = field(default_factory=lambda: Setting(None))  # host, private, shareable, container:X
    shm_size: Setting[int] = field(default_factory=lambda: Setting(None))  # bytes (Docker's default: 64 MiB)
    privileged: Setting[bool] = field(default_factory=lambda: Setting(None))
    cap_add: Setting[tuple[str, ...]] = field(default_factory=lambda: Setting(None))
    devices: Setting[tuple[str, ...]] = field(default_factory=lambda: Setting(None))  # host device paths
    device_cgroup_rules: Setting[tuple[str, ...]] = field(default_factory=lambda: Setting(None))
    memlock: Setting[tuple[int, int]] = field(default_factory=lambda: Setting(None))  # soft, hard; -1 unlimited
    restart: Setting[str] = field(default_factory=lambda: Setting(None))
    memory: Setting[int] = field(default_factory=lambda: Setting(None))  # bytes
    user: Setting[str] = field(default_factory=lambda: Setting(None))
    gpus: Setting[str] = field(default_factory=lambda: Setting(None))  # "all", a count, device ids
    runtime: Setting[str] = field(default_factory=lambda: Setting(None))
    mounts: tuple[Mount, ...] = ()

    @property
    def all_capabilities(self) -> bool:
        caps = self.cap_add.value
        return self.privileged.value is True or (isinstance(caps, tuple) and "ALL" in caps)


@dataclass(frozen=True)
class LaunchPlan:
    """One rank's plan. `started` is what its container's (or host's) command starts, over every path."""

    node: str
    rank: int
    launcher: str  # "compose", "docker run", "ray", "host", "running container"
    read_by: str  # "docker compose 2.40.3", "gb10check's reader of /home/u/launch.sh", "docker inspect and /proc"
    image: Setting[str]
    container_name: Setting[str]
    container: Container
    environment: dict[str, Setting[str]]  # as the vLLM process sees it (its container's and what its script exports)
    started: Started
    command: Source  # where the command that starts vLLM (or the Ray node) is written
    env_complete: bool = True  # False: a source of the environment was not read (the image's ENV)
    env_missing: str = ""  # what was not read
    notes: tuple[str, ...] = ()

    # -- what the checks ask -----------------------------------------------------------------------
    @property
    def role(self) -> str:
        """ "vllm" (a `vllm serve`), "ray head", "ray worker"."""
        return self.started.role or "none"

    @property
    def vllm(self) -> VllmCommand:
        """The `vllm serve` this rank runs; DecidedAtStart for a Ray worker (the head sends it at run time)."""
        if self.started.vllm is None:
            if self.started.ray is not None:
                raise DecidedAtStart(f"{self.node} runs a Ray worker: its vLLM worker is sent by the head at run time")
            said = self.started.notes[-1] if self.started.notes else "no `vllm serve` the suite can read"
            raise DecidedAtStart(f"{self.node}'s {self.launcher}: {said}")
        return self.started.vllm

    @property
    def ray(self) -> RayCommand | None:
        return self.started.ray

    def env(self, name: str) -> str | None:
        """The variable as vLLM gets it (None: unset); DecidedAtStart when the start decides it."""
        setting = self.environment.get(name)
        if setting is None:
            if not self.env_complete:
                raise DecidedAtStart(f"{name} on {self.node}: not in the environment read ({self.env_missing})")
            return None
        return setting.known()

    def env_source(self, name: str) -> Source | None:
        setting = self.environment.get(name)
        return setting.source if setting else None

    def known_env(self) -> dict[str, str]:
        """Every variable whose value is known (what a report shows; deferred ones are the plan's to show)."""
        return {k: s.value for k, s in self.environment.items() if isinstance(s.value, str)}
