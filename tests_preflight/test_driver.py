"""The NVIDIA driver: the loaded kernel module and the userspace library must be one version."""

import pytest

from gb10check.parsers.nvidia import (
    NoDriver,
    NvmlMismatch,
    parse_module_version,
    parse_nvidia_smi_query,
    parse_proc_driver_version,
)

pytestmark = pytest.mark.preflight


def _loaded_module_version(node, evidence):
    snap = node.snapshot()
    if snap.raw("proc_driver_version").ok:
        return snap.parsed("proc_driver_version", parse_proc_driver_version).version
    if snap.raw("module_version").ok:
        return snap.parsed("module_version", parse_module_version)
    # both are absent exactly when no nvidia module is loaded
    evidence.expect(
        False,
        what="NVIDIA kernel module",
        expected="loaded",
        found="not loaded",
        detail=f"cat /proc/driver/nvidia/version: {snap.raw('proc_driver_version').stderr.strip()[:120]!r}",
    )


@pytest.mark.smoke
@pytest.mark.hints("driver-version-mismatch")
def test_driver_versions_match(node, evidence):
    kernel = _loaded_module_version(node, evidence)
    # nvidia-smi exits 18 (NVML_ERROR_LIB_RM_VERSION_MISMATCH) or 9 (no driver) with a message
    smi = node.snapshot().parsed("nvidia_smi_query", parse_nvidia_smi_query, accept_rc=(0, 9, 18))
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
