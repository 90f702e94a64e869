"""Stub tools of a simulated node (nvidia-smi, ibdev2netdev).

Run as `python3 -I -S stub.py STATE.json TOOL ARGS...` by the small wrappers the sim installs
in the node's /usr/local/bin. Standalone (stdlib only, no site): it prints what the real tools
print, in their formats (see selftests/data/SOURCES.md), from the node's state file. Live facts
are read live: ibdev2netdev takes each link's state from the netdev's real carrier, as the real
script does.
"""

from __future__ import annotations

import json
import sys
import time

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


def nvidia_smi(state: dict, args: list[str]) -> tuple[str, str, int]:
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


def ibdev2netdev(state: dict, args: list[str]) -> tuple[str, str, int]:
    lines = []
    for port in state["rdma_ports"]:
        try:
            with open(f"/sys/class/net/{port['netdev']}/carrier") as fh:
                up = fh.read().strip() == "1"
        except OSError:  # reading carrier of an admin-down netdev fails (EINVAL); the script says Down
            up = False
        lines.append(f"{port['rdma_device']} port 1 ==> {port['netdev']} ({'Up' if up else 'Down'})")
    return "\n".join(lines) + "\n", "", 0


TOOLS = {"nvidia-smi": nvidia_smi, "ibdev2netdev": ibdev2netdev}


def main(argv: list[str]) -> int:
    state_file, tool, args = argv[1], argv[2], argv[3:]
    with open(state_file) as fh:
        state = json.load(fh)
    joined = " ".join(args)
    for override in state.get("stubs", []):
        if override["tool"] == tool and override.get("match", "") in joined:
            time.sleep(float(override.get("delay", 0)))
            sys.stdout.write(override.get("stdout", ""))
            sys.stderr.write(override.get("stderr", ""))
            return int(override.get("rc", 0))
    out, err, rc = TOOLS[tool](state, args)
    sys.stdout.write(out)
    sys.stderr.write(err)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
