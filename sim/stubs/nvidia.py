"""nvidia-smi and modinfo of a simulated GB10 node: the driver, NVML and the GPU's state, as the real tools
print them."""

from __future__ import annotations

import time

__all__ = ["GB10_TABLE", "MISMATCH", "NO_DRIVER", "TYPE_CHECKING", "modinfo", "nvidia_smi"]

TYPE_CHECKING = False  # mypy reads it as True; importing typing would cost every stub call ~5 ms

if TYPE_CHECKING:  # stdlib-only and started often: no typing import at run time
    from typing import Any

# the real table has 7 trailing spaces after the date
GB10_TABLE = (
    "{date}       \n"
    + """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI {smi:<22}Driver Version: {drv:<15}CUDA Version: {cuda:<9}|
+-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA GB10                    On  |   0000000F:01:00.0 Off |                  N/A |
| N/A   42C    P8              4W /  N/A  | Not Supported          |      0%      Default |
|                                         |                        |                  N/A |
+-----------------------------------------+------------------------+----------------------+

+-----------------------------------------------------------------------------------------+
| Processes:                                                                              |
|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |
|        ID   ID                                                               Usage      |
|=========================================================================================|
|  No running processes found                                                             |
+-----------------------------------------------------------------------------------------+
"""
)
MISMATCH = "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: {lib}\n"
NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n\n"
)


def _nvml_short(version: str) -> str:
    # NVML prints major.minor of the userspace library: 580.173.02 -> 580.173
    return ".".join(version.split(".")[:2])


def nvidia_smi(state: dict[str, Any], args: list[str]) -> tuple[str, str, int]:
    drv = state["driver"]
    if not drv.get("kernel"):
        return NO_DRIVER, "", 9
    if drv["kernel"] != drv["userspace"]:
        return MISMATCH.format(lib=_nvml_short(drv["userspace"])), "", 18
    joined = " ".join(args)
    if "--query-gpu=" in joined:
        fields = joined.split("--query-gpu=", 1)[1].split()[0].split(",")
        values = {
            "driver_version": drv["kernel"],
            "name": "NVIDIA GB10",
            "memory.used": "[N/A]",
            "memory.total": "[N/A]",
            "uuid": state["gpu_uuid"],
            **_gpu_state(state["gpu"], units="nounits" not in joined),
        }
        unknown = [f for f in fields if f not in values]
        if unknown:
            return "", f'Field "{unknown[0]}" is not a valid field to query.\n', 2
        header = "" if "noheader" in joined else ", ".join(fields) + "\n"
        return header + ", ".join(values[f] for f in fields) + "\n", "", 0
    if args[:1] == ["-L"]:
        return f"GPU 0: NVIDIA GB10 (UUID: {state['gpu_uuid']})\n", "", 0
    if not args:
        date = time.strftime("%a %b %e %H:%M:%S %Y")
        return GB10_TABLE.format(date=date, smi=drv["kernel"], drv=drv["kernel"], cuda=drv["cuda"]), "", 0
    return "", f"Invalid combination of input arguments: {joined}\n", 2


# NVML's nvmlClocksEventReason* bits (nvml.h), as clocks_event_reasons.active prints their sum
_REASON_BITS = {
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80,
}


def _gpu_state(gpu: dict[str, Any], units: bool) -> dict[str, str]:
    """The query's GPU-state fields as nvidia-smi prints them (with units unless `nounits`)."""
    active = set(gpu["reasons"])
    if active & {"hw_thermal_slowdown", "hw_power_brake_slowdown"}:
        active.add("hw_slowdown")  # nvidia-smi: either is a HW slowdown
    mask = sum(_REASON_BITS[r] for r in active) or 0x1  # nothing holds the clocks: the GPU is idle
    mhz, watts = (" MHz", " W") if units else ("", "")
    out = {
        "pstate": gpu["pstate"],
        "clocks.sm": f"{gpu['sm_mhz']:.0f}{mhz}",
        "clocks.max.sm": f"{gpu['max_sm_mhz']:.0f}{mhz}",
        "power.draw": f"{gpu['power_w']:.2f}{watts}",
        "temperature.gpu": f"{gpu['temperature_c']:.0f}",
        "clocks_event_reasons.active": f"0x{mask:016X}" if gpu["reported"] else "[N/A]",
    }
    for reason in _REASON_BITS:
        said = ("Active" if reason in active else "Not Active") if gpu["reported"] else "[N/A]"
        out[f"clocks_event_reasons.{reason}"] = said
    return out


def modinfo(state: dict[str, Any], args: list[str]) -> tuple[str, str, int]:
    """`modinfo -F version nvidia`: the module installed on disk (what the next boot loads)."""
    installed = state["driver"].get("installed") or state["driver"].get("userspace")
    if args[-1:] != ["nvidia"] or not installed:
        name = args[-1] if args else ""
        return "", f"modinfo: ERROR: Module {name} not found.\n", 1
    if "-F" in args and args[args.index("-F") + 1] == "version":
        return installed + "\n", "", 0
    return (
        f"filename:       /lib/modules/6.17.0-1014-nvidia/updates/dkms/nvidia.ko.zst\nversion:        {installed}\n",
        "",
        0,
    )
