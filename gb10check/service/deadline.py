"""A total deadline for HTTP requests: httpx bounds each socket operation, not the request.

A server that answers one byte a second never trips a 3 s read timeout, and holds a check for
as long as it likes. Here every socket operation of a request gets at most the time left before
the request's deadline, so the whole request (connect, headers, body, a stream read to its end)
is bounded. The deadline is set per request with `within(seconds)`, in the calling thread's
context; the openai SDK takes the same transport (`httpx.Client(transport=DeadlineTransport())`).
"""

from __future__ import annotations

import contextvars
import ssl
import time
import typing
from collections.abc import Iterator
from contextlib import contextmanager

import httpcore
import httpx

__all__ = ["DeadlineTransport", "bound_sockets", "within"]

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("gb10check_http_deadline", default=None)


@contextmanager
def within(seconds: float) -> Iterator[None]:
    """Every request made in this block, in this thread, ends within `seconds` of entering it."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _left(timeout: float | None, kind: type[Exception]) -> float | None:
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise kind("the request's total deadline passed")
    return remaining if timeout is None else min(timeout, remaining)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: typing.Any, core: typing.Any) -> None:
        self._inner = inner
        self._core = core  # the httpcore-like module whose timeouts the pool above maps

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return bytes(self._inner.read(max_bytes, _left(timeout, self._core.ReadTimeout)))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, self._core.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        left = _left(timeout, self._core.ConnectTimeout)
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, left), self._core)

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, inner: typing.Any, core: typing.Any) -> None:
        self._inner = inner
        self._core = core

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[typing.Any] | None = None,
    ) -> httpcore.NetworkStream:
        left = _left(timeout, self._core.ConnectTimeout)
        return _Stream(self._inner.connect_tcp(host, port, left, local_address, socket_options), self._core)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: typing.Iterable[typing.Any] | None = None
    ) -> httpcore.NetworkStream:
        left = _left(timeout, self._core.ConnectTimeout)
        return _Stream(self._inner.connect_unix_socket(path, left, socket_options), self._core)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def bound_sockets(transport: typing.Any, core: typing.Any) -> typing.Any:
    """An httpx-like HTTPTransport whose connections' sockets are bounded by `within()`'s deadline
    (`core`: the httpcore-like module under it, whose timeout errors its pool turns into its own)."""
    # the pool builds each connection with its backend: wrap it before the first one
    pool = transport._pool
    pool._network_backend = _Backend(pool._network_backend, core)
    return transport


class DeadlineTransport(httpx.HTTPTransport):
    """httpx's own transport, its sockets bounded by the deadline of `within()`."""

    def __init__(self, **kwargs: typing.Any) -> None:
        super().__init__(**kwargs)
        bound_sockets(self, httpcore)
