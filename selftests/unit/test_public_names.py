"""Every module of the library, the plugin and the simulator says what it offers: an `__all__` naming each
public name it defines (and nothing it does not), so a reader and a linter see its surface."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted(p for d in ("gb10check", "fixtures", "sim") for p in (ROOT / d).rglob("*.py"))


def _defined(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for n in tree.body:
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(n.name)
        elif isinstance(n, ast.Assign):
            names |= {t.id for t in n.targets if isinstance(t, ast.Name)}
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value is not None:
            names.add(n.target.id)
    return names


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_module_with_public_names_lists_them_in_all(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    defined = _defined(tree)
    public = {n for n in defined if not n.startswith("_")}
    listed = next(
        (
            {ast.literal_eval(e) for e in n.value.elts}
            for n in tree.body
            if isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets)
            and isinstance(n.value, ast.List | ast.Tuple)
        ),
        None,
    )
    if not public:
        return
    assert listed is not None, f"{path.relative_to(ROOT)} defines {sorted(public)} and has no __all__"
    assert public <= listed, f"not in __all__: {sorted(public - listed)}"
    imported = {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
    assert listed <= defined | imported, f"__all__ names what is not there: {sorted(listed - defined - imported)}"
