"""The GPU is visible inside Docker on every node (the NVIDIA container runtime works)."""

import shlex
from concurrent.futures import ThreadPoolExecutor

import pytest

from gb10check.errors import GB10Error
from gb10check.facts import container, loaded_module
from gb10check.parsers.docker import ContainerGpuFailure, parse_container_gpus, parse_image_inspect
from gb10check.parsers.nvidia import NvmlMismatch, parse_nvidia_smi_query

pytestmark = pytest.mark.preflight


def _probe(node, deployment, timeout):
    """docker exec into the running container, else a throwaway run of the image (never a pull)."""
    snap = node.snapshot()
    c = container(snap)
    if c is not None and c.running:
        how = f"docker exec {deployment.container}"
        cmd = f"docker exec {shlex.quote(deployment.container)} nvidia-smi -L"
    else:
        if snap.parsed("image_inspect", parse_image_inspect, accept_rc=(0, 1)) is None:
            return "docker run", None, f"the image {deployment.image} is not on this node"
        how = f"docker run --rm --gpus all {deployment.image}"
        cmd = (
            "docker run --rm --pull never --network none --gpus all --entrypoint nvidia-smi "
            f"{shlex.quote(deployment.image)} -L"
        )
    return how, node.run(cmd, timeout), None


@pytest.fixture(scope="session")
def container_gpu_probes(cluster, inventory, deployment):
    """One docker probe per node, all nodes in parallel (each bounded by docker_run_timeout)."""
    timeout = inventory.thresholds.docker_run_timeout

    def one(name):
        try:
            return name, _probe(cluster[name], deployment, timeout)
        except GB10Error as exc:
            return name, exc

    cluster.gather()
    with ThreadPoolExecutor(max_workers=len(cluster.nodes)) as pool:
        return dict(pool.map(one, cluster.nodes))


def _versions(node) -> str:
    snap = node.snapshot()
    kernel = loaded_module(snap) or "not loaded"
    try:
        smi = snap.parsed("nvidia_smi_query", parse_nvidia_smi_query, accept_rc=(0, 9, 18))
    except GB10Error:
        return f"kernel module {kernel}, userspace unknown"
    if isinstance(smi, NvmlMismatch):
        return f"kernel module {kernel}, userspace NVML library {smi.library_version or '?'}"
    return f"kernel module {kernel}, userspace {getattr(smi, 'driver_version', '?')}"


@pytest.mark.hints("gpu-not-in-container")
def test_gpu_visible_in_container(node, container_gpu_probes, evidence):
    outcome = container_gpu_probes[node.name]
    if isinstance(outcome, GB10Error):
        raise outcome
    how, res, missing = outcome
    evidence.expect(
        missing is None,
        what="GPU inside Docker",
        expected="a container of the deployment image to test with",
        found=missing or "yes",
        hints=("image-missing",),
    )
    evidence.expect(
        not res.timed_out,
        what=f"GPU inside Docker ({how})",
        expected="nvidia-smi -L to answer",
        found=f"no answer after {res.duration:.0f} s" if res.timed_out else f"answered in {res.duration:.1f} s",
        hints=("command-timeout",),
    )
    seen = parse_container_gpus(res.stdout + "\n" + res.stderr)
    evidence.expect(
        not isinstance(seen, ContainerGpuFailure),
        what=f"GPU inside Docker ({how})",
        expected="nvidia-smi -L lists the GPU",
        found=getattr(seen, "message", "listed"),
        detail=f"driver on this node: {_versions(node)}",
    )
    evidence.expect(
        len(seen.gpus) >= 1 and res.rc == 0,
        what=f"GPU inside Docker ({how})",
        expected="at least one GPU, exit 0",
        found=f"{'; '.join(seen.gpus)} (exit {res.rc})",
    )
