"""Asking the vLLM OpenAI-compatible API on the API node. Every request is bounded."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import httpx

from gb10check import deadline, redact
from gb10check.deadline import DeadlineTransport
from gb10check.errors import ServiceError
from gb10check.inventory import ApiSpec


@dataclass(frozen=True)
class HttpAnswer:
    url: str
    status: int
    text: str
    elapsed: float


class ApiClient:
    def __init__(self, spec: ApiSpec, env: dict[str, str] | None = None) -> None:
        self.spec = spec
        env = dict(os.environ) if env is None else env
        key = env.get(spec.api_key_env) if spec.api_key_env else None
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        redact.register([key])  # the key the suite sends is never shown
        self._client = httpx.Client(
            base_url=spec.base_url.rstrip("/"),
            headers=headers,
            timeout=httpx.Timeout(spec.request_timeout, connect=min(5.0, spec.request_timeout)),
            transport=DeadlineTransport(trust_env=False),
            trust_env=False,  # the API is local to the cluster: never through a proxy
        )

    def get(self, path: str) -> HttpAnswer:
        """One GET, all of it (connect, headers, body) within request_timeout."""
        url = f"{self.spec.base_url.rstrip('/')}{path}"
        start = time.monotonic()
        try:
            with deadline.within(self.spec.request_timeout):
                resp = self._client.get(path)
        except httpx.TimeoutException as exc:
            raise ServiceError(
                f"GET {url}: no complete answer within {self.spec.request_timeout:g} s "
                f"(gave up after {time.monotonic() - start:.1f} s)"
            ) from exc
        except httpx.HTTPError as exc:
            raise ServiceError(f"GET {url}: {type(exc).__name__}: {exc}") from exc
        return HttpAnswer(url, resp.status_code, resp.text, resp.elapsed.total_seconds())

    def close(self) -> None:
        self._client.close()
