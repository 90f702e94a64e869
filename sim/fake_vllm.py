"""A fake vLLM OpenAI-compatible server for the simulated cluster's rank 0.

Real HTTP (stdlib ThreadingHTTPServer). Bodies, status codes, content types and SSE framing follow
what vLLM's own serving code returns (selftests/data/vllm_api: vLLM 0.12.0's FastAPI app and 0.33.0's
serving classes, run with a faked engine); `shapes` picks the version family:
- "0.11": message/delta `reasoning_content` only;
- "0.12": `reasoning` and its deprecated copy `reasoning_content` (0.11.1-0.15.x), `tool_calls: []`;
- "0.33": `reasoning` only, usage.completion_tokens_details.reasoning_tokens, no empty tool_calls.
What the "model" answers and the bodies' shapes are sim/vllm_answers.py's: this module serves them
(`VllmHandler`: routes, statuses, SSE framing), token by token at the scenario's decode rate in real time;
/metrics counts what it generated. A scenario can make it fail as vLLM fails: 500s, a garbage body, a
stream that stalls, an engine stuck with /health still 200 (also when another rank is gone: its
node off or its container not running, `ranks_gone`), wrong answers, truncated tool arguments, a
model that reasons in a loop until max_tokens, no reasoning or tool parser. Startup (weights
loading, MemAvailable falling, the log's milestones) can take real time before it listens
(sim/startup.py drives that).

    python -m sim.fake_vllm --config service.json
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from sim.vllm_answers import (
    AUTO_TOOL_CHOICE,
    ENGINE_DEAD,
    Answer,
    Engine,
    Shapes,
    answer,
    cut_short,
    error_body,
    metrics_text,
    model_list,
    tokens,
)

__all__ = ["Deployment", "VllmHandler", "main", "make_handler"]


@dataclass(frozen=True)
class Deployment:
    """What the scenario's [service] makes of the server: its key, its vLLM's shapes, the failure it shows, the
    decode rate and time to first token, the served name; `cfg` is the scenario's [service] itself."""

    cfg: dict[str, Any]
    api_key: str | None
    shapes: Shapes
    failure: str | None
    stuck: bool
    rate: float
    ttft: float
    served: str

    @classmethod
    def of(cls, cfg: dict[str, Any]) -> Deployment:
        # A rank is gone (its node off, its container not running): every forward pass is a collective over
        # all ranks, so rank 0's worker waits in it and its engine waits on the worker's reply. vLLM's
        # MultiprocExecutor.collective_rpc gives up after VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS (300 s: "RPC call
        # to execute_model timed out."), the EngineCore dies, requests get 500 and the API server exits
        # (entrypoints/launcher.py terminate_if_errored). Until then /health answers 200 (AsyncLLM.check_health
        # sees no error) and a remote rank's death is not seen (the worker monitor watches local processes):
        # the sim shows those first 300 s, which an operator meets first, as a stuck engine.
        failure = cfg.get("failure")
        return cls(
            cfg=cfg,
            api_key=cfg.get("api_key"),
            shapes=Shapes(cfg.get("shapes", "0.33")),
            failure=failure,
            stuck=failure == "stuck" or bool(cfg.get("ranks_gone")),
            rate=float(cfg.get("decode_tokens_per_s", 500.0)),
            ttft=float(cfg.get("ttft_s", 0.05)),
            served=cfg["served_model_name"],
        )


