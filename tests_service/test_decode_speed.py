"""Decode speed, measured as `vllm bench serve` measures it (gb10check/parsers/vllm_api.py,
decode_metrics): "count from 1 to 80", thinking off, streamed, alone: TTFT, TPOT and output
tokens/s, against the inventory's min_decode_tokens_per_s (the field report measured 22.62 eager
and 23.32 with decode CUDA graphs). Slow decode points at NCCL on sockets, eager mode, or another
load."""

import pytest

from gb10check.diagnosis import expect_answered
from gb10check.errors import GB10Error
from gb10check.parsers.vllm_api import decode_metrics

pytestmark = [pytest.mark.service, pytest.mark.performance]


@pytest.mark.hints("decode-slow")
def test_decode_speed(api_node, decode_reply, inventory, evidence):
    """Decode speed at or above the floor."""
    reply = decode_reply
    if isinstance(reply, GB10Error):
        raise reply
    expect_answered(evidence, reply.status, reply.error, "the decode request (streamed)")
    evidence.expect(reply.done, what="the decode stream", expected="complete, ended by data: [DONE]",
                    found=reply.stalled or "ended without [DONE]", hints=("stream-stalled",))  # fmt: skip
    m = decode_metrics(reply.chunks)
    evidence.figure("ttft_s", m.ttft)
    evidence.figure("tpot_s", m.tpot)
    evidence.figure("decode_tokens_per_s", m.tokens_per_s)
    floor = inventory.service.min_decode_tokens_per_s
    evidence.expect(
        m.tokens_per_s >= floor,
        what="output tokens/s (completion_tokens / latency)",
        expected=f">= {floor:g} (service.min_decode_tokens_per_s)",
        found=f"{m.tokens_per_s:.2f}: {m.output_tokens} tokens in {m.latency:.3f} s, TTFT {m.ttft * 1000:.0f} ms, "
        f"TPOT {m.tpot * 1000:.1f} ms"
        if m.tpot is not None
        else f"{m.tokens_per_s:.2f}",
    )
