"""Every file the suite writes: a new file in its folder, renamed over the old one.

A reader (a dashboard, node_exporter, the next run's history) never sees half a file, and
whatever stood at the path (a symlink planted in a shared reports folder, a file of another
user) is replaced, never written through. The new file is made by mkstemp (O_EXCL, a random
name: no planted name is ever opened) and gets the mode an ordinary file would (0666 less the
umask: node_exporter reads the Prometheus file as another user).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["write"]


def _umask() -> int:
    """The process's umask, read without changing it (os.umask sets it; threads may be writing)."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write(path: Path, data: str | bytes) -> None:
    """`data` (text is written as UTF-8) into PATH, atomically; the folder must exist."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), 0o666 & ~_umask())
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
