"""Every request has a total deadline: a server that trickles its answer cannot hold a check."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import pytest

from gb10check.errors import ServiceError
from selftests.unit.loopback import api_client

BODY = b'{"object": "list", "data": []}' + b" " * 70


def _loopback_server(answer: Callable[[socket.socket, threading.Event], None]):
    """A loopback server that reads each request, then answers it with `answer(conn, stop)`."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(65536)
                answer(conn, stop)

    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1], stop


def _trickle_server(phase: str):
    """A loopback server answering one byte a second, in the headers or in the body."""

    def answer(conn: socket.socket, stop: threading.Event) -> None:
        head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(BODY)}\r\n\r\n"
        slow, fast = (head.encode() + BODY, b"") if phase == "headers" else (BODY, head.encode())
        conn.sendall(fast)
        for byte in slow:
            if stop.wait(1.0):
                break
            try:
                conn.sendall(bytes([byte]))
            except OSError:
                break

    return _loopback_server(answer)


@pytest.mark.slow
@pytest.mark.parametrize("phase", ["headers", "body"])
def test_a_trickling_server_is_cut_off_at_the_deadline(phase):
    port, stop = _trickle_server(phase)
    client = api_client(port)
    start = time.monotonic()
    try:
        with pytest.raises(ServiceError, match=r"no complete answer within 3 s"):
            client.get("/v1/models")
    finally:
        elapsed = time.monotonic() - start
        stop.set()
        client.close()
    # the message names the limit that fired; the time only shows the request did not go on trickling
    # (the server would for ever): slack for a busy machine, never an idle machine's figure
    assert elapsed < 3 + 4, f"the request took {elapsed:.1f} s against a 3 s deadline"


def test_a_prompt_server_still_answers():
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = api_client(server.server_address[1])
    try:
        first, second = client.get("/health"), client.get("/health")  # the deadline is per request
    finally:
        client.close()
        server.shutdown()
    assert (first.status, first.text, second.status) == (200, "{}", 200)


def _silent_after_headers():
    """A loopback server that answers a stream's headers at once, then says nothing (a stuck engine)."""

    def answer(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
                     b"transfer-encoding: chunked\r\n\r\n")  # fmt: skip
        stop.wait(10)

    return _loopback_server(answer)


@pytest.mark.slow
def test_the_limit_that_fired_is_the_one_named():
    """Headers, then silence: the read timeout (1 s here) ends it, not the 5 s total; say which."""
    port, stop = _silent_after_headers()
    client = api_client(port, request_timeout=5, read_timeout=1)
    try:
        with pytest.raises(ServiceError) as caught:
            client.stream(model="m", messages=[])
    finally:
        stop.set()
        client.close()
    message = str(caught.value)
    assert "nothing for 1 s (service.read_timeout)" in message, message
    assert "HTTP 200" in message and "within 5 s" not in message, message
    assert caught.value.hint_ids == ("service-timeout",)


@pytest.mark.slow
def test_the_total_bound_is_named_when_it_fires():
    port, stop = _trickle_server("body")
    client = api_client(port, request_timeout=2.5, read_timeout=1.5)  # a byte a second: never 1.5 s silent
    try:
        with pytest.raises(ServiceError) as caught:
            client.get("/v1/models")
    finally:
        stop.set()
        client.close()
    assert "no complete answer within 2.5 s (service.request_timeout)" in str(caught.value), str(caught.value)