class VllmHandler(BaseHTTPRequestHandler):
    """vLLM's API server as the suite meets it: its routes, statuses, bodies and SSE framing; what it answers
    comes from sim/vllm_answers.py. `make_handler` gives a subclass bound to one deployment and self.engine."""

    deployment: Deployment
    engine: Engine

    server_version = "uvicorn"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # uvicorn-like access log on stderr
        super().log_message(format, *args)

    def _send(self, status: int, body: Any = None, ctype: str = "application/json") -> None:
        data = b"" if body is None else body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        if body is not None:
            self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorised(self) -> bool:
        if not self.deployment.api_key or not self.path.startswith("/v1"):
            return True  # /health, /version and /metrics are not behind --api-key
        return self.headers.get("Authorization") == f"Bearer {self.deployment.api_key}"

    def do_GET(self) -> None:
        if not self._authorised():
            return self._send(401, {"error": "Unauthorized"})
        path = self.path.split("?", 1)[0]
        if path == "/health":
            return self._send(200)
        if path == "/version":
            return self._send(200, {"version": self.deployment.cfg.get("vllm_version", "0.12.0")})
        if path == "/v1/models":
            return self._send(200, model_list(self.deployment.cfg, int(time.time())))
        if path == "/metrics":
            return self._send(
                200,
                metrics_text(self.engine, self.deployment.served, stuck=self.deployment.stuck),
                "text/plain; version=0.0.4",
            )
        return self._send(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)  # all of it, whatever the answer: the connection is kept alive
        if not self._authorised():
            return self._send(401, {"error": "Unauthorized"})
        if self.path.split("?", 1)[0] != "/v1/chat/completions":
            return self._send(404, {"detail": "Not Found"})
        try:
            request = json.loads(raw)
        except json.JSONDecodeError:
            return self._send(400, error_body("1 validation error: JSON decode error", "Bad Request", 400))
        if request.get("model") != self.deployment.served:
            return self._send(
                404, error_body(f"The model `{request.get('model')}` does not exist.", "NotFoundError", 404)
            )
        if self.deployment.failure == "5xx":
            return self._send(500, error_body(ENGINE_DEAD, "InternalServerError", 500))
        if self.deployment.failure == "garbage":
            return self._send(200, "<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html")
        tools = request.get("tools")
        if tools and request.get("tool_choice", "auto") == "auto" and not self.deployment.cfg.get("tool_parser", True):
            return self._send(400, error_body(AUTO_TOOL_CHOICE, "BadRequestError", 400))
        if self.deployment.stuck:  # the engine waits on a collective forever; /health still says 200
            # /metrics stays as the last finished engine step left it: vLLM records the scheduler's
            # stats with each step's outputs (v1/metrics/loggers.py), and no step finishes
            if request.get("stream"):  # vLLM's StreamingResponse sends its headers before the first token
                self._stream_headers()
            time.sleep(3600)
            return None
        prompt = " ".join(str(m.get("content") or "") for m in request.get("messages") or [])
        thinking = (request.get("chat_template_kwargs") or {}).get("enable_thinking", True)
        said = answer(prompt, tools, wrong=self.deployment.failure == "wrong-answers")
        if self.deployment.failure == "endless-reasoning":  # the model thinks on and on (a loop): max_tokens ends it
            said = Answer(" ".join([said.reasoning, "Wait, let me check that again."] * 400), said.content, said.tool)
        return self._complete(request, said, thinking, len(tokens(prompt)) + 10)

    def _parts(self, said: Answer, thinking: bool) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
        """The generation as (kind, token text) with kind reasoning / content, and its tool calls."""
        parts: list[tuple[str, str]] = []
        calls: list[dict[str, Any]] = []
        if thinking:
            if self.deployment.cfg.get("reasoning_parser", True):
                parts += [("reasoning", t) for t in tokens("\n" + said.reasoning + "\n")]
            else:  # no reasoning parser: the model's raw think block lands in the content
                parts += [("content", t) for t in ["<think>", *tokens("\n" + said.reasoning + "\n"), "</think>"]]
        if said.tool is not None:
            # the "\n\n" between </think> and <tool_call>: content before 0.16
            if thinking and not self.deployment.shapes.new:
                parts.append(("content", "\n\n"))
            name, arguments = said.tool
            args = json.dumps(arguments, ensure_ascii=False)
            if self.deployment.failure == "tool-args-truncated":
                args = args[: len(args) - 5]
            calls.append({"id": f"chatcmpl-tool-{secrets.token_hex(8)}", "type": "function",
                          "function": {"name": name, "arguments": args}})  # fmt: skip
            parts += [("tool", t) for t in tokens(args)]
        else:
            parts += [("content", t) for t in tokens(("\n\n" if thinking else "") + said.content)]
        return parts, calls

    def _complete(self, request: dict[str, Any], said: Answer, thinking: bool, prompt_tokens: int) -> None:
        parts, calls = self._parts(said, thinking)
        completion = len(parts) + 1  # + EOS
        asked = request.get("max_completion_tokens") or request.get("max_tokens")
        limit = asked if isinstance(asked, int) else completion
        cut = completion > limit  # vLLM stops at max_tokens: finish_reason length
        if cut:
            parts, completion = parts[:limit], limit
            calls = calls if any(kind == "tool" for kind, _ in parts) else []
        reasoning = sum(1 for kind, _ in parts if kind == "reasoning")
        cid, created = f"chatcmpl-{secrets.token_hex(8)}", int(time.time())
        self.engine.add(running=1, prompt=prompt_tokens)
        try:
            if request.get("stream"):
                finish = "length" if cut else "tool_calls" if calls else "stop"
                self._stream(request, parts, calls, cid, created, prompt_tokens, completion, reasoning, finish)
                return
            time.sleep(self.deployment.ttft + len(parts) / self.deployment.rate)
            self.engine.add(generated=completion)
            if cut:
                parts = cut_short(
                    parts, self.deployment.shapes, thinking and bool(self.deployment.cfg.get("reasoning_parser", True))
                )
            content = "".join(t for kind, t in parts if kind == "content") or None
            message = self.deployment.shapes.message(
                None if calls else content, "".join(t for kind, t in parts if kind == "reasoning") or None, calls
            )
            body = {
                "id": cid,
                "object": "chat.completion",
                "created": created,
                "model": self.deployment.served,
                "choices": [
                    self.deployment.shapes.choice(message, "length" if cut else "tool_calls" if calls else "stop")
                ],
                "service_tier": None,
                "system_fingerprint": None,
                "usage": self.deployment.shapes.usage(prompt_tokens, completion, reasoning),
                **self.deployment.shapes.completion_tail(),
            }
            self._send(200, body)
        finally:
            self.engine.add(running=-1)

    def _stream_headers(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def _event(self, data: Any) -> None:
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        line = f"data: {text}\n\n".encode()
        self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
        self.wfile.flush()

    def _stream(
        self,
        request: dict[str, Any],
        parts: list[tuple[str, str]],
        calls: list[dict[str, Any]],
        cid: str,
        created: int,
        prompt_tokens: int,
        completion: int,
        reasoning: int,
        finish: str,
    ) -> None:
        self._stream_headers()

        def chunk(delta: dict[str, Any], finish: str | None = None, first: bool = False) -> dict[str, Any]:
            choice: dict[str, Any] = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            if not first:
                choice["token_ids"] = None
            if finish:
                choice = {**choice, "stop_reason": None, "token_ids": None}
                choice |= {"weight_versions": None} if self.deployment.shapes.new else {}
            tail = self.deployment.shapes.first_chunk_tail() if first else self.deployment.shapes.chunk_tail()
            return {"id": cid, "object": "chat.completion.chunk", "created": created,
                    "model": self.deployment.served, "choices": [choice], **tail}  # fmt: skip

        time.sleep(self.deployment.ttft)
        opening: dict[str, Any] = {"role": "assistant", "content": ""}
        self._event(chunk(opening if self.deployment.shapes.new else opening | {"reasoning_content": None}, first=True))
        tool_sent = False
        for i, (kind, text) in enumerate(parts):
            if self.deployment.failure == "stall" and i == min(5, len(parts) - 1):
                time.sleep(3600)  # the engine stops mid-answer; the connection stays open
            time.sleep(1 / self.deployment.rate)
            self.engine.add(generated=1)
            if kind == "reasoning":
                delta = self.deployment.shapes.reasoning_fields(text)
            elif kind == "tool":
                fn: dict[str, Any] = {"arguments": text}
                call: dict[str, Any] = {"index": 0, "function": fn}
                if not tool_sent or not self.deployment.shapes.new:  # before 0.16 every fragment repeats id and type
                    call = {"id": calls[0]["id"], "type": "function", **call}
                    fn["name"] = None if tool_sent else calls[0]["function"]["name"]
                    fn = {"name": fn.pop("name"), **fn}
                    call["function"] = fn
                    tool_sent = True
                delta = {"tool_calls": [call]}
            else:
                delta = {"content": text}
            self._event(chunk(self.deployment.shapes.delta(delta)))
        if finish != "length":
            self.engine.add(generated=1)  # EOS
        closing = {} if calls and self.deployment.shapes.new else self.deployment.shapes.delta({"content": ""})
        self._event(chunk(closing, finish))
        if (request.get("stream_options") or {}).get("include_usage"):
            usage = self.deployment.shapes.stream_usage(prompt_tokens, completion, reasoning)
            self._event({"id": cid, "object": "chat.completion.chunk", "created": created,
                         "model": self.deployment.served, "choices": [], "usage": usage})  # fmt: skip
        self._event("[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def make_handler(cfg: dict[str, Any], engine: Engine) -> type[BaseHTTPRequestHandler]:
    """The handler class ThreadingHTTPServer takes, bound to the scenario's [service] and the engine."""
    return type("Handler", (VllmHandler,), {"deployment": Deployment.of(cfg), "engine": engine})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", required=True, help="JSON: the scenario's [service] with its port")
    args = parser.parse_args()
    with open(args.config, encoding="utf-8") as fh:
        cfg = json.load(fh)
    delay = float(cfg.get("startup_seconds", 0))
    done = cfg.get("startup_done")
    if done:  # weights loading: nothing listens until sim/startup.py has moved memory and the logs to the end
        deadline = time.monotonic() + 30 + 20 * delay
        while not os.path.exists(done) and time.monotonic() < deadline:
            time.sleep(0.05)
    elif delay:
        time.sleep(delay)
    # a stuck engine has a request in a collective that never returns: running, and nothing generated
    engine = Engine(running=1 if cfg.get("failure") == "stuck" else 0)
    server = ThreadingHTTPServer(("0.0.0.0", int(cfg.get("port", 20001))), make_handler(cfg, engine))
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
