"""Fixtures the preflight checks share."""

import pytest

from gb10check.errors import ServiceError, ToolMissing
from gb10check.facts import container
from gb10check.service import ServiceClient


@pytest.fixture(scope="session")
def api_healthy(inventory):
    """Whether rank 0's API answers /health with 200 (None: the inventory has no [service])."""
    if inventory.service is None:
        return None
    client = ServiceClient(inventory.service)
    try:
        return client.get("/health").status == 200
    except ServiceError:
        return False
    finally:
        client.close()


@pytest.fixture
def nvidia_smi(request, node, inventory):
    """The node's nvidia-smi probe result. A timeout while this node's vLLM container runs and the
    API does not answer yet is startup, not a fault: nvidia-smi waits on the driver lock while
    weights load, so the test skips with the reason instead of failing."""
    res = node.snapshot().raw("nvidia_smi_query")
    if res.rc == 127:
        raise ToolMissing(f"{node.name}: nvidia-smi is not installed or not on PATH: {res.stderr.strip()[:200]}")
    if res.timed_out and inventory.deployment is not None:
        c = container(node.snapshot())
        # asked only here: a healthy run makes no request to the API
        if c is not None and c.running and request.getfixturevalue("api_healthy") is False:
            pytest.skip(
                f"nvidia-smi gave no answer within {inventory.thresholds.nvidia_smi_timeout:g} s while the vLLM "
                f"container {c.name} is starting (the API does not answer /health yet): it waits on the driver "
                "lock during weight loading; watch MemAvailable instead and run this again once the API is up"
            )
    return res
