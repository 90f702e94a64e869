"""Entering a network namespace from Python (os.setns is 3.12+; this is 3.11-compatible).

A network namespace is a per-thread attribute: setns moves only the calling thread, and
threads started afterwards inherit it. The suite enters rank 0's namespace on the main thread
before any connection or worker thread exists, as it would run on rank 0 in production.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Iterator
from contextlib import contextmanager

from gb10check.errors import SimError

__all__ = ["CLONE_NEWNET", "enter", "inside", "leave"]

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise SimError(f"setns(CLONE_NEWNET) failed: {os.strerror(err)}")


def enter(name: str) -> int:
    """Move the calling thread into netns `name`; returns a fd to the previous one (for leave)."""
    previous = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(f"/run/netns/{name}", os.O_RDONLY)
    except OSError as exc:
        os.close(previous)
        raise SimError(f"network namespace {name} does not exist: {exc.strerror}") from exc
    try:
        _setns(target)
    finally:
        os.close(target)
    return previous


def leave(previous: int) -> None:
    try:
        _setns(previous)
    finally:
        os.close(previous)


@contextmanager
def inside(name: str) -> Iterator[None]:
    previous = enter(name)
    try:
        yield
    finally:
        leave(previous)
