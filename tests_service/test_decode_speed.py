"""Decode speed, measured as `vllm bench serve` measures it (gb10check/reading/parsers/vllm_api.py,
decode_metrics): "count from 1 to 80", thinking off, streamed, alone: TTFT, TPOT and output
tokens/s, against the inventory's min_decode_tokens_per_s (the field report measured 22.62 eager
and 23.32 with decode CUDA graphs). Slow decode points at NCCL on sockets, eager mode, or another
load."""

import pytest

from gb10check.errors import GB10Error
from gb10check.judging.diagnosis import expect_answered
from gb10check.reading.parsers.gpu_clocks import REASONS, SLOWDOWNS
from gb10check.reading.parsers.vllm_api import decode_metrics

pytestmark = [pytest.mark.service, pytest.mark.performance]


def _gpus(decode_clocks):
    """Each node's GPU while the decode ran, in words, and the nodes whose clocks a slowdown held down."""
    shown, held = [], []
    for name, clocks in decode_clocks.items():
        if isinstance(clocks, GB10Error):
            shown.append(f"{name}: not read ({str(clocks)[:120]})")
            continue
        shown.append(f"{name}: {clocks.shown()}")
        slow = [REASONS[r] for r in clocks.active if r in SLOWDOWNS]
        if slow:
            held.append((name, f"{name}: {'; '.join(slow)}"))
    return "; ".join(shown), held


@pytest.mark.hints("decode-slow")
def test_decode_speed(api_node, decode_reply, decode_clocks, inventory, evidence):
    """Decode speed at or above the floor.

    The decode speed of "count from 1 to 80", streamed, alone: TTFT, TPOT and output tokens/s as `vllm bench serve`
    defines them, against `service.min_decode_tokens_per_s`.

    Each node's GPU state (P-state, SM clock, power, temperature, clock event reasons) is read while the decode runs
    and recorded beside tokens/s; a decode below the floor while a node's clocks were held down by heat or power
    names that node first."""
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
    gpus, held = _gpus(decode_clocks)
    evidence.fact("gpu_during_decode", gpus)
    evidence.expect(
        m.tokens_per_s >= floor,
        detail=f"clocks held down while it ran: {', '.join(said for _, said in held)}" if held else "",
        hints=("gpu-throttled", "decode-slow") if held else (),
        context={"node": held[0][0]} if held else None,  # the hint's commands: on the node held down
        what="output tokens/s (completion_tokens / latency)",
        expected=f">= {floor:g} (service.min_decode_tokens_per_s)",
        found=f"{m.tokens_per_s:.2f}: {m.output_tokens} tokens in {m.latency:.3f} s, TTFT {m.ttft * 1000:.0f} ms, "
        f"TPOT {m.tpot * 1000:.1f} ms"
        if m.tpot is not None
        else f"{m.tokens_per_s:.2f}",
    )
