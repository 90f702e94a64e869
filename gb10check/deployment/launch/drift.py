"""Where the running container and the deployment's files part: a rank's launch plan as its files make it
(what the next start runs) against the one read from the running container (docker inspect and the vLLM
process's /proc: what runs now). Pure: two plans in, the differences in words out.

Compared where both sides know the value: the image reference, vLLM's command (its options and model, as
vllm_args normalises them), the environment the files give vLLM (each variable's value), the NCCL/GLOO/VLLM/
TORCH variables the running process has that the files do not give, and the container's network, IPC, shared
memory, privilege, devices and memlock limit. A value the files leave to the start (deferred) is not compared.
What Docker or the image adds on its own (HOSTNAME, HOME, the image's ENV) is no difference.
"""

from __future__ import annotations

from typing import Any

from gb10check.deployment.launch.plan import LaunchPlan, Setting
from gb10check.errors import DecidedAtStart

__all__ = ["COMPARED_SETTINGS", "SERVING_PREFIXES", "drift"]

# the container settings compared (LaunchPlan.Container's names): what the rules judge and a restart changes
COMPARED_SETTINGS = ("network", "ipc", "shm_size", "privileged", "devices", "memlock")
# variables a running process may have that only a launcher gives (not Docker, not an image's usual ENV)
SERVING_PREFIXES = ("NCCL_", "GLOO_", "VLLM_", "TORCH_", "MASTER_", "UCX_")


def _known(setting: Setting[Any]) -> object | None:
    try:
        return setting.known()
    except DecidedAtStart:
        return None


def _argv(plan: LaunchPlan) -> dict[str, object] | None:
    """vLLM's model and options as normalised; None when the start decides them or no vLLM is read."""
    try:
        vllm = plan.vllm
        model = vllm.model_name
    except DecidedAtStart:
        return None
    if vllm.unknown:
        return None
    return {"model": model, **{k: str(v) if v is not None else None for k, v in vllm.options.items()}}


def drift(files: LaunchPlan, running: LaunchPlan, image_env: frozenset[str] = frozenset()) -> list[str]:
    """What the running container runs that the files would not (each in words: `what: running ..., the
    files ...`); [] when they agree. `image_env`: the variables the image itself sets (never a difference)."""
    out = []
    image_files, image_running = _known(files.image), _known(running.image)
    if image_files and image_running and image_files != image_running:
        out.append(f"image: running {image_running}, the files {image_files}")
    a, b = _argv(files), _argv(running)
    if a is not None and b is not None and a != b:
        changed = sorted(k for k in set(a) | set(b) if a.get(k, "<absent>") != b.get(k, "<absent>"))
        shown = (
            ", ".join(f"{k} {_option(b, k)} (the files: {_option(a, k)})" for k in changed[:6] if k != "model")
            or f"model {b.get('model')} (the files: {a.get('model')})"
        )
        out.append(f"vLLM's command: running {shown}" + (" ..." if len(changed) > 6 else ""))
    for name, setting in files.environment.items():
        want = _known(setting)
        if want is None or name in image_env:
            continue
        have = running.environment.get(name)
        have_value = _known(have) if have is not None else None
        if have is None:
            out.append(f"{name}: not in the running process, the files give {want}")
        elif have_value is not None and have_value != want:
            out.append(f"{name}: running {have_value}, the files {want}")
    extra = sorted(
        n
        for n in running.environment
        if n.startswith(SERVING_PREFIXES) and n not in files.environment and n not in image_env
    )
    if extra and files.env_complete:
        out.append(f"the running process has {', '.join(extra)}, which the files do not give")
    for name in COMPARED_SETTINGS:
        wanted = _known(getattr(files.container, name))
        found = _known(getattr(running.container, name))
        if wanted is not None and found is not None and wanted != found:
            out.append(f"{name.replace('_', ' ')}: running {found}, the files {wanted}")
    return out


def _option(options: dict[str, object], key: str) -> str:
    if key not in options:
        return "absent"
    value = options[key]
    return "given" if value is None else str(value)
