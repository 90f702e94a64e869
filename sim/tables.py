"""TOML tables merged key by key (a scenario over its base, overrides over the example inventory)."""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["merge"]


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` on top of `base`: tables merge key by key, anything else (arrays too) is replaced."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out
