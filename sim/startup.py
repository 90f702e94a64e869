"""The simulated deployment starting up in real time, for `--wait-ready` and its memory watchdog.

Over `startup_seconds`, each node's MemAvailable (the file bind-mounted over its /proc/meminfo)
falls as the weights load, from what the node shows before start to what a started node keeps
(or, for a runaway start, below the stop threshold), and each container log grows by the lines
of a healthy start, their times scaled to that duration. Rank 0's fake vLLM listens once this is
done (the file `done_file` exists: sim/fake_vllm.py), so whoever finds the API up reads the memory a
started node keeps, however busy the machine. Run by the sim as its own process:

    python -m sim.startup --config startup.json
"""

from __future__ import annotations

import argparse
import json
import os
import time
from datetime import UTC, datetime
from typing import Any

from sim import vllm_logs

__all__ = ["STEP", "main", "meminfo_text", "run", "write_in_place"]

STEP = 0.1  # seconds between updates


def meminfo_text(fields: dict[str, int]) -> str:
    """/proc/meminfo with a fixed width per value, so each rewrite has the same length: written in
    place (the bind mount follows the inode), a reader never sees a shorter file with a stale tail."""
    return "".join(f"{key + ':':<16}{value:>12} kB\n" for key, value in fields.items())


def write_in_place(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.pwrite(fd, text.encode(), 0)
    finally:
        os.close(fd)


def run(cfg: dict[str, Any]) -> None:
    seconds = float(cfg["seconds"])
    start = time.monotonic()
    started = datetime.now(UTC)
    nodes = cfg["nodes"]
    for node in nodes:
        span = max((at for at, _ in node["lines"]), default=1.0) or 1.0
        node["pending"] = [(at / span * seconds, text) for at, text in node["lines"]]
        write_in_place(node["meminfo_path"], meminfo_text(node["meminfo"]))
    while True:
        elapsed = time.monotonic() - start
        share = min(1.0, elapsed / seconds) if seconds else 1.0
        for node in nodes:
            before, after = node["meminfo"]["MemAvailable"], node["end_available_kb"]
            fields = {**node["meminfo"], "MemAvailable": int(before + (after - before) * share)}
            fields["MemFree"] = min(fields["MemFree"], fields["MemAvailable"])
            write_in_place(node["meminfo_path"], meminfo_text(fields))
            due = [(at, text) for at, text in node["pending"] if at <= elapsed]
            if due:
                node["pending"] = node["pending"][len(due) :]
                with open(node["log_path"], "a", encoding="utf-8") as fh:
                    fh.writelines(f"{line}\n" for line in vllm_logs.stamped(due, started))
        if share >= 1.0 and not any(node["pending"] for node in nodes):
            if cfg.get("done_file"):  # the last memory figure is written: rank 0's vLLM may listen now
                open(cfg["done_file"], "w").close()
            return
        time.sleep(STEP)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", required=True)
    args = parser.parse_args()
    with open(args.config, encoding="utf-8") as fh:
        run(json.load(fh))


if __name__ == "__main__":
    main()
