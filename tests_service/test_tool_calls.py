"""Tool calling as the deployment's users call it: the get_weather function and a question that needs
it, answered with a tool call whose arguments are JSON with a city, both in one answer and streamed
(the argument fragments merged by index, as every streaming client must). vLLM without
--enable-auto-tool-choice answers 400; with the wrong --tool-call-parser (or none) the call comes
as raw <tool_call> text in the content."""

import pytest

from gb10check.judging.diagnosis import expect_answered, expect_finished
from gb10check.reading.parsers.vllm_api import merge_tool_call_deltas, tool_calls_of
from gb10check.service import asks

pytestmark = pytest.mark.service

TOOL = asks.WEATHER_TOOL["function"]["name"]


def _judge(evidence, status, error, content, calls, finish_reason, usage, ask):
    how = "streamed" if ask.stream else "one answer"
    expect_answered(evidence, status, error, f"chat completion with the {TOOL} tool ({how})")
    expect_finished(evidence, finish_reason, usage, ask)
    evidence.expect(
        "<tool_call>" not in content and finish_reason == "tool_calls" and len(calls) == 1,
        what=f"the answer ({how})",
        expected="one tool call, finish_reason tool_calls",
        found=f"{len(calls)} tool call(s), finish_reason {finish_reason}"
        + (f", raw <tool_call> text in the content: {content.strip()[:120]!r}" if "<tool_call>" in content else ""),
    )
    call = calls[0]
    arguments = call.parsed_arguments()
    evidence.expect(
        call.name == TOOL and arguments is not None and isinstance(arguments.get("city"), str) and arguments["city"],
        what=f"the tool call ({how})",
        expected=f'{TOOL} with JSON arguments naming a city, like {{"city": "Beijing"}}',
        found=f"{call.name}({call.arguments})",
        hints=("tool-call-arguments-invalid",) if call.name == TOOL and arguments is None else (),
    )


@pytest.mark.hints("tool-call-parser-missing")
def test_tool_call(api_node, answer, evidence):
    """A tool call parsed into tool_calls.

    A question that needs the `get_weather` tool gets, in one answer, one tool call: finish_reason tool_calls, no raw
    `<tool_call>` text in the content, and JSON arguments naming a city. finish_reason `length` is judged first, as
    in every chat check: the answer cut short, all the tokens asked used, or the server stopped short of them."""
    reply = answer(asks.TOOL)
    _judge(
        evidence,
        reply.status,
        reply.error,
        reply.content,
        tool_calls_of(reply.message),
        reply.finish_reason,
        reply.usage,
        asks.TOOL,
    )


@pytest.mark.hints("tool-call-parser-missing")
def test_tool_call_streamed(api_node, answer, evidence):
    """A streamed tool call parsed into tool_calls.

    The same tool call streamed: the stream complete, ended by `data: [DONE]`, its argument fragments merged by index
    into one call, finish_reason tool_calls, JSON arguments naming a city. finish_reason `length` is judged first, as
    in every chat check: the answer cut short, all the tokens asked used, or the server stopped short of them."""
    reply = answer(asks.TOOL_STREAMED)
    evidence.expect(
        not reply.stalled and (reply.done or reply.status != 200),
        what="the stream",
        expected="complete, ended by data: [DONE]",
        found=reply.stalled or ("complete" if reply.done else "ended without [DONE]"),
        hints=("stream-stalled",),
    )
    calls = merge_tool_call_deltas(reply.deltas)
    _judge(
        evidence,
        reply.status,
        reply.error,
        reply.text("content"),
        calls,
        reply.finish_reason,
        reply.usage,
        asks.TOOL_STREAMED,
    )
