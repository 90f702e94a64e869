"""Every error the library raises is in the one tree errors.py draws, where it draws it."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import gb10check
from gb10check import errors
from gb10check.errors import GB10Error

CONTROL_FLOW = {"CheckFailed", "NotApplicable"}  # named in the docstring as outside the tree
BRANCH = re.compile(r"^    (?P<lead>(?:│   |    )*)[├└]── (?P<name>\w+)")


def _drawn() -> dict[str, str]:
    """Each class the docstring's tree draws -> the class it hangs from."""
    parents: dict[str, str] = {}
    stack = ["GB10Error"]
    for line in (errors.__doc__ or "").splitlines():
        match = BRANCH.match(line)
        if not match:
            continue
        depth = len(match["lead"]) // 4
        del stack[depth + 1 :]
        parents[match["name"]] = stack[depth]
        stack.append(match["name"])
    return parents


def _defined() -> list[type[BaseException]]:
    """Every exception class a module of gb10check/ defines (its folders too: launch/ is a namespace package)."""
    out = []
    root = Path(gb10check.__file__).parent
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if "_suite" in parts:
            continue
        module = importlib.import_module(name)
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == name:
                out.append(value)
    assert len(out) > 20
    return out


def test_every_exception_of_the_library_is_drawn_in_the_tree_under_its_parent():
    drawn = _drawn()
    assert drawn["NodeUnreachable"] == "TransportError" and drawn["ParseError"] == "GB10Error"
    for cls in _defined():
        if cls.__name__.startswith("_"):
            continue  # a module's own signal, caught where it is raised
        if not issubclass(cls, GB10Error):
            assert cls.__name__ in CONTROL_FLOW, f"{cls.__module__}.{cls.__name__} is outside the error tree"
            assert cls.__name__ in (errors.__doc__ or ""), f"errors.py does not say why {cls.__name__} is outside"
            continue
        if cls is GB10Error:
            continue
        assert cls.__name__ in drawn, f"{cls.__module__}.{cls.__name__} is not drawn in errors.py's tree"
        assert drawn[cls.__name__] == cls.__mro__[1].__name__, (
            f"errors.py draws {cls.__name__} under {drawn[cls.__name__]}; it derives from {cls.__mro__[1].__name__}"
        )


def test_the_tree_draws_nothing_that_is_not_there():
    defined = {cls.__name__ for cls in _defined()}
    assert set(_drawn()) <= defined, sorted(set(_drawn()) - defined)
