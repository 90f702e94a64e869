"""A fake vLLM OpenAI-compatible server for the simulated cluster's rank 0.

Real HTTP (stdlib ThreadingHTTPServer); the bodies, status codes and content types follow what
vLLM's own serving code returns (selftests/data/vllm_api, produced from vLLM 0.12.0's FastAPI
app). Only what the suite asks is implemented; anything else gets FastAPI's 404.

    python -m sim.fake_vllm --config service.json
"""

from __future__ import annotations

import argparse
import json
import secrets
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def model_list(cfg: dict[str, Any], created: int) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [
            {
                "id": cfg["served_model_name"],
                "object": "model",
                "created": created,
                "owned_by": "vllm",
                "root": cfg["model"],
                "parent": None,
                "max_model_len": cfg["max_model_len"],
                "permission": [
                    {
                        "id": f"modelperm-{secrets.token_hex(8)}",
                        "object": "model_permission",
                        "created": created,
                        "allow_create_engine": False,
                        "allow_sampling": True,
                        "allow_logprobs": True,
                        "allow_search_indices": False,
                        "allow_view": True,
                        "allow_fine_tuning": False,
                        "organization": "*",
                        "group": None,
                        "is_blocking": False,
                    }
                ],
            }
        ],
    }


def make_handler(cfg: dict[str, Any]) -> type[BaseHTTPRequestHandler]:
    api_key = cfg.get("api_key")

    class Handler(BaseHTTPRequestHandler):
        server_version = "uvicorn"
        sys_version = ""
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # uvicorn-like access log on stderr
            super().log_message(format, *args)

        def _send(self, status: int, body: Any = None) -> None:
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            if body is not None:
                self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorised(self) -> bool:
            if not api_key or not self.path.startswith("/v1"):
                return True  # /health is not behind --api-key
            return self.headers.get("Authorization") == f"Bearer {api_key}"

        def do_GET(self) -> None:
            if not self._authorised():
                return self._send(401, {"error": "Unauthorized"})
            path = self.path.split("?", 1)[0]
            if path == "/health":
                return self._send(200)
            if path == "/version":
                return self._send(200, {"version": cfg.get("vllm_version", "0.12.0")})
            if path == "/v1/models":
                return self._send(200, model_list(cfg, int(time.time())))
            return self._send(404, {"detail": "Not Found"})

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", required=True, help="JSON: served_model_name, model, max_model_len, port")
    args = parser.parse_args()
    with open(args.config, encoding="utf-8") as fh:
        cfg = json.load(fh)
    server = ThreadingHTTPServer(("0.0.0.0", int(cfg.get("port", 20001))), make_handler(cfg))
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
