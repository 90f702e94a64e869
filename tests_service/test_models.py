"""The API on rank 0 serves the expected model."""

import pytest

from gb10check.parsers.vllm_api import parse_models

pytestmark = pytest.mark.service


@pytest.mark.smoke
@pytest.mark.hints("model-not-registered")
def test_served_model(api, api_node, inventory, evidence):
    spec = inventory.service
    answer = api.get("/v1/models")
    evidence.expect(
        answer.status == 200,
        what=f"GET {answer.url}",
        expected="HTTP 200",
        found=f"HTTP {answer.status}",
        detail=f"body {answer.text[:200]!r}",
    )
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
        what="max_model_len",
        expected=spec.max_model_len,
        found=card.max_model_len,
    )
