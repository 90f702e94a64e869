"""docs/checks.md is made from the checks, and is current."""

from __future__ import annotations

from pathlib import Path

import pytest

from gb10check.commands import check_list
from gb10check.commands.check_list import CheckListError, markdown, read_checks

ROOT = Path(__file__).resolve().parents[2]


def test_docs_checks_md_is_current():
    made = markdown(read_checks(ROOT))
    committed = (ROOT / "docs" / "checks.md").read_text(encoding="utf-8")
    assert committed == made, "docs/checks.md is stale: python -m gb10check.commands.check_list > docs/checks.md"


def test_every_check_of_the_suite_is_listed():
    checks = read_checks(ROOT)
    names = {c.name for c in checks}
    # the AST sees module-level functions only: a check inside a class would be missed
    for folder in ("tests_preflight", "tests_network", "tests_service"):
        for file in (ROOT / folder).glob("test_*.py"):
            assert "\nclass Test" not in file.read_text(encoding="utf-8"), f"{file}: checks are functions here"
    assert {"test_driver_versions_match", "test_rdma_bandwidth", "test_decode_speed", "test_launch_rule"} <= names
    by_name = {c.name: c for c in checks}
    assert by_name["test_driver_versions_match"].marks == ("smoke",)
    assert by_name["test_rdma_bandwidth"].marks == ("performance",)
    assert by_name["test_rdma_bandwidth"].per == "pair, rail"
    assert by_name["test_same_user_on_every_node"].per == "cluster"
    # a helper's hint ids count: _loaded names driver-not-loaded for both driver checks
    assert "driver-not-loaded" in by_name["test_installed_module_is_the_loaded_one"].hints


def _suite(tmp_path: Path, body: str) -> Path:
    for folder in ("tests_preflight", "tests_network", "tests_service"):
        (tmp_path / folder).mkdir()
    (tmp_path / "tests_preflight" / "test_x.py").write_text(body, encoding="utf-8")
    return tmp_path


def test_a_check_taking_a_fixture_the_list_does_not_know_is_refused(tmp_path):
    root = _suite(tmp_path, 'def test_x(gadget, evidence):\n    """A title."""\n')
    with pytest.raises(CheckListError, match=r"tests_preflight/test_x.py::test_x takes gadget"):
        read_checks(root)


def test_a_check_without_a_docstring_is_refused(tmp_path):
    root = _suite(tmp_path, "def test_x(node, evidence):\n    pass\n")
    with pytest.raises(CheckListError, match="has no docstring"):
        read_checks(root)


def test_title_detail_marks_and_hints_of_a_check(tmp_path):
    body = (
        "import pytest\npytestmark = pytest.mark.preflight\n\n"
        "def _helper(evidence):\n    evidence.expect(True, hints=('file-missing',))\n\n"
        "@pytest.mark.smoke\n@pytest.mark.hints('user-mismatch')\n"
        'def test_x(node, evidence):\n    """The title.\n\n    First | part\n    goes on.\n\n    Second."""\n'
        "    _helper(evidence)\n"
    )
    (check,) = read_checks(_suite(tmp_path, body))
    assert (check.title, check.detail, check.per) == ("The title.", "First | part goes on. Second.", "node")
    assert check.marks == ("smoke",)
    assert check.hints == ("user-mismatch", "file-missing")
    assert "First \\| part" in markdown([check])  # a cell's pipe escaped


def test_main_prints_the_page(capsys, monkeypatch):
    monkeypatch.setattr(check_list.suite, "root", lambda: ROOT)
    assert check_list.main([]) == 0
    assert capsys.readouterr().out == markdown(read_checks(ROOT))


def test_every_check_names_its_hints():
    """A failure carries a hint: every check names one in its code, or its cases name theirs (rules, entries)."""
    bare = [c.name for c in read_checks(ROOT) if not c.hints and c.name not in check_list.HINTS_BELOW]
    assert not bare, f"checks naming no hint id: {bare}"
