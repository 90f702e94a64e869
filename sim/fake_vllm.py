"""A fake vLLM OpenAI-compatible server for the simulated cluster's rank 0.

Real HTTP (stdlib ThreadingHTTPServer). Bodies, status codes, content types and SSE framing follow
what vLLM's own serving code returns (selftests/data/vllm_api: vLLM 0.12.0's FastAPI app and 0.33.0's
serving classes, run with a faked engine); `shapes` picks the version family:
- "0.11": message/delta `reasoning_content` only;
- "0.12": `reasoning` and its deprecated copy `reasoning_content` (0.11.1-0.15.x), `tool_calls: []`;
- "0.33": `reasoning` only, usage.completion_tokens_details.reasoning_tokens, no empty tool_calls.
The "model" answers the suite's own prompts (factorial, weather tool call, counting, the canary
questions) and streams them token by token at the scenario's decode rate in real time; /metrics
counts what it generated. A scenario can make it fail as vLLM fails: 500s, a garbage body, a
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
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "AUTO_TOOL_CHOICE",
    "COUNT",
    "ENGINE_DEAD",
    "TOKEN",
    "Answer",
    "Engine",
    "Shapes",
    "answer",
    "cut_short",
    "error_body",
    "main",
    "make_handler",
    "metrics_text",
    "model_list",
    "tokens",
]

TOKEN = re.compile(r"\s*\w+|\s*[^\w\s]|\s+")


def tokens(text: str) -> list[str]:
    """A stand-in tokenizer: a word or a punctuation mark (with its leading space) per token."""
    return TOKEN.findall(text)


@dataclass(frozen=True)
class Answer:
    reasoning: str
    content: str = ""
    tool: tuple[str, dict[str, Any]] | None = None  # (function name, arguments)


COUNT = re.compile(r"count from 1 to (\d+)", re.IGNORECASE)


def answer(prompt: str, tools: list[dict[str, Any]] | None, wrong: bool) -> Answer:
    """What the fake model says: right, or (a broken quantization or TP layout) fluently wrong."""
    p = prompt.lower()
    if tools and "weather" in p:
        city = "Beijing" if "beijing" in p else "Paris"
        return Answer(
            f"The user asks for the weather in {city}. I should call get_weather.", tool=("get_weather", {"city": city})
        )
    if "factorial" in p:
        value = "9" if wrong else "6"
        return Answer(
            "The user asks for 3 factorial. 3! = 3 × 2 × 1. That is 6.",
            f"3! = 3 × 2 × 1 = {value}.",
        )
    if m := COUNT.search(p):
        n = int(m[1])
        numbers = range(1, n + 1) if not wrong else range(1, n + 1, 2)
        return Answer("Counting.", ", ".join(str(i) for i in numbers) + ".")
    if "17 * 23" in p or "17 × 23" in p:
        return Answer("17 times 23.", "401" if wrong else "391")
    if "chemical symbol" in p:
        return Answer("Gold.", "Ag" if wrong else "Au")
    if "json" in p:
        body = {"name": "Ada", "age": "thirty-six"} if wrong else {"name": "Ada", "age": 36}
        return Answer("A JSON object.", json.dumps(body))
    return Answer("The user greets me.", "Hello! How can I help?")


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


def error_body(message: str, kind: str, code: int) -> dict[str, Any]:
    """vLLM >= 0.10.1's error shape."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


AUTO_TOOL_CHOICE = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'
ENGINE_DEAD = "EngineCore encountered an issue. See stack trace (above) for the root cause."


@dataclass
class Engine:
    """The fake engine's state: what /metrics reports."""

    generated: int = 0
    prompt: int = 0
    running: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, **counts: int) -> None:
        with self.lock:
            for key, value in counts.items():
                setattr(self, key, getattr(self, key) + value)


