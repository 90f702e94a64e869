"""vLLM's /metrics (Prometheus text), read with prometheus-client's own parser.

What the service checks record: KV-cache usage (`vllm:kv_cache_usage_perc`; before vLLM 0.10,
`vllm:gpu_cache_usage_perc`), requests running and waiting, preemptions, and the generation
token counter that proves the engine is alive (/health answers 200 while a rank is stuck).
Values are summed over the label sets (one per engine and model).
"""

from __future__ import annotations

from dataclasses import dataclass

from gb10check.errors import ParseError
from gb10check.safe_text.redact import redact

__all__ = ["VllmMetrics", "parse_vllm_metrics"]

_KV = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")


@dataclass(frozen=True)
class VllmMetrics:
    generation_tokens: float  # vllm:generation_tokens_total
    running: float  # vllm:num_requests_running
    waiting: float  # vllm:num_requests_waiting
    kv_cache_usage: float | None  # 0..1
    kv_cache_metric: str | None  # which name the server uses
    preemptions: float | None


def parse_vllm_metrics(text: str) -> VllmMetrics:
    # imported here: the service checks' modules are collected in every run, the parser needed in theirs only
    from prometheus_client.parser import text_string_to_metric_families

    values: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                values[sample.name] = values.get(sample.name, 0.0) + float(sample.value)
    except (ValueError, TypeError, IndexError) as exc:
        raise ParseError("GET /metrics", f"not Prometheus text ({redact(str(exc))})", text) from exc
    missing = [n for n in ("vllm:generation_tokens_total", "vllm:num_requests_running") if n not in values]
    if missing:
        raise ParseError("GET /metrics", f"no {', '.join(missing)} (not vLLM's metrics?)", text)
    kv_name = next((n for n in _KV if n in values), None)
    return VllmMetrics(
        generation_tokens=values["vllm:generation_tokens_total"],
        running=values["vllm:num_requests_running"],
        waiting=values.get("vllm:num_requests_waiting", 0.0),
        kv_cache_usage=values[kv_name] if kv_name else None,
        kv_cache_metric=kv_name,
        preemptions=values.get("vllm:num_preemptions_total"),
    )
