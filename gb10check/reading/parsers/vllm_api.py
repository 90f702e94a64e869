"""vLLM's OpenAI-compatible API bodies (shapes per reference/vllm_api, vLLM 0.11-0.33)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from gb10check.errors import ParseError, excerpt
from gb10check.reading.parsers import json_object

__all__ = [
    "DONE",
    "REASONING_FIELDS",
    "THINK_TAG",
    "DecodeMetrics",
    "ModelCard",
    "Reasoning",
    "ToolCall",
    "api_error_message",
    "decode_metrics",
    "merge_tool_call_deltas",
    "parse_models",
    "parse_sse",
    "parse_version",
    "reasoning_of",
    "reasoning_tokens",
    "sse_chunks",
    "tool_calls_of",
]


@dataclass(frozen=True)
class ModelCard:
    id: str
    root: str | None
    max_model_len: int | None
    parent: str | None


def parse_models(text: str) -> tuple[ModelCard, ...]:
    """`GET /v1/models`: {"object": "list", "data": [{"id", "root", "max_model_len", ...}]}."""
    try:
        body: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError("GET /v1/models", f"not JSON ({exc.msg})", text) from exc
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        raise ParseError("GET /v1/models", "expected an object with a 'data' list", text)
    cards = []
    for item in body["data"]:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise ParseError("GET /v1/models", "a model card without a string 'id'", text)
        mml = item.get("max_model_len")
        if mml is not None and not isinstance(mml, int):
            raise ParseError(
                "GET /v1/models", f"max_model_len of {excerpt(str(item['id']), 120)} is not an integer", text
            )
        cards.append(ModelCard(id=item["id"], root=item.get("root"), max_model_len=mml, parent=item.get("parent")))
    return tuple(cards)


def parse_version(text: str) -> str:
    """`GET /version`: {"version": "0.12.0"}."""
    body = json_object(text, "GET /version")
    if not isinstance(body.get("version"), str) or not body["version"]:
        raise ParseError("GET /version", 'expected {"version": "..."}', text)
    return str(body["version"])


# -- chat completions (the SDK's objects as dicts: model_dump() keeps vLLM's extra fields) -------------
# Qwen3's think tags: in an answer's content they mean no reasoning parser took them out (the content
# of an answer cut short in its reasoning too, before vLLM 0.17: judge finish_reason first)
THINK_TAG = re.compile(r"</?think>")
REASONING_FIELDS = ("reasoning", "reasoning_content")  # vLLM >= 0.16 / <= 0.15 (0.11.1-0.15.x: both)


@dataclass(frozen=True)
class Reasoning:
    text: str  # "" when the server sent none
    fields: tuple[str, ...]  # the fields that carried it (both, on vLLM 0.11.1-0.15.x)


def reasoning_of(message: dict[str, Any]) -> Reasoning:
    """A message's (or a delta's) reasoning text, from whichever field the server's version uses."""
    carried = tuple(f for f in REASONING_FIELDS if isinstance(message.get(f), str) and message[f])
    return Reasoning(message[carried[0]] if carried else "", carried)


def reasoning_tokens(usage: dict[str, Any] | None) -> int | None:
    """usage.completion_tokens_details.reasoning_tokens (vLLM >= 0.28 with a reasoning parser), else None."""
    details = (usage or {}).get("completion_tokens_details") or {}
    value = details.get("reasoning_tokens") if isinstance(details, dict) else None
    return value if isinstance(value, int) else None


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: str  # JSON text, as the API carries it
    id: str | None

    def parsed_arguments(self) -> dict[str, Any] | None:
        """The arguments as a JSON object; None when they are not one (a truncated or garbled call)."""
        try:
            value = json.loads(self.arguments)
        except (json.JSONDecodeError, TypeError):
            return None
        return value if isinstance(value, dict) else None


def tool_calls_of(message: dict[str, Any]) -> list[ToolCall]:
    out = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        out.append(ToolCall(str(fn.get("name") or ""), str(fn.get("arguments") or ""), call.get("id")))
    return out


