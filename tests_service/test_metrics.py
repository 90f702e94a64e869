"""vLLM's /metrics: the Prometheus text parses, KV-cache usage (either of its names), requests
running and waiting and preemptions are recorded; and the engine is alive: /health answers 200
while a rank is stuck in a collective, so liveness is proven by vllm:generation_tokens_total
advancing across a request of the suite's own."""

import time

import pytest

from gb10check.errors import ServiceError
from gb10check.judging.diagnosis import expect_answered, explain, stopped
from gb10check.reading.parsers.vllm_metrics import parse_vllm_metrics
from gb10check.service import asks

pytestmark = pytest.mark.service

ALIVE = asks.Ask("alive", "Count from 1 to 10, separated by commas.", thinking=False, max_tokens=64)


def _metrics(api, findings, evidence):
    try:
        answer = api.get("/metrics")
    except ServiceError as exc:
        raise explain(exc, findings) from None
    evidence.expect(answer.status == 200, what=f"GET {answer.url}", expected="HTTP 200", found=f"HTTP {answer.status}")
    return parse_vllm_metrics(answer.text)


@pytest.mark.hints("unexpected-output")
def test_metrics_read(api_node, api, ready, findings, evidence):
    """The metrics endpoint reports the engine's state.

    /metrics parses: KV-cache usage under either name (vllm:kv_cache_usage_perc, or vllm:gpu_cache_usage_perc before
    vLLM 0.10), the requests running and waiting, and the preemptions are recorded."""
    m = _metrics(api, findings, evidence)
    evidence.figure("kv_cache_usage", m.kv_cache_usage)
    evidence.figure("requests_running", m.running)
    evidence.figure("requests_waiting", m.waiting)
    evidence.figure("preemptions", m.preemptions)
    evidence.expect(
        m.kv_cache_usage is not None,
        what="KV-cache usage (vllm:kv_cache_usage_perc, or vllm:gpu_cache_usage_perc before vLLM 0.10)",
        expected="reported",
        found=f"{m.kv_cache_usage:.2%} ({m.kv_cache_metric})" if m.kv_cache_usage is not None else "neither metric",
    )


@pytest.mark.hints("engine-stuck")
def test_engine_generates(api_node, api, inventory, ready, answers, findings, service_snapshots, evidence):
    """The engine generates tokens for a request.

    vllm:generation_tokens_total advances across a request of the suite's own, by at least its completion tokens:
    /health says 200 while a rank is stuck. A failure gives the requests running and waiting, and what the ranks'
    logs say of a wedge (the rank whose collective or RPC timeout came first)."""
    before = _metrics(api, findings, evidence)
    start = time.monotonic()
    try:
        reply = api.chat(**ALIVE.request(inventory.service.served_model_name))
        stuck = ""
    except ServiceError as exc:
        reply, stuck = None, str(exc)
    # what the ranks' logs say of a wedge (tests_service/test_logs.py test_rank_alive: every rank's timeout)
    order = stopped(service_snapshots)
    after = _metrics(api, findings, evidence)
    if reply is not None:
        expect_answered(evidence, reply.status, reply.error, f"chat completion ({ALIVE.prompt!r})")
    advanced = after.generation_tokens - before.generation_tokens
    evidence.figure("liveness_seconds", time.monotonic() - start)
    evidence.expect(
        reply is not None and reply.status == 200 and advanced >= (reply.usage.get("completion_tokens") or 1),
        what="vllm:generation_tokens_total across one request of the suite's",
        expected="advances by at least the request's completion tokens",
        found=(
            f"+{advanced:g} tokens for a reply of {reply.usage.get('completion_tokens')} (HTTP {reply.status})"
            if reply is not None
            else f"+{advanced:g} tokens with {after.running:g} running, {after.waiting:g} waiting: {stuck}"
        ),
        detail="/health still answers 200 while a rank waits in a collective: "
        + (
            f"the logs of {len(order)} rank(s) show a collective or RPC timeout, rank "
            f"{inventory.node(order[0][1]).rank} ({order[0][1]}) first: its {order[0][0].shown()}"
            if order
            else "look at every node's log and NCCL"
        ),
        hints=("rank-wedged", "engine-stuck") if order else ("engine-stuck",),  # the rank that stopped first
    )
