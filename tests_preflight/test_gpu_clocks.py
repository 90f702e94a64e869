"""The GPU's clocks: nothing but load decides them. A HW slowdown (too hot, or the power supply's brake), a SW
thermal slowdown, or a power cap reached while nothing runs holds the clocks down whatever vLLM asks, and
decode runs at a fraction of its speed (gb10check/reading/parsers/gpu_clocks.py)."""

import pytest

from gb10check.errors import GB10Error
from gb10check.reading import probes
from gb10check.reading.facts import container
from gb10check.reading.parsers.gpu_clocks import REASONS, SLOWDOWNS
from gb10check.reading.parsers.nvidia import NoDriver, NvmlMismatch

pytestmark = pytest.mark.preflight

DRIVER = "tests_preflight/test_driver.py::test_driver_versions_match[{node}]"
ANSWERS = "tests_preflight/test_nvidia_smi.py::test_nvidia_smi_answers[{node}]"


@pytest.mark.hints("gpu-throttled")
def test_gpu_clocks_not_held_down(node, nvidia_smi, inventory, evidence):
    """The GPU's clocks not held down by heat or power.

    nvidia-smi's clock event reasons: none of HW slowdown, HW thermal or power brake slowdown, SW thermal slowdown,
    nor a SW power cap while nothing runs. The P-state, SM clock, power and temperature are recorded either way. A
    GPU whose nvidia-smi reports no clock event reasons skips, saying so."""
    snap = node.snapshot()
    if nvidia_smi.timed_out:
        pytest.skip(f"follows from {ANSWERS.format(node=node.name)}: nvidia-smi gave no answer")
    try:
        smi = snap.fact(probes.NVIDIA_SMI)
    except GB10Error as exc:  # the driver check owns what nvidia-smi cannot say
        pytest.skip(f"follows from {DRIVER.format(node=node.name)}: {str(exc)[:200]}")
    if isinstance(smi, (NvmlMismatch, NoDriver)):
        pytest.skip(f"follows from {DRIVER.format(node=node.name)}: nvidia-smi cannot ask the driver")
    clocks = snap.fact(probes.GPU_CLOCKS)
    evidence.fact("gpu", clocks.shown())
    for name, value in (("gpu_temperature_c", clocks.temperature_c), ("gpu_power_w", clocks.power_w)):
        evidence.figure(name, value)
    evidence.figure("gpu_sm_mhz", clocks.sm_mhz)
    if not clocks.reported:
        pytest.skip(f"{node.name}'s nvidia-smi reports no clock event reasons ([N/A]): nothing to judge them by")
    try:
        c = container(snap) if inventory.deployment is not None else None
    except GB10Error:  # docker cannot say whether vLLM runs (its own checks fail on it): a power cap is not judged
        c = None
        busy = True
    else:
        busy = c is not None and c.running
    held = [r for r in clocks.active if r in SLOWDOWNS or (r == "sw_power_cap" and not busy)]
    evidence.expect(
        not held,
        what="the GPU's clock event reasons",
        expected="none of HW slowdown, HW thermal or power brake slowdown, SW thermal slowdown"
        + ("" if busy else ", SW power cap (nothing runs)"),
        found="; ".join(REASONS[r] for r in held) + f" ({clocks.shown()})" if held else clocks.shown(),
    )