def merge_tool_call_deltas(deltas: list[dict[str, Any]]) -> list[ToolCall]:
    """A streamed message's tool calls: each delta's `tool_calls` fragments merged by `index` (the
    name arrives once, the arguments in pieces), as every client of the streaming API must."""
    merged: dict[int, dict[str, Any]] = {}
    for delta in deltas:
        for fragment in delta.get("tool_calls") or []:
            slot = merged.setdefault(int(fragment.get("index") or 0), {"id": None, "name": "", "arguments": ""})
            slot["id"] = slot["id"] or fragment.get("id")
            fn = fragment.get("function") or {}
            slot["name"] += fn.get("name") or ""
            slot["arguments"] += fn.get("arguments") or ""
    return [ToolCall(c["name"], c["arguments"], c["id"]) for _, c in sorted(merged.items())]


# -- a streamed request, measured as `vllm bench serve` measures it ---------------------------------
@dataclass(frozen=True)
class DecodeMetrics:
    """vLLM's benchmark definitions (vllm/benchmarks/lib/endpoint_request_func.py and
    vllm/benchmarks/serve.py::calculate_metrics), for one request:
    - TTFT: from sending the request to the first chunk that carries choices;
    - latency: from sending it to the last chunk (the usage chunk, before [DONE]);
    - output tokens: usage.completion_tokens of the stream's usage chunk;
    - TPOT: (latency - TTFT) / (output tokens - 1), the first token excluded;
    - ITL: the gaps between consecutive chunks that carry choices, after the first;
    - output throughput: output tokens / latency (the benchmark's total output over its duration,
      for one request alone)."""

    ttft: float
    latency: float
    output_tokens: int
    itl: tuple[float, ...]

    @property
    def tpot(self) -> float | None:
        return (self.latency - self.ttft) / (self.output_tokens - 1) if self.output_tokens > 1 else None

    @property
    def tokens_per_s(self) -> float:
        return self.output_tokens / self.latency if self.latency > 0 else 0.0


def decode_metrics(chunks: list[tuple[float, dict[str, Any]]]) -> DecodeMetrics:
    """`chunks`: (seconds since the request was sent, the chunk) in arrival order, [DONE] excluded."""
    ttft, latency, tokens, itl, last = 0.0, 0.0, None, [], 0.0
    for at, chunk in chunks:
        if chunk.get("choices"):
            if ttft == 0.0:
                ttft = at
            else:
                itl.append(at - last)
        elif isinstance(chunk.get("usage"), dict):
            tokens = chunk["usage"].get("completion_tokens")
        last = at
        latency = at
    if ttft == 0.0:
        raise ParseError("the streamed completion", "no chunk carried choices (no token arrived)", repr(chunks[:3]))
    if not isinstance(tokens, int):
        raise ParseError(
            "the streamed completion",
            "no usage chunk with completion_tokens (stream_options.include_usage)",
            repr(chunks[-3:]),
        )
    return DecodeMetrics(ttft, latency, tokens, tuple(itl))


# -- Server-Sent Events, framed as vLLM frames them ---------------------------------------------------
DONE = "[DONE]"


def parse_sse(text: str) -> list[str]:
    """The `data:` payloads of an SSE body, in order (comments and blank separators dropped); every
    event must be one `data: ` line followed by a blank line, as vLLM writes them."""
    out: list[str] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith(":")]
        if not lines:
            continue
        if len(lines) != 1 or not lines[0].startswith("data: "):
            raise ParseError(
                "the SSE stream", f"expected one 'data: ' line per event, got {excerpt(lines[0], 80)}", text
            )
        out.append(lines[0][len("data: ") :])
    return out


def sse_chunks(payloads: list[str]) -> list[dict[str, Any]]:
    """The JSON chunks of a stream that ends with [DONE] (which must come last, once)."""
    if not payloads or payloads[-1] != DONE:
        raise ParseError("the SSE stream", "it does not end with 'data: [DONE]'", "\n".join(payloads[-3:]))
    return [json_object(payload, "an event of the SSE stream") for payload in payloads[:-1]]


def api_error_message(text: str) -> str:
    """vLLM's error body (>= 0.10.1: {"error": {"message", "type", "code"}}; older: flat; 401: a string)."""
    try:
        body: Any = json.loads(text)
    except json.JSONDecodeError:
        return text.strip()[:300]
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            return str(err.get("message") or err)[:600]
        return str(err)[:300]
    return text.strip()[:300]