class Shapes:
    """vLLM's fields for one version family (what selftests/unit/test_fake_vllm.py holds it to)."""

    def __init__(self, family: str) -> None:
        self.family = family
        self.new = family == "0.33"

    def reasoning_fields(self, text: str | None) -> dict[str, Any]:
        if self.family == "0.11":
            return {"reasoning_content": text}
        if self.family == "0.12":
            return {"reasoning": text, "reasoning_content": text}
        return {"reasoning": text}

    def message(self, content: str | None, reasoning: str | None, tool_calls: list[dict[str, Any]]) -> dict[str, Any]:
        msg: dict[str, Any] = {
            "role": "assistant",
            "content": content,
            "refusal": None,
            "annotations": None,
            "audio": None,
            "function_call": None,
        }
        if tool_calls or not self.new:  # >= 0.25 leaves out an empty list
            msg["tool_calls"] = tool_calls
        return msg | self.reasoning_fields(reasoning)

    def choice(self, message: dict[str, Any], finish: str) -> dict[str, Any]:
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish, "stop_reason": None,
                  "token_ids": None}  # fmt: skip
        return choice | ({"routed_experts": None, "weight_versions": None} if self.new else {})

    def completion_tail(self) -> dict[str, Any]:
        tail: dict[str, Any] = {"prompt_logprobs": None, "prompt_token_ids": None}
        if self.new:
            tail["prompt_text"] = None
        tail["kv_transfer_params"] = None
        if self.new:
            tail |= {"ec_transfer_params": None, "metrics": None}
        return tail

    def delta(self, fields: dict[str, Any]) -> dict[str, Any]:
        """A stream delta: before 0.16 the deprecated reasoning_content rides on every delta (null)."""
        if self.new or "reasoning_content" in fields:
            return fields
        return fields | {"reasoning_content": None}

    def first_chunk_tail(self) -> dict[str, Any]:
        return {"prompt_token_ids": None} | ({"prompt_text": None} if self.new else {})

    def chunk_tail(self) -> dict[str, Any]:
        return {"kv_transfer_params": None} if self.new else {}

    def usage(self, prompt: int, completion: int, reasoning: int) -> dict[str, Any]:
        usage: dict[str, Any] = {
            "prompt_tokens": prompt,
            "total_tokens": prompt + completion,
            "completion_tokens": completion,
            "prompt_tokens_details": None,
        }
        if self.new and reasoning:
            usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
        return usage

    def stream_usage(self, prompt: int, completion: int, reasoning: int) -> dict[str, Any]:
        usage = self.usage(prompt, completion, reasoning)
        del usage["prompt_tokens_details"]  # the stream's usage chunk leaves it out
        return usage


def cut_short(parts: list[tuple[str, str]], shapes: Shapes, parsed: bool) -> list[tuple[str, str]]:
    """The generation max_tokens stopped inside the reasoning, as vLLM's Qwen3 parser gives it in one
    answer: before 0.17 (vllm/reasoning/qwen3_reasoning_parser.py: no </think>, all of it is content)
    the raw <think> block as content and no reasoning; from 0.17 on (vllm-project/vllm#35230) as
    reasoning with no content. Streamed, both send reasoning deltas (basic_parsers' streaming path):
    the stream keeps its parts and this applies to the whole answer only."""
    if not parsed or any(kind != "reasoning" for kind, _ in parts) or shapes.new:
        return parts
    return [("content", text) for text in ["<think>", *(t for _, t in parts)]]


