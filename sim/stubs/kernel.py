"""dmesg of a simulated node: the kernel log the scenario gives it."""

from __future__ import annotations

__all__ = ["TYPE_CHECKING", "dmesg"]

TYPE_CHECKING = False  # mypy reads it as True; importing typing would cost every stub call ~5 ms

if TYPE_CHECKING:  # stdlib-only and started often: no typing import at run time
    from typing import Any


def dmesg(state: dict[str, Any], args: list[str]) -> tuple[str, str, int]:
    """The kernel ring buffer as `dmesg` prints it (the node's boot log and the scenario's lines)."""
    return "".join(f"{line}\n" for line in state["kernel_log"]), "", 0
