"""The GPU is visible inside Docker on every node (the NVIDIA container runtime works)."""

import shlex
from dataclasses import dataclass

import pytest

from gb10check.errors import GB10Error
from gb10check.reading import probes
from gb10check.reading.facts import container, loaded_module
from gb10check.reading.parallel import map_parallel
from gb10check.reading.parsers.docker import ContainerGpuFailure, parse_container_gpus
from gb10check.reading.parsers.nvidia import NvmlMismatch
from gb10check.reading.transport import DOCKER_C_LOCALE, CommandResult

pytestmark = pytest.mark.preflight


# what `docker exec` itself costs on top of the nvidia-smi it runs
EXEC_OVERHEAD_S = 10.0


@dataclass(frozen=True)
class Tried:
    how: str  # what was run, for the messages
    result: CommandResult | None  # None: not run, for `why_not`
    why_not: str = ""
    hint: str = ""


def _probe(node, deployment, thresholds):
    """docker exec into the running container, else a throwaway run of the image (never a pull)."""
    snap = node.snapshot()
    c = container(snap)
    running = c is not None and c.running
    how = f"docker exec {deployment.container}" if running else f"docker run --rm --gpus all {deployment.image}"
    if snap.raw(probes.NVIDIA_SMI).timed_out:
        # the container's nvidia-smi would wait on the same stuck driver: not worth another hang
        return Tried(how, None, "nvidia-smi on the host does not answer", hint="driver-deadlock")
    if running:
        cmd = f"docker exec {DOCKER_C_LOCALE} {shlex.quote(deployment.container)} nvidia-smi -L"
        timeout = thresholds.nvidia_smi_timeout + EXEC_OVERHEAD_S
    else:
        if snap.fact(probes.IMAGE) is None:
            return Tried(how, None, f"the image {deployment.image} is not on this node", hint="image-missing")
        cmd = (
            f"docker run --rm --pull never --network none --gpus all {DOCKER_C_LOCALE} --entrypoint nvidia-smi "
            f"{shlex.quote(deployment.image)} -L"
        )
        timeout = thresholds.docker_run_timeout
    return Tried(how, node.run(cmd, timeout))


@pytest.fixture(scope="session")
def container_gpu_probes(cluster, inventory, deployment):
    """One docker probe per node, all nodes in parallel, each bounded."""

    def one(name):
        try:
            return name, _probe(cluster[name], deployment, inventory.thresholds)
        except GB10Error as exc:
            return name, exc

    cluster.gather()
    return dict(map_parallel(one, cluster.nodes, name="gb10check-container-gpu"))


def _versions(node) -> str:
    snap = node.snapshot()
    kernel = loaded_module(snap) or "not loaded"
    try:
        smi = snap.fact(probes.NVIDIA_SMI)
    except GB10Error:
        return f"kernel module {kernel}, userspace unknown"
    if isinstance(smi, NvmlMismatch):
        return f"kernel module {kernel}, userspace NVML library {smi.library_version or '?'}"
    return f"kernel module {kernel}, userspace {getattr(smi, 'driver_version', '?')}"


@pytest.mark.hints("gpu-not-in-container")
def test_gpu_visible_in_container(node, container_gpu_probes, skip_if_starting, evidence):
    """The GPU visible inside a container.

    `nvidia-smi -L` inside Docker lists at least one GPU and exits 0: `docker exec` into the running container, else
    a throwaway `docker run --rm --pull never --gpus all IMAGE nvidia-smi -L` of the deployment's image (never a
    pull). Not tried when that image is not on the node, nor when nvidia-smi on the host does not answer (the
    container's would wait on the same stuck driver). A failure shows the node's driver, kernel module and userspace."""
    tried = container_gpu_probes[node.name]
    if isinstance(tried, GB10Error):
        raise tried
    if tried.result is None and tried.hint == "driver-deadlock":
        skip_if_starting("nvidia-smi on the host")
    evidence.expect(
        tried.result is not None,
        what=f"GPU inside Docker ({tried.how})",
        expected="a container to test with and a driver that answers",
        found=f"tried: {tried.how}" if tried.result is not None else f"not tried: {tried.why_not}",
        hints=(tried.hint,),
    )
    res = tried.result
    if res.timed_out and tried.how.startswith("docker exec"):
        skip_if_starting(f"`{tried.how} nvidia-smi -L`")
    evidence.expect(
        not res.timed_out,
        what=f"GPU inside Docker ({tried.how})",
        expected="nvidia-smi -L to answer",
        found=f"no answer after {res.duration:.0f} s" if res.timed_out else f"answered in {res.duration:.1f} s",
        hints=("command-timeout",),
    )
    seen = parse_container_gpus(res.stdout + "\n" + res.stderr)
    evidence.expect(
        not isinstance(seen, ContainerGpuFailure),
        what=f"GPU inside Docker ({tried.how})",
        expected="nvidia-smi -L lists the GPU",
        found=getattr(seen, "message", "listed"),
        detail=f"driver on this node: {_versions(node)}",
    )
    assert not isinstance(seen, ContainerGpuFailure)  # for the type checker: expect raised above
    evidence.expect(
        len(seen.gpus) >= 1 and res.rc == 0,
        what=f"GPU inside Docker ({tried.how})",
        expected="at least one GPU, exit 0",
        found=f"{'; '.join(seen.gpus)} (exit {res.rc})",
    )
