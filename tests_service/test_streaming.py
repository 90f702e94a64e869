"""Streaming as SSE clients read it (raw: the SDK hides the framing): the first token arrives,
reasoning deltas come before the answer's, the usage chunk comes last (stream_options.include_usage),
and `data: [DONE]` ends the stream; a stream that goes silent for longer than read_timeout is a
stall, reported with what had arrived, never a hang. A stream that ends with finish_reason length
was cut short (judged before its content); raw <think> tags in the streamed content mean no
reasoning parser, as in one answer."""

import pytest

from gb10check.judging.diagnosis import expect_answered, expect_finished
from gb10check.reading.parsers.vllm_api import THINK_TAG, reasoning_of
from gb10check.service import asks

pytestmark = pytest.mark.service


@pytest.mark.hints("stream-stalled")
def test_stream_framing_and_order(api_node, answer, evidence):
    """The stream framed and in order.

    SSE as clients read it: the first token arrives, no raw `<think>` in the streamed content, reasoning deltas
    before the answer's, the usage chunk last, and `data: [DONE]` at the end. finish_reason `length` is judged first,
    as in every chat check: the answer cut short, all the tokens asked used, or the server stopped short of them."""
    reply = answer(asks.STREAMED)
    expect_answered(evidence, reply.status, reply.error, "streamed chat completion")
    evidence.expect(
        not reply.stalled and reply.done,
        what="the stream's end",
        expected="data: [DONE], after every chunk",
        found=reply.stalled or ("data: [DONE]" if reply.done else "the connection closed without [DONE]"),
    )
    expect_finished(evidence, reply.finish_reason, reply.usage, asks.STREAMED)
    content = reply.text("content")
    raw = THINK_TAG.search(content)
    evidence.expect(
        raw is None,
        what="the streamed content",
        expected="no <think> tags (the reasoning parser takes them out)",
        found=f"raw {raw[0]} in the content: {content.strip()[:120]!r}" if raw else "none",
        hints=("reasoning-parser-missing",),
    )
    first = next((at for at, chunk in reply.chunks if chunk.get("choices")), None)
    evidence.expect(
        first is not None,
        what="first token",
        expected="a chunk with choices",
        found=f"after {first:.3f} s" if first is not None else "none",
    )
    kinds = [
        "reasoning" if reasoning_of(d).text else "content"
        for d in reply.deltas
        if reasoning_of(d).text or d.get("content")
    ]
    switched = [i for i in range(1, len(kinds)) if kinds[i - 1] == "content" and kinds[i] == "reasoning"]
    evidence.expect(
        not switched and "content" in kinds,
        what="order of the deltas",
        expected="reasoning deltas, then the answer's",
        found=f"{kinds.count('reasoning')} reasoning, then {kinds.count('content')} content deltas"
        if not switched
        else f"reasoning again after the answer began (delta {switched[0]})",
    )
    last = reply.chunks[-1][1] if reply.chunks else {}
    evidence.expect(
        isinstance(last.get("usage"), dict) and not last.get("choices"),
        what="the last chunk before [DONE]",
        expected="the usage chunk (choices empty, usage set)",
        found=f"usage {last.get('usage')}" if last.get("usage") else f"a chunk with choices: {str(last)[:120]}",
    )
