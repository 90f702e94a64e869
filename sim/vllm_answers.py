"""What the fake vLLM answers and in which shapes (sim/fake_vllm.py serves them over HTTP and SSE).

The "model" answers the suite's own prompts (factorial, the weather tool call, counting, the canary
questions), token by token; the bodies' fields follow vLLM's version families (`Shapes`: "0.11", "0.12",
"0.33", as selftests/data/vllm_api records them); /metrics is vLLM's Prometheus exposition of what the
engine counted.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
from dataclasses import dataclass, field
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
