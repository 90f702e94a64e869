"""A client for an API on loopback, as the suite builds it (for the HTTP self-tests)."""

from __future__ import annotations

from gb10check.inventory import ApiSpec
from gb10check.service.api import ApiClient


def api_client(port: int, request_timeout: float = 3, read_timeout: float = 15) -> ApiClient:
    spec = ApiSpec(
        base_url=f"http://127.0.0.1:{port}",
        served_model_name="m",
        model="org/m",
        max_model_len=1024,
        request_timeout=request_timeout,
        read_timeout=read_timeout,
    )
    return ApiClient(spec, env={})
