"""The API on rank 0 is up and serves the expected model: /health, /version, the model card (its
max_model_len the same as the inventory's and the compose's --max-model-len)."""

import pytest

from gb10check.errors import GB10Error, ServiceError
from gb10check.judging.diagnosis import expect_answered, explain
from gb10check.reading.parsers.vllm_api import api_error_message, parse_models, parse_version

pytestmark = pytest.mark.service


@pytest.mark.smoke
@pytest.mark.hints("service-unreachable")
def test_health_and_version(api, api_node, readiness, findings, evidence):
    """/health answers and the version is reported.

    GET /health answers HTTP 200 and GET /version answers, the vLLM version recorded."""
    if readiness is not None:  # --wait-ready: what the wait saw comes first
        evidence.expect(
            readiness.ready,
            what="--wait-ready",
            expected="/health 200 within the wait, MemAvailable above the stop threshold on every node",
            found=f"ready after {readiness.seconds:.1f} s ({readiness.polls} polls); lowest MemAvailable "
            + ", ".join(f"{n} {b / 2**30:.1f} GiB" for n, b in readiness.lowest.items())
            if readiness.ready
            else f"{readiness.why} after {readiness.seconds:.1f} s",
            hints=(readiness.hint,) if readiness.hint else (),
        )
        evidence.figure("ready_seconds", readiness.seconds)
        for name, lowest in readiness.lowest.items():
            evidence.figure(f"mem_available_gib_{name}", lowest / 2**30)
    try:
        health = api.get("/health")
        version = api.get("/version")
    except ServiceError as exc:
        raise explain(exc, findings) from None
    evidence.expect(health.status == 200, what=f"GET {health.url}", expected="HTTP 200", found=f"HTTP {health.status}")
    shown = parse_version(version.text) if version.status == 200 else version.text.strip()[:120]
    evidence.expect(
        version.status == 200, what=f"GET {version.url}", expected="HTTP 200", found=f"HTTP {version.status}: {shown}"
    )
    evidence.fact("vllm_version", shown)


@pytest.mark.smoke
@pytest.mark.hints("model-not-registered")
def test_served_model(api, api_node, inventory, cluster, ready, findings, evidence):
    """The served model is the one configured.

    `/v1/models` lists the served model name with the inventory's model as its root, and its max_model_len is the
    inventory's and, where rank 0's compose gives one, its `--max-model-len`."""
    spec = inventory.service
    try:
        answer = api.get("/v1/models")
    except ServiceError as exc:
        raise explain(exc, findings) from None
    # a 401 is the key, a 5xx the server, as for every request the checks send: not the model's name
    expect_answered(evidence, answer.status, api_error_message(answer.text), f"GET {answer.url}")
    cards = {card.id: card for card in parse_models(answer.text)}
    evidence.expect(
        spec.served_model_name in cards,
        what="served model name",
        expected=spec.served_model_name,
        found=", ".join(cards) or "no models",
    )
    card = cards[spec.served_model_name]
    evidence.expect(card.root == spec.model, what="model root", expected=spec.model, found=card.root)
    evidence.expect(
        card.max_model_len == spec.max_model_len,
        what="max_model_len (the inventory's)",
        expected=spec.max_model_len,
        found=card.max_model_len,
    )
    if inventory.deployment is None:
        return
    try:
        flag = cluster.plan(api_node.node).vllm.value("--max-model-len")
    except GB10Error:
        return  # an unreadable plan fails the preflight checks (or is decided at start); the card was judged above
    evidence.expect(
        flag is None or str(card.max_model_len) == flag,
        what="max_model_len (the compose's --max-model-len on rank 0)",
        expected=flag or "unset (the model's own)",
        found=card.max_model_len,
        hints=("max-model-len-mismatch",),
    )
