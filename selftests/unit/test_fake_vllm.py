"""The simulated cluster's fake vLLM answers in vLLM's own shapes: every field of the reference
samples (produced by vLLM 0.12.0's and 0.33.0's serving code, selftests/data/vllm_api), at every
depth, and no other; SSE framed as vLLM frames it. The values differ (ids, texts, counts): the
shapes may not, so the fake cannot drift from what the suite meets on a real server."""

from __future__ import annotations

import json
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from gb10check.reading.parsers.vllm_api import parse_sse, sse_chunks
from sim.fake_vllm import Engine, make_handler

DATA = Path(__file__).resolve().parents[1] / "data" / "vllm_api"


@pytest.fixture(scope="module")
def fake():
    servers = {}

    def start(shapes: str) -> str:
        if shapes not in servers:
            cfg = {"served_model_name": "qwen3", "model": "Qwen/Qwen3-8B", "max_model_len": 40960, "shapes": shapes,
                   "decode_tokens_per_s": 5000, "ttft_s": 0}  # fmt: skip
            server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(cfg, Engine()))
            server.daemon_threads = True
            threading.Thread(target=server.serve_forever, daemon=True).start()
            servers[shapes] = server
        return f"http://127.0.0.1:{servers[shapes].server_address[1]}"

    yield start
    for server in servers.values():
        server.shutdown()
        server.server_close()


def keys(value: Any, path: str = "") -> set[str]:
    """Every key path of a JSON value (lists by their first item)."""
    out: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            out |= {f"{path}.{key}"} | keys(item, f"{path}.{key}")
    elif isinstance(value, list) and value:
        out |= keys(value[0], f"{path}[]")
    return out


def reference(name: str) -> dict[str, Any]:
    return json.loads((DATA / name).read_text())


def reference_chunks(name: str) -> list[dict[str, Any]]:
    return sse_chunks(parse_sse((DATA / name).read_text()))


def kind(chunk: dict[str, Any]) -> str:
    """What an SSE chunk carries: the role, reasoning, content, a tool call fragment, the finish, usage."""
    if not chunk.get("choices"):
        return "usage"
    choice = chunk["choices"][0]
    delta = choice.get("delta") or {}
    if choice.get("finish_reason"):
        return "finish"
    if "role" in delta:
        return "role"
    if delta.get("tool_calls"):
        first = delta["tool_calls"][0]
        return "tool-first" if first.get("id") and (first.get("function") or {}).get("name") else "tool-more"
    if delta.get("reasoning") or delta.get("reasoning_content"):
        return "reasoning"
    return "content" if delta.get("content") else "empty"


@pytest.mark.parametrize(
    ("sample", "shapes"),
    [
        ("02b_chat_nonstream_qwen3_reasoning.v0.12.0.json", "0.12"),
        ("02c_chat_nonstream_qwen3_reasoning.v0.33.0.json", "0.33"),
        ("03a_chat_nonstream_enable_thinking_false.v0.12.0.json", "0.12"),
        ("04b_tool_call_nonstream_qwen3_xml.v0.12.0.json", "0.12"),
        ("04d_tool_call_nonstream_qwen3_xml.v0.33.0.json", "0.33"),
    ],
)
def test_a_chat_completion_has_every_field_of_vllms(fake, sample, shapes):
    ref = reference(sample)
    body = ref["request"] | ({"tools": ref["request"]["tools"]} if "tools" in ref["request"] else {})
    if "tools" in body:
        body["messages"] = [{"role": "user", "content": "What's the weather in Paris? Call the tool."}]
    answer = httpx.post(f"{fake(shapes)}/v1/chat/completions", json=body, timeout=10)
    assert answer.status_code == ref["status"]
    assert answer.headers["content-type"] == "application/json"
    mine, theirs = answer.json(), ref["body"]
    assert keys(mine) == keys(theirs), keys(mine) ^ keys(theirs)
    assert (
        mine["object"] == theirs["object"]
        and mine["choices"][0]["finish_reason"] == theirs["choices"][0]["finish_reason"]
    )


