"""Asking the vLLM OpenAI-compatible API on rank 0 as its users do, every request bounded in total.

Chat completions go through the openai SDK (retries off, explicit connect and read timeouts),
as the deployment's users call it. Raw httpx only where the SDK hides what a check must see:
GET /health, /version and /metrics, and streamed completions (the SDK swallows the SSE framing
and `data: [DONE]`, and gives no arrival times). Every request, a stream read to its end
included, finishes within request_timeout (gb10check/service/deadline.py); a stream that goes silent
for read_timeout is a stall. The API key comes from the environment variable the inventory
names and is registered with the redaction step before any request.

Transport failures are ServiceError (refused, timed out, stalled, not JSON); an HTTP error status
is an answer, returned for the check to judge.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpcore
import httpx
import openai

from gb10check.errors import ParseError, ServiceError
from gb10check.inventory import ApiSpec
from gb10check.reading.parsers import json_object
from gb10check.reading.parsers.vllm_api import DONE, api_error_message, parse_sse
from gb10check.safe_text import redact
from gb10check.service import deadline
from gb10check.service.deadline import DeadlineTransport

__all__ = ["VLLM_PARAMETERS", "ApiClient", "HttpAnswer", "Reply", "StreamReply"]

VLLM_PARAMETERS = ("chat_template_kwargs",)  # not in the OpenAI API: the SDK sends them in extra_body


@dataclass(frozen=True)
class HttpAnswer:
    url: str
    status: int
    text: str
    elapsed: float


@dataclass(frozen=True)
class Reply:
    """One non-streamed chat completion: the body as vLLM sent it (extra fields kept), or its error."""

    status: int
    body: dict[str, Any]
    error: str  # the server's message when status is not 200
    seconds: float

    @property
    def choice(self) -> dict[str, Any]:
        choices = self.body.get("choices") or [{}]
        return choices[0] if isinstance(choices[0], dict) else {}

    @property
    def message(self) -> dict[str, Any]:
        return self.choice.get("message") or {}

    @property
    def content(self) -> str:
        return str(self.message.get("content") or "")

    @property
    def finish_reason(self) -> str | None:
        return self.choice.get("finish_reason")

    @property
    def usage(self) -> dict[str, Any]:
        return self.body.get("usage") or {}


@dataclass
class StreamReply:
    """One streamed chat completion: each event's JSON chunk with its arrival time (seconds since the
    request was sent), whether `data: [DONE]` ended it, and what went wrong if it did not."""

    status: int
    error: str = ""
    chunks: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    done: bool = False
    seconds: float = 0.0
    stalled: str = ""  # why the stream stopped early (a stall, the deadline), with what had arrived

    @property
    def deltas(self) -> list[dict[str, Any]]:
        return [c["choices"][0].get("delta") or {} for _, c in self.chunks if c.get("choices")]

    @property
    def finish_reason(self) -> str | None:
        reasons = [c["choices"][0].get("finish_reason") for _, c in self.chunks if c.get("choices")]
        return next((r for r in reversed(reasons) if r), None)

    @property
    def usage(self) -> dict[str, Any] | None:
        usage = [c["usage"] for _, c in self.chunks if isinstance(c.get("usage"), dict)]
        return usage[-1] if usage else None

    def text(self, key: str) -> str:
        return "".join(str(d.get(key) or "") for d in self.deltas)


class ApiClient:
    def __init__(self, spec: ApiSpec, env: dict[str, str] | None = None) -> None:
        self.spec = spec
        env = dict(os.environ) if env is None else env
        key = env.get(spec.api_key_env) if spec.api_key_env else None
        redact.register([key])  # the key the suite sends is never shown
        self.base = spec.base_url.rstrip("/")
        # a non-streamed answer (the SDK's) comes whole at the end: only the total bounds it; a stream and
        # a GET must also never go silent for longer than read_timeout
        timeout = httpx.Timeout(spec.request_timeout, connect=spec.connect_timeout, read=spec.read_timeout)
        self._http = httpx.Client(
            base_url=self.base,
            headers={"Authorization": f"Bearer {key}"} if key else {},
            timeout=timeout,
            transport=DeadlineTransport(trust_env=False),
            trust_env=False,  # the API is local to the cluster: never through a proxy
        )
        self._sdk = openai.OpenAI(
            base_url=f"{self.base}/v1",
            api_key=key or "EMPTY",  # vLLM without --api-key takes any
            max_retries=0,  # a timeout is a verdict, not a reason to try again unseen
            timeout=spec.request_timeout,
            http_client=_sdk_http_client(spec),
        )

    @contextmanager
    def _bounded(self, what: str) -> Iterator[float]:
        """The request within request_timeout in total; transport failures as ServiceError."""
        start = time.monotonic()
        try:
            with deadline.within(self.spec.request_timeout):
                yield start
        except (httpx.TimeoutException, openai.APITimeoutError) as exc:
            raise ServiceError(f"{what}: {self.limit_that_fired(exc, start)}", hint_ids=("service-timeout",)) from exc
        except (httpx.HTTPError, openai.APIConnectionError) as exc:
            raise ServiceError(f"{what}: {type(exc).__name__}: {exc}") from exc

    def limit_that_fired(self, exc: BaseException, start: float) -> str:
        """Which bound ended a request, by its setting: the total (each socket operation gets at most
        the time left before it: gb10check/service/deadline.py), else the connect or the read timeout."""
        s, elapsed = self.spec, time.monotonic() - start
        if elapsed >= s.request_timeout:
            return f"no complete answer within {s.request_timeout:g} s (service.request_timeout)"
        cause = exc.__cause__ if isinstance(exc, openai.APITimeoutError) else exc
        if type(cause).__name__ in ("ConnectTimeout", "PoolTimeout"):
            return f"no connection within {s.connect_timeout:g} s (service.connect_timeout)"
        return (
            f"nothing for {s.read_timeout:g} s (service.read_timeout); gave up after {elapsed:.1f} s "
            f"of the {s.request_timeout:g} s service.request_timeout allows"
        )

    def get(self, path: str) -> HttpAnswer:
        """One GET, all of it (connect, headers, body) within request_timeout."""
        url = f"{self.base}{path}"
        with self._bounded(f"GET {url}"):
            resp = self._http.get(path)
        return HttpAnswer(url, resp.status_code, resp.text, resp.elapsed.total_seconds())

    def chat(self, **request: Any) -> Reply:
        """POST /v1/chat/completions through the SDK (not streamed); vLLM's own parameters
        (chat_template_kwargs) go where the SDK's users put them, in extra_body."""
        what = f"POST {self.base}/v1/chat/completions"
        extra = {k: request.pop(k) for k in VLLM_PARAMETERS if k in request}
        with self._bounded(what) as start:
            try:
                completion = self._sdk.chat.completions.create(**request, extra_body=extra or None)
            except openai.APIStatusError as exc:
                text = exc.response.text if exc.response is not None else str(exc)
                return Reply(exc.status_code, {}, api_error_message(text), time.monotonic() - start)
            except openai.APIResponseValidationError as exc:
                body = exc.response.text if exc.response is not None else ""
                raise ParseError(what, f"the answer is not a chat completion ({exc.message})", body) from exc
        if isinstance(completion, str):  # the SDK hands back a body it could not read as JSON as text
            raise ParseError(what, "the answer is not JSON", completion)
        body = completion.model_dump()
        if not isinstance(body.get("choices"), list):
            raise ParseError(what, "the answer has no 'choices' list", json.dumps(body)[:600])
        return Reply(200, body, "", time.monotonic() - start)

    def stream(self, **request: Any) -> StreamReply:
        """POST /v1/chat/completions with stream: true, read raw: every SSE event timed on arrival.
        A stall (no byte for read_timeout) or the total deadline ends it with what had arrived."""
        what = f"POST {self.base}/v1/chat/completions (stream)"
        payload = {**request, "stream": True}
        reply = StreamReply(status=0)
        raw: list[str] = []
        start = time.monotonic()
        try:
            with self._bounded(what) as start, self._http.stream("POST", "/v1/chat/completions", json=payload) as resp:
                reply.status = resp.status_code
                if resp.status_code != 200:
                    resp.read()
                    reply.error = api_error_message(resp.text)
                    reply.seconds = time.monotonic() - start
                    return reply
                kind = resp.headers.get("content-type", "")
                if not kind.startswith("text/event-stream"):
                    resp.read()
                    detail = f"the answer is not an event stream (content-type {kind or 'none'})"
                    raise ParseError(what, detail, resp.text)
                for line in resp.iter_lines():
                    raw.append(line)
                    if line.startswith("data: "):
                        data = line[len("data: ") :]
                        if data == DONE:
                            reply.done = True
                        else:
                            reply.chunks.append(
                                (time.monotonic() - start, json_object(data, f"an SSE event of {what}"))
                            )
        except ServiceError as exc:
            cause = exc.__cause__
            timeout = isinstance(cause, httpx.TimeoutException)
            why = self.limit_that_fired(cause, start) if timeout and cause else str(exc).split(": ", 1)[-1]
            if not raw and reply.status:  # the headers came: the engine took the request, then said nothing
                raise ServiceError(
                    f"{what}: HTTP {reply.status} and the event stream's headers came, then {why}",
                    hint_ids=exc.hint_ids,
                ) from cause
            if not raw:
                raise
            kind = "stalled" if timeout and "service.read_timeout" in why else "was cut short"
            reply.stalled = f"the stream {kind} after {len(reply.chunks)} event(s): {why}"
        reply.seconds = time.monotonic() - start
        if reply.done:
            parse_sse("\n".join(raw) + "\n")  # the framing: one `data:` line per event, blank lines between
        return reply

    def close(self) -> None:
        self._http.close()
        self._sdk.close()


def _sdk_http_client(spec: ApiSpec) -> Any:
    """An HTTP client of the library the installed SDK is built on (httpx before openai 3, httpx2
    since), its sockets bounded by the request's total deadline, no proxy from the environment."""
    core: Any
    http: Any
    if int(openai.__version__.split(".")[0]) >= 3:
        import httpcore2 as core
        import httpx2 as http
    else:  # the SDK before 3.0
        core, http = httpcore, httpx
    transport = deadline.bound_sockets(http.HTTPTransport(trust_env=False), core)
    timeout = http.Timeout(spec.request_timeout, connect=spec.connect_timeout)
    return http.Client(transport=transport, trust_env=False, timeout=timeout)
