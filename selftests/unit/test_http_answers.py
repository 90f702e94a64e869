"""What the API can answer on a bad day, through the suite's client: each a clear verdict or error."""

from __future__ import annotations

import socket
import threading

import pytest

from gb10check.errors import ParseError, ServiceError
from gb10check.reading.parsers.vllm_api import parse_models
from selftests.unit.loopback import api_client


def _serve_once(raw: bytes, close_early: bool = False):
    """A loopback server that answers every request with these bytes."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                conn.sendall(raw)
                if close_early:
                    conn.shutdown(socket.SHUT_RDWR)

    threading.Thread(target=serve, daemon=True).start()
    return listener


def _http(status: str, body: bytes, ctype: str = "application/json") -> bytes:
    head = f"HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\ncontent-length: {len(body)}\r\n\r\n"
    return head.encode() + body


ANSWERS = {
    "500 html page": (
        _http("500 Internal Server Error", b"<html><h1>Internal Server Error</h1></html>", "text/html"),
        "status",
        500,
    ),
    "502 from a proxy": (_http("502 Bad Gateway", b"bad gateway", "text/plain"), "status", 502),
    "200 not json": (_http("200 OK", b"<!doctype html><title>login</title>", "text/html"), "parse", "not JSON"),
    "200 json of another shape": (_http("200 OK", b'{"models": ["m"]}'), "parse", "data"),
    "200 cut short": (b'HTTP/1.1 200 OK\r\ncontent-length: 500\r\n\r\n{"object": "li', "error", "GET"),
    "not http at all": (b"SSH-2.0-OpenSSH_9.6\r\n", "error", "GET"),
}


@pytest.mark.parametrize("case", list(ANSWERS))
def test_a_broken_answer_is_a_clear_verdict(case):
    raw, kind, expected = ANSWERS[case]
    listener = _serve_once(raw, close_early=True)
    client = api_client(listener.getsockname()[1])
    try:
        if kind == "error":
            with pytest.raises(ServiceError, match=str(expected)):
                client.get("/v1/models")
            return
        answer = client.get("/v1/models")
        if kind == "status":
            assert answer.status == expected
        else:
            assert answer.status == 200
            with pytest.raises(ParseError, match=str(expected)):
                parse_models(answer.text)
    finally:
        client.close()
        listener.close()


def test_nothing_listening_is_service_unreachable():
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # the port is free: a connect is refused
    client = api_client(port)
    try:
        with pytest.raises(ServiceError) as err:
            client.get("/health")
    finally:
        client.close()
    assert err.value.hint_ids == ("service-unreachable",) and f"127.0.0.1:{port}/health" in str(err.value)