@pytest.mark.parametrize(
    ("sample", "shapes", "tools"),
    [
        ("05b_stream_reasoning_include_usage.v0.12.0.sse", "0.12", False),
        ("05c_stream_reasoning_include_usage.v0.33.0.sse", "0.33", False),
        ("06b_stream_tool_qwen3_xml.v0.12.0.sse", "0.12", True),
        ("06d_stream_tool_qwen3_xml.v0.33.0.sse", "0.33", True),
    ],
)
def test_a_stream_has_vllms_framing_and_chunks(fake, sample, shapes, tools):
    ref = reference_chunks(sample)
    body: dict[str, Any] = {"model": "qwen3", "messages": [{"role": "user", "content": "Hello"}], "stream": True,
                            "stream_options": {"include_usage": True}}  # fmt: skip
    if tools:
        tool = reference("04b_tool_call_nonstream_qwen3_xml.v0.12.0.json")["request"]["tools"]
        body |= {"tools": tool, "tool_choice": "auto", "messages": [{"role": "user", "content": "Weather in Paris?"}]}
    answer = httpx.post(f"{fake(shapes)}/v1/chat/completions", json=body, timeout=10)
    assert answer.headers["content-type"] == "text/event-stream; charset=utf-8"
    mine = sse_chunks(parse_sse(answer.text))  # framing: one data: line per event, [DONE] last
    by_kind = {kind(c): c for c in ref if kind(c) != "empty"}
    mine_by_kind = {kind(c): c for c in mine if kind(c) != "empty"}
    assert set(mine_by_kind) == set(by_kind)
    for name, chunk in by_kind.items():
        assert keys(mine_by_kind[name]) == keys(chunk), (name, keys(mine_by_kind[name]) ^ keys(chunk))
    order = [kind(c) for c in mine if kind(c) != "empty"]
    assert order[0] == "role" and order[-2:] == ["finish", "usage"]


def test_errors_and_metrics_in_vllms_shapes(fake):
    base = fake("0.12")
    errors = reference("07a_errors.v0.12.0.json")["cases"]
    unknown = httpx.post(f"{base}/v1/chat/completions", json={"model": "nope", "messages": []}, timeout=10)
    assert unknown.status_code == 404 and keys(unknown.json()) == keys(errors["POST_chat_unknown_model"]["body"])
    assert unknown.json()["error"]["message"] == "The model `nope` does not exist."
    metrics = httpx.get(f"{base}/metrics", timeout=10).text
    reference_names = {line.split()[2] for line in (DATA / "09_metrics_vllm_only.v0.12.0.prom").read_text().splitlines()
                       if line.startswith("# TYPE")}  # fmt: skip
    mine = {line.split()[2] for line in metrics.splitlines() if line.startswith("# TYPE")}
    assert mine <= reference_names, mine - reference_names


@pytest.mark.parametrize("shapes", ["0.12", "0.33"])
def test_max_tokens_cuts_the_answer_as_vllm_does(fake, shapes):
    """max_tokens inside the reasoning: finish_reason length and completion_tokens max_tokens. In one
    answer, vLLM before 0.17 gives the raw <think> block as content (its Qwen3 parser needs </think>),
    0.17 and later the reasoning with no content; streamed, both send reasoning deltas."""
    body = {"model": "qwen3", "messages": [{"role": "user", "content": "What is 3 factorial?"}], "max_tokens": 5}
    one = httpx.post(f"{fake(shapes)}/v1/chat/completions", json=body, timeout=10).json()
    choice = one["choices"][0]
    assert choice["finish_reason"] == "length" and one["usage"]["completion_tokens"] == 5
    if shapes == "0.12":
        assert choice["message"]["content"].startswith("<think>") and choice["message"]["reasoning"] is None
    else:
        assert choice["message"]["content"] is None and choice["message"]["reasoning"]
    streamed = httpx.post(
        f"{fake(shapes)}/v1/chat/completions",
        json=body | {"stream": True, "stream_options": {"include_usage": True}},
        timeout=10,
    )
    chunks = sse_chunks(parse_sse(streamed.text))
    kinds = [kind(c) for c in chunks if kind(c) != "empty"]
    assert kinds == ["role", *["reasoning"] * 5, "finish", "usage"], kinds
    assert chunks[-2]["choices"][0]["finish_reason"] == "length" and chunks[-1]["usage"]["completion_tokens"] == 5
