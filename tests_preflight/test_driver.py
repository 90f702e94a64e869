"""The NVIDIA driver: the loaded kernel module, the userspace library and the installed module agree."""

import pytest

from gb10check.errors import clip
from gb10check.reading import probes
from gb10check.reading.facts import loaded_module
from gb10check.reading.parsers.nvidia import NoDriver, NvmlMismatch

pytestmark = pytest.mark.preflight


def _loaded(node, evidence):
    snap = node.snapshot()
    version = loaded_module(snap)
    # both are absent exactly when no nvidia module is loaded
    evidence.expect(
        version is not None,
        what="NVIDIA kernel module",
        expected="loaded",
        found=version or "not loaded",
        detail=f"cat /proc/driver/nvidia/version: {clip(snap.raw(probes.PROC_DRIVER_VERSION).stderr.strip(), 160)!r}",
        hints=("driver-not-loaded",),  # not a version skew: nothing is loaded to compare
    )
    return version


@pytest.mark.smoke
@pytest.mark.hints("driver-version-mismatch")
def test_driver_versions_match(node, nvidia_smi, evidence):
    """The NVIDIA userspace matches the loaded kernel module.

    The version of the loaded NVIDIA kernel module (`/proc/driver/nvidia/version`) is the version of the userspace
    (NVML) driver nvidia-smi reports. nvidia-smi's `Driver/library version mismatch` fails with the NVML library's
    version (reboot the node); a node with no module loaded fails as such."""
    kernel = _loaded(node, evidence)
    # nvidia-smi exits 18 (NVML_ERROR_LIB_RM_VERSION_MISMATCH) or 9 (no driver) with a message
    smi = node.snapshot().fact(probes.NVIDIA_SMI)
    what = "NVIDIA driver, kernel module vs userspace (NVML)"
    if isinstance(smi, NvmlMismatch):
        evidence.expect(
            False,
            what=what,
            expected=f"userspace = kernel module {kernel}",
            found=f"kernel module {kernel}, userspace NVML library {smi.library_version or '?'}",
            detail="nvidia-smi: Failed to initialize NVML: Driver/library version mismatch; reboot this node",
        )
    if isinstance(smi, NoDriver):
        evidence.expect(False, what=what, expected=f"NVML answering for module {kernel}", found=smi.message)
    evidence.expect(
        smi.driver_version == kernel,
        what=what,
        expected=f"userspace = kernel module {kernel}",
        found=f"kernel module {kernel}, userspace {smi.driver_version}",
    )


@pytest.mark.hints("driver-reboot-pending")
def test_installed_module_is_the_loaded_one(node, evidence):
    """The installed NVIDIA module is the loaded one.

    The NVIDIA module installed on disk (`modinfo`) is the version of the loaded one. A driver upgrade installs a new
    module on disk; until a reboot the old one stays loaded, and the next boot loads the installed one."""
    kernel = _loaded(node, evidence)
    installed = node.snapshot().fact(probes.MODINFO_VERSION)
    evidence.expect(
        installed == kernel,
        what="NVIDIA kernel module, loaded vs installed (modinfo)",
        expected=f"installed = loaded {kernel}",
        found=f"loaded {kernel}, installed {installed}",
        detail="the next boot loads the installed module; reboot this node in a quiet hour",
    )
