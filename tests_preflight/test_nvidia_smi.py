"""nvidia-smi answers within its bound; a hang means the driver is stuck (or busy loading weights)."""

import pytest

from gb10check.errors import ServiceError
from gb10check.facts import container
from gb10check.service import ServiceClient

pytestmark = pytest.mark.preflight


def _startup_in_progress(node, inventory) -> bool:
    """The container runs here but the API on rank 0 does not answer /health yet."""
    if inventory.deployment is None or inventory.service is None:
        return False
    c = container(node.snapshot())
    if c is None or not c.running:
        return False
    client = ServiceClient(inventory.service)
    try:
        return client.get("/health").status != 200
    except ServiceError:
        return True
    finally:
        client.close()


@pytest.mark.smoke
@pytest.mark.hints("driver-deadlock")
def test_nvidia_smi_answers(node, inventory, evidence):
    res = node.snapshot().raw("nvidia_smi_query")
    bound = inventory.thresholds.nvidia_smi_timeout
    if res.timed_out and _startup_in_progress(node, inventory):
        pytest.skip(
            f"nvidia-smi gave no answer within {bound:g} s while the vLLM container is starting: it waits on the "
            "driver lock during weight loading; watch MemAvailable instead"
        )
    evidence.expect(
        not res.timed_out and res.rc is not None,
        what="nvidia-smi",
        expected=f"an answer within {bound:g} s",
        found=f"no answer after {bound:g} s (killed)" if res.timed_out else f"exit {res.rc}",
        detail="the driver holds its lock: stop the container now; if nvidia-smi still hangs, reboot",
    )
