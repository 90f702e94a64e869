"""Fan work out across nodes in daemon threads that an interrupt does not wait for.

concurrent.futures joins its workers on the way out (`with` blocks, and again at interpreter
exit), so a SIGTERM during a 120 s `docker run` would wait for it. Here the main thread waits
on the threads, so KeyboardInterrupt reaches it at once; a thread still running then is
abandoned (its command keeps its own bound on the node, `timeout -k`) and dies with the process.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

__all__ = ["R", "T", "map_parallel"]

T = TypeVar("T")
R = TypeVar("R")


def map_parallel(work: Callable[[T], R], items: Iterable[T], name: str = "gb10check") -> list[R]:
    """`[work(i) for i in items]`, each in its own daemon thread; the first exception is re-raised."""
    items = list(items)
    results: list[tuple[bool, object]] = [(False, None)] * len(items)

    def one(index: int, item: T) -> None:
        try:
            results[index] = (True, work(item))
        except BaseException as exc:  # handed to the caller's thread
            results[index] = (False, exc)

    threads = [
        threading.Thread(target=one, args=(i, it), name=f"{name}-{i}", daemon=True) for i, it in enumerate(items)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    out: list[R] = []
    for ok, value in results:
        if not ok:
            raise value if isinstance(value, BaseException) else RuntimeError(f"{name}: a worker returned nothing")
        out.append(value)  # type: ignore[arg-type]
    return out
