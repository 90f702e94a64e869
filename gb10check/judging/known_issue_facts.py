"""A node's facts in the known-issues catalogue's words (gb10check/judging/known_issues.py FACTS), from what the
suite already read: the node's snapshot (driver, kernel, OS and DGX OS release, ConnectX firmware, the
image's ENV), the container's libraries (its NCCL and libmlx5, tests_preflight/conftest.py) and the
rank's launch plan (whether vLLM captures CUDA graphs).

A fact that could not be read is missing, with why (never guessed); one that does not exist on this node
(no DGX OS, no deployment) is None: conditions on it do not hold. Pure over what it is given.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from gb10check.deployment.launch.plan import LaunchPlan
from gb10check.errors import DecidedAtStart, GB10Error
from gb10check.judging.known_issues import version_key
from gb10check.reading import probes
from gb10check.reading.facts import loaded_module
from gb10check.reading.parsers.nccl_library import ContainerLibraries
from gb10check.reading.snapshot import Snapshot

__all__ = ["NodeFacts", "cuda_graphs", "image_driver", "nccl_from", "node_facts"]

# a graph mode that captures no CUDA graphs (vLLM's CUDAGraphMode.NONE; --enforce-eager)
_NO_GRAPHS = ("none",)


@dataclass
class NodeFacts:
    values: dict[str, str | list[str] | None] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)  # fact -> why it was not read

    def read(self, name: str, get: Callable[[], str | list[str] | None]) -> None:
        try:
            self.values[name] = get()
        except DecidedAtStart as exc:
            self.missing[name] = f"decided at start ({exc})"
        except GB10Error as exc:
            self.missing[name] = str(exc)

    def shown(self) -> str:
        """The facts read, in words (a report's line)."""
        parts = []
        for name, value in self.values.items():
            if value is None:
                continue
            parts.append(f"{name} {', '.join(sorted(set(value))) if isinstance(value, list) else value}")
        return "; ".join(parts) or "none read"


def nccl_from(path: str, how: str) -> str:
    """Where the container's libnccl comes from: a pip wheel (site- or dist-packages/nvidia/nccl) or the
    system's (an apt package, ldconfig's)."""
    return "pip-wheel" if "/nvidia/nccl/lib/" in path or how == "torch" else "system"


def cuda_graphs(plan: LaunchPlan) -> str:
    """Whether the rank's vLLM captures CUDA graphs: not with --enforce-eager or a cudagraph_mode of NONE
    (`-cc.cudagraph_mode=NONE`, `--compilation-config '{"cudagraph_mode": "NONE"}'`), else yes: vLLM's
    default captures them. DecidedAtStart when the start decides the options."""
    vllm = plan.vllm
    if vllm.has("--enforce-eager"):
        return "no"
    # vllm_args normalises a `--` option's underscores to hyphens, not a dotted `-cc.` one's
    for option in ("-cc.cudagraph_mode", "--compilation-config.cudagraph-mode"):
        if vllm.has(option):
            value = (vllm.value(option) or "").strip().lower()
            return "no" if value in _NO_GRAPHS else "yes"
    for option in ("--compilation-config", "-O"):
        if vllm.has(option):
            value = (vllm.value(option) or "").replace(" ", "").lower()
            if '"cudagraph_mode":"none"' in value or "'cudagraph_mode':'none'" in value:
                return "no"
    return "yes"


def image_driver(env: tuple[str, ...], module: str | None) -> str:
    """Whether the image asks for a newer driver than the node's loaded module: NVIDIA's container images
    name theirs in CUDA_DRIVER_VERSION (their entrypoint refuses an older driver); an image that names none
    asks for nothing."""
    wanted = next((e.partition("=")[2] for e in env if e.startswith("CUDA_DRIVER_VERSION=")), "")
    if not wanted.strip() or module is None:
        return "not-newer"
    return "newer" if version_key(wanted) > version_key(module) else "not-newer"


def node_facts(
    snap: Snapshot,
    *,
    deployed: bool,
    libraries: ContainerLibraries | GB10Error | None,
    plan: Callable[[], LaunchPlan] | None,
) -> NodeFacts:
    """The node's facts for the catalogue. `deployed`: the inventory names a deployment (else the image's
    facts do not exist here); `libraries`: the container's, or the error reading them; `plan`: the rank's
    launch plan (called once; a Ray worker's is its head's)."""
    facts = NodeFacts()
    facts.read("driver", lambda: loaded_module(snap))
    facts.read("kernel", lambda: snap.fact(probes.KERNEL_RELEASE))
    facts.read("os", lambda: snap.fact(probes.OS_RELEASE).shown)
    facts.read("dgx_os", lambda: snap.fact(probes.DGX_RELEASE))
    facts.read("cx_firmware", lambda: sorted(set(snap.fact(probes.CX_FIRMWARE).values())))
    if not deployed:
        for name in ("nccl", "nccl_from", "libmlx5_dmabuf", "image_driver", "cuda_graphs"):
            facts.values[name] = None  # no deployment: nothing of an image to match
        return facts
    if isinstance(libraries, GB10Error) or libraries is None:
        why = str(libraries) if libraries is not None else "the container's libraries were not read"
        facts.missing.update({"nccl": why, "nccl_from": why, "libmlx5_dmabuf": why})
    else:
        lib, mlx5 = libraries.nccl, libraries.mlx5
        if lib is not None and lib.version is None:
            facts.missing["nccl"] = f"{lib.path} holds no NCCL version string"
        else:
            facts.values["nccl"] = lib.version if lib is not None else None
        facts.values["nccl_from"] = nccl_from(lib.path, lib.how) if lib is not None else None
        facts.values["libmlx5_dmabuf"] = None if mlx5 is None else "yes" if mlx5.dmabuf else "no"

    def wants_newer() -> str | None:
        image = snap.fact(probes.IMAGE)
        if image is None:
            raise GB10Error("the deployment's image is not on the node")
        return image_driver(image.env, loaded_module(snap))

    facts.read("image_driver", wants_newer)
    if plan is not None:
        facts.read("cuda_graphs", lambda: cuda_graphs(plan()))
    else:
        facts.missing["cuda_graphs"] = "no launch plan was read"
    return facts
