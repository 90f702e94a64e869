"""Fixtures the preflight checks share."""

import shlex

import pytest

from gb10check.errors import ServiceError
from gb10check.reading import probes
from gb10check.reading.facts import container
from gb10check.reading.in_container import read_in_containers
from gb10check.reading.parsers import nccl_library


@pytest.fixture(scope="session")
def api_healthy(request, inventory):
    """Whether rank 0's API answers /health with 200 (None: the inventory has no [service])."""
    if inventory.service is None:
        return None
    try:
        return request.getfixturevalue("api").get("/health").status == 200
    except ServiceError:
        return False


@pytest.fixture
def skip_if_starting(request, node, inventory):
    """Call after nvidia-smi timed out on the node: skips when that is vLLM starting, not a fault.

    While weights load nvidia-smi waits on the driver lock. Startup = this node's vLLM container
    runs and the API does not answer /health yet (asked only then: a healthy run makes no request).
    """

    def check(what):
        if inventory.deployment is None:
            return
        c = container(node.snapshot())
        if c is not None and c.running and request.getfixturevalue("api_healthy") is False:
            pytest.skip(
                f"{what} gave no answer while the vLLM container {c.name} is starting (the API does not answer "
                "/health yet): nvidia-smi waits on the driver lock during weight loading; watch MemAvailable "
                "instead and run this again once the API is up"
            )

    return check


@pytest.fixture
def nvidia_smi(node, inventory, skip_if_starting):
    """The node's nvidia-smi probe result; skips when it timed out because vLLM is starting there."""
    res = node.snapshot().ran(probes.NVIDIA_SMI)
    if res.timed_out:
        skip_if_starting(f"nvidia-smi (bound {inventory.thresholds.nvidia_smi_timeout:g} s)")
    return res


@pytest.fixture(scope="session")
def container_libraries(cluster, inventory, deployment):
    """Per node: the libnccl the container loads and its libmlx5 (gb10check/reading/parsers/nccl_library.py), read with
    one docker command per node (exec into the running container, else a throwaway run of the image)."""
    return read_in_containers(
        cluster,
        inventory,
        deployment,
        what="its NCCL library",
        program="sh",
        args=lambda _snap, _node: "-c " + shlex.quote(nccl_library.SCRIPT),
        accept_rc=(0,),
        parse=nccl_library.parse_container_libraries,
    )
