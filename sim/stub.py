"""The stub tools of a simulated node: the one entry point, and which module of sim/stubs/ answers each tool.

Run as `python3 -I -S stub.py STATE.json TOOL ARGS...` by the small wrappers the sim installs in the node's
bin folder (sim/node_files.py copies this file and sim/stubs/ beside the node's state). Standalone (stdlib
only, no site): each tool's module prints what the real tool prints, in its formats (see
selftests/data/SOURCES.md), from the node's state file, and only that tool's module is imported. A
scenario's verbatim `[[nodes.X.stubs]]` output, where one matches the call, is printed instead.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time

__all__ = ["FS_TOOLS", "LANGUAGE_TOOLS", "TOOLS", "main"]

# tool -> the module of sim/stubs/ and its function that answers it
TOOLS = {
    "all_gather_perf": ("nccl_tests", "all_gather_perf"),
    "dmesg": ("kernel", "dmesg"),
    "nvidia-smi": ("nvidia", "nvidia_smi"),
    "ibdev2netdev": ("rdma", "ibdev2netdev"),
    "modinfo": ("nvidia", "modinfo"),
    "docker": ("docker", "docker"),
    "ib_write_bw": ("perftest", "ib_write_bw"),
}
FS_TOOLS = {"stat": ("stat", "stat")}  # installed on a node whose HF cache the scenario puts on another filesystem
LANGUAGE_TOOLS = {"ping": ("ping", "ping")}  # installed on a node whose login_env names a language (sim/language.py)


def _repeat(out: str, err: str, times: int) -> None:
    """The verbatim output `times` times (0: until killed), in blocks of about 1 MiB: a flooding tool."""
    if not out and not err:
        return
    per_block = max(1, (1 << 20) // max(len(out), len(err), 1))
    left = times if times > 0 else -1
    while left != 0:
        n = per_block if left < 0 else min(per_block, left)
        sys.stdout.write(out * n)
        sys.stderr.write(err * n)
        left = left - n if left > 0 else left


def main(argv: list[str]) -> int:
    state_file, tool, args = argv[1], argv[2], argv[3:]
    with open(state_file) as fh:
        state = json.load(fh)
    joined = " ".join(args)
    for override in state.get("stubs", []):
        if override["tool"] == tool and override.get("match", "") in joined:
            time.sleep(float(override.get("delay", 0)))
            _repeat(override.get("stdout", ""), override.get("stderr", ""), int(override.get("repeat", 1)))
            return int(override.get("rc", 0))
    module, function = {**TOOLS, **LANGUAGE_TOOLS, **FS_TOOLS}[tool]
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I leaves this file's folder out
    answer = getattr(importlib.import_module(f"stubs.{module}"), function)
    if module == "docker":  # its collective's containers live beside the node's state
        setattr(importlib.import_module("stubs.docker"), "STATE_FILE", state_file)  # noqa: B010
    out, err, rc = answer(state, args)
    sys.stdout.write(out)
    sys.stderr.write(err)
    return int(rc)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