def make_handler(cfg: dict[str, Any], engine: Engine) -> type[BaseHTTPRequestHandler]:
    api_key = cfg.get("api_key")
    shapes = Shapes(cfg.get("shapes", "0.33"))
    failure = cfg.get("failure")
    # A rank is gone (its node off, its container not running): every forward pass is a collective over
    # all ranks, so rank 0's worker waits in it and its engine waits on the worker's reply. vLLM's
    # MultiprocExecutor.collective_rpc gives up after VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS (300 s: "RPC call
    # to execute_model timed out."), the EngineCore dies, requests get 500 and the API server exits
    # (entrypoints/launcher.py terminate_if_errored). Until then /health answers 200 (AsyncLLM.check_health
    # sees no error) and a remote rank's death is not seen (the worker monitor watches local processes):
    # the sim shows those first 300 s, which an operator meets first, as a stuck engine.
    stuck = failure == "stuck" or bool(cfg.get("ranks_gone"))
    rate = float(cfg.get("decode_tokens_per_s", 500.0))
    ttft = float(cfg.get("ttft_s", 0.05))
    served = cfg["served_model_name"]

    class Handler(BaseHTTPRequestHandler):
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
            if not api_key or not self.path.startswith("/v1"):
                return True  # /health, /version and /metrics are not behind --api-key
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
            if path == "/metrics":
                return self._send(200, metrics_text(engine, served, stuck=stuck), "text/plain; version=0.0.4")
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
            if request.get("model") != served:
                return self._send(
                    404, error_body(f"The model `{request.get('model')}` does not exist.", "NotFoundError", 404)
                )
            if failure == "5xx":
                return self._send(500, error_body(ENGINE_DEAD, "InternalServerError", 500))
            if failure == "garbage":
                return self._send(200, "<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html")
            tools = request.get("tools")
            if tools and request.get("tool_choice", "auto") == "auto" and not cfg.get("tool_parser", True):
                return self._send(400, error_body(AUTO_TOOL_CHOICE, "BadRequestError", 400))
            if stuck:  # the engine waits on a collective forever; /health still says 200
                # /metrics stays as the last finished engine step left it: vLLM records the scheduler's
                # stats with each step's outputs (v1/metrics/loggers.py), and no step finishes
                if request.get("stream"):  # vLLM's StreamingResponse sends its headers before the first token
                    self._stream_headers()
                time.sleep(3600)
                return None
            prompt = " ".join(str(m.get("content") or "") for m in request.get("messages") or [])
            thinking = (request.get("chat_template_kwargs") or {}).get("enable_thinking", True)
            said = answer(prompt, tools, wrong=failure == "wrong-answers")
            if failure == "endless-reasoning":  # the model thinks on and on (a loop): max_tokens ends it
                said = Answer(
                    " ".join([said.reasoning, "Wait, let me check that again."] * 400), said.content, said.tool
                )
            return self._complete(request, said, thinking, len(tokens(prompt)) + 10)

        def _parts(self, said: Answer, thinking: bool) -> tuple[list[tuple[str, str]], list[dict[str, Any]]]:
            """The generation as (kind, token text) with kind reasoning / content, and its tool calls."""
            parts: list[tuple[str, str]] = []
            calls: list[dict[str, Any]] = []
            if thinking:
                if cfg.get("reasoning_parser", True):
                    parts += [("reasoning", t) for t in tokens("\n" + said.reasoning + "\n")]
                else:  # no reasoning parser: the model's raw think block lands in the content
                    parts += [("content", t) for t in ["<think>", *tokens("\n" + said.reasoning + "\n"), "</think>"]]
            if said.tool is not None:
                if thinking and not shapes.new:  # the "\n\n" between </think> and <tool_call>: content before 0.16
                    parts.append(("content", "\n\n"))
                name, arguments = said.tool
                args = json.dumps(arguments, ensure_ascii=False)
                if failure == "tool-args-truncated":
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
            engine.add(running=1, prompt=prompt_tokens)
            try:
                if request.get("stream"):
                    finish = "length" if cut else "tool_calls" if calls else "stop"
                    self._stream(request, parts, calls, cid, created, prompt_tokens, completion, reasoning, finish)
                    return
                time.sleep(ttft + len(parts) / rate)
                engine.add(generated=completion)
                if cut:
                    parts = cut_short(parts, shapes, thinking and bool(cfg.get("reasoning_parser", True)))
                content = "".join(t for kind, t in parts if kind == "content") or None
                message = shapes.message(
                    None if calls else content, "".join(t for kind, t in parts if kind == "reasoning") or None, calls
                )
                body = {
                    "id": cid,
                    "object": "chat.completion",
                    "created": created,
                    "model": served,
                    "choices": [shapes.choice(message, "length" if cut else "tool_calls" if calls else "stop")],
                    "service_tier": None,
                    "system_fingerprint": None,
                    "usage": shapes.usage(prompt_tokens, completion, reasoning),
                    **shapes.completion_tail(),
                }
                self._send(200, body)
            finally:
                engine.add(running=-1)

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
                    choice |= {"weight_versions": None} if shapes.new else {}
                tail = shapes.first_chunk_tail() if first else shapes.chunk_tail()
                return {"id": cid, "object": "chat.completion.chunk", "created": created, "model": served,
                        "choices": [choice], **tail}  # fmt: skip

            time.sleep(ttft)
            opening: dict[str, Any] = {"role": "assistant", "content": ""}
            self._event(chunk(opening if shapes.new else opening | {"reasoning_content": None}, first=True))
            tool_sent = False
            for i, (kind, text) in enumerate(parts):
                if failure == "stall" and i == min(5, len(parts) - 1):
                    time.sleep(3600)  # the engine stops mid-answer; the connection stays open
                time.sleep(1 / rate)
                engine.add(generated=1)
                if kind == "reasoning":
                    delta = shapes.reasoning_fields(text)
                elif kind == "tool":
                    fn: dict[str, Any] = {"arguments": text}
                    call: dict[str, Any] = {"index": 0, "function": fn}
                    if not tool_sent or not shapes.new:  # before 0.16 every fragment repeats id and type
                        call = {"id": calls[0]["id"], "type": "function", **call}
                        fn["name"] = None if tool_sent else calls[0]["function"]["name"]
                        fn = {"name": fn.pop("name"), **fn}
                        call["function"] = fn
                        tool_sent = True
                    delta = {"tool_calls": [call]}
                else:
                    delta = {"content": text}
                self._event(chunk(shapes.delta(delta)))
            if finish != "length":
                engine.add(generated=1)  # EOS
            closing = {} if calls and shapes.new else shapes.delta({"content": ""})
            self._event(chunk(closing, finish))
            if (request.get("stream_options") or {}).get("include_usage"):
                usage = shapes.stream_usage(prompt_tokens, completion, reasoning)
                self._event({"id": cid, "object": "chat.completion.chunk", "created": created, "model": served,
                             "choices": [], "usage": usage})  # fmt: skip
            self._event("[DONE]")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return Handler


def metrics_text(engine: Engine, served: str, stuck: bool) -> str:
    """vLLM's Prometheus exposition (the names and labels of vllm/v1/metrics/loggers.py)."""
    labels = f'{{engine="0",model_name="{served}"}}'
    running = engine.running
    families = [
        ("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", running),
        ("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", 0),
        ("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", round(0.01 * running, 4)),
        ("vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.", 0),
        ("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", engine.prompt),
        ("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.", engine.generated),
    ]
    lines = []
    for name, kind, text, value in families:
        lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}", f"{name}{labels} {float(value)}"]
    return "\n".join(lines) + "\n"


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
