"""stat of a simulated node whose HF cache the scenario puts on another filesystem."""

from __future__ import annotations

__all__ = ["TYPE_CHECKING", "stat"]

TYPE_CHECKING = False  # mypy reads it as True; importing typing would cost every stub call ~5 ms

if TYPE_CHECKING:  # stdlib-only and started often: no typing import at run time
    from typing import Any


def stat(state: dict[str, Any], args: list[str]) -> tuple[str, str, int]:
    """The real stat, but for `stat -f -c %T` of the HF cache on a node whose cache the scenario puts on
    another filesystem (nodes.<name>.hf.filesystem: "nfs4", a folder shared by the nodes), which it names."""
    import subprocess

    fs = state.get("hf_filesystem")
    if fs and args[:3] == ["-f", "-c", "%T"] and len(args) == 4 and args[3].rstrip("/") == state["hf_cache"]:
        return f"{fs}\n", "", 0
    proc = subprocess.run(["/usr/bin/stat", *args], capture_output=True, text=True)
    return proc.stdout, proc.stderr, proc.returncode
