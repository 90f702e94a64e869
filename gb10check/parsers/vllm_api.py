"""vLLM's OpenAI-compatible API bodies (shapes per reference/vllm_api, vLLM 0.11-0.33)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from gb10check.errors import ParseError


@dataclass(frozen=True)
class ModelCard:
    id: str
    root: str | None
    max_model_len: int | None
    parent: str | None


def parse_models(text: str) -> tuple[ModelCard, ...]:
    """`GET /v1/models`: {"object": "list", "data": [{"id", "root", "max_model_len", ...}]}."""
    try:
        body: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError("GET /v1/models", f"not JSON ({exc.msg})", text) from exc
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        raise ParseError("GET /v1/models", "expected an object with a 'data' list", text)
    cards = []
    for item in body["data"]:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise ParseError("GET /v1/models", "a model card without a string 'id'", text)
        mml = item.get("max_model_len")
        if mml is not None and not isinstance(mml, int):
            raise ParseError("GET /v1/models", f"max_model_len of {item['id']!r} is not an integer", text)
        cards.append(ModelCard(id=item["id"], root=item.get("root"), max_model_len=mml, parent=item.get("parent")))
    return tuple(cards)
