"""Reasoning as the deployment's users get it: with thinking on (Qwen3's default) the reasoning comes
apart from the answer (`message.reasoning`, or `reasoning_content` before vLLM 0.16: either is
accepted, and the one used is recorded), the answer is right and complete; with thinking off, no
reasoning and no <think> in the answer. A raw <think> block in the content means the server runs
without a reasoning parser, unless the answer was cut short (finish_reason length, judged first: vLLM
before 0.17 returns unfinished reasoning as raw content)."""

import re

import pytest

from gb10check.judging.diagnosis import expect_answered, expect_finished
from gb10check.reading.parsers.vllm_api import THINK_TAG as THINK
from gb10check.reading.parsers.vllm_api import reasoning_of, reasoning_tokens
from gb10check.service import asks

pytestmark = pytest.mark.service


@pytest.mark.hints("reasoning-parser-missing")
def test_reasoning_when_thinking(api_node, answer, evidence):
    """Reasoning apart from the answer when thinking.

    With thinking on, the reasoning comes apart from the answer (`message.reasoning`, or `reasoning_content` before
    vLLM 0.16: the field used is recorded), no raw `<think>` in the content; `reasoning_tokens`, when usage carries
    them, lie between 0 and the completion tokens; the answer to 3! is 6, finish_reason stop. finish_reason `length`
    is judged first, as in every chat check: the answer cut short, all the tokens asked used, or the server stopped
    short of them."""
    reply = answer(asks.REASONING)
    expect_answered(evidence, reply.status, reply.error, f"chat completion ({asks.REASONING.prompt!r}, thinking on)")
    expect_finished(evidence, reply.finish_reason, reply.usage, asks.REASONING)
    content, reasoning = reply.content, reasoning_of(reply.message)
    raw = THINK.search(content)
    evidence.expect(
        raw is None,
        what="the answer's content",
        expected="no <think> tags (the reasoning parser takes them out)",
        found=f"raw {raw[0]} in the content: {content[:120]!r}" if raw else "none",
    )
    evidence.expect(
        bool(reasoning.text),
        what="reasoning (message.reasoning or message.reasoning_content)",
        expected="present",
        found=f"{len(reasoning.text)} characters in {' and '.join(reasoning.fields)}" if reasoning.fields else "absent",
    )
    evidence.fact("reasoning_field", " and ".join(reasoning.fields) or "none")
    tokens = reasoning_tokens(reply.usage)
    completion = reply.usage.get("completion_tokens")
    evidence.expect(
        tokens is None or (isinstance(completion, int) and 0 < tokens < completion),
        what="usage.completion_tokens_details.reasoning_tokens",
        expected="absent (vLLM < 0.28), or between 0 and completion_tokens",
        found=f"{tokens} of {completion}" if tokens is not None else f"absent ({completion} completion tokens)",
    )
    evidence.expect(
        re.search(r"(?<!\d)6(?!\d)", content) is not None and reply.finish_reason == "stop",
        what="the answer",
        expected="says 6, finish_reason stop",
        found=f"{content.strip()[:120]!r}, finish_reason {reply.finish_reason}",
        hints=("model-answers-wrong",),
    )


@pytest.mark.hints("reasoning-parser-missing")
def test_no_reasoning_when_thinking_off(api_node, answer, evidence):
    """No reasoning when thinking is off.

    With thinking off (`enable_thinking` false): no reasoning field, no `<think>` in the content. finish_reason
    `length` is judged first, as in every chat check: the answer cut short, all the tokens asked used, or the server
    stopped short of them."""
    reply = answer(asks.THINKING_OFF)
    expect_answered(
        evidence, reply.status, reply.error, f"chat completion ({asks.THINKING_OFF.prompt!r}, enable_thinking false)"
    )
    expect_finished(evidence, reply.finish_reason, reply.usage, asks.THINKING_OFF)
    reasoning = reasoning_of(reply.message)
    evidence.expect(
        not reasoning.text and not THINK.search(reply.content),
        what="reasoning with thinking off",
        expected="none: no reasoning field, no <think> in the content",
        found=(f"reasoning in {', '.join(reasoning.fields)}" if reasoning.text else "no reasoning field")
        + (", <think> in the content" if THINK.search(reply.content) else ", a plain answer"),
    )
