"""A simulated cluster an operator brings up by hand (`gb10check sim up SCENARIO` in its own process: its own
owner, beside the session's own clusters), for tests that run the suite, init or a node's commands against it."""

from __future__ import annotations

import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gb10check import inventory as inv

__all__ = ["UpByHand", "up_by_hand"]


@dataclass
class UpByHand:
    """A cluster an operator brought up with `gb10check sim up SCENARIO` (its own process: its own owner)."""

    inventory: inv.Inventory
    dir: Path
    api_namespace: str
    inventory_path: Path


def up_by_hand(scenario: str) -> Iterator[UpByHand]:
    """`gb10check sim up SCENARIO` in its own process (its own owner: beside the session's own clusters)."""
    from sim.cluster import why_not_available

    if why_not_available():
        pytest.skip(why_not_available())
    proc = subprocess.Popen(
        [sys.executable, "-m", "gb10check.commands.cli", "sim", "up", scenario],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        lines: list[str] = []
        deadline = time.monotonic() + 600  # a bound for a loaded machine, not a figure
        while time.monotonic() < deadline and proc.poll() is None:
            ready, _, _ = select.select([proc.stdout], [], [], 5)
            if not ready:
                continue
            line = proc.stdout.readline()
            lines.append(line)
            up = re.search(r"inventory: (\S+); rank 0 namespace: (\S+)", line)
            if up:
                path = Path(up[1])
                yield UpByHand(inv.load_inventory(path), path.parent, up[2], path)
                return
        pytest.fail("gb10check sim up did not come up:\n" + "".join(lines))
    finally:
        proc.send_signal(signal.SIGTERM)  # as `kill` ends it (SIGINT is ignored in a background job)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
