"""The catalogue: complete, well-formed, matched by symptom; tests only name ids it has."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gb10check.errors import HintCatalogueError
from gb10check.hints import Catalogue, parse_catalogue

PROJECT = Path(__file__).resolve().parents[2]
REQUIRED = {
    # DOMAIN.md's troubleshooting table
    "gloo-ipv6-timeout",
    "follower-not-headless",
    "cudagraph-mode-hyphen",
    "kv-cache-oom",
    "mamba-cache-capacity",
    "driver-deadlock",
    "memavailable-low",
    "gpu-not-in-container",
    "hf-cache-permissions",
    # the foundation's own
    "driver-version-mismatch",
    "roce-link-down",
    "model-not-registered",
    "node-unreachable",
}
GOOD = '[x-y]\ntitle = "t"\ncause = "c"\nfix = "f"\ncommands = ["ls"]\nsymptoms = ["boom"]\n'


def test_builtin_catalogue_loads_and_is_complete():
    cat = Catalogue.load()
    assert cat.ids >= REQUIRED
    for hint_id in cat.ids:
        hint = cat[hint_id]
        assert hint.title and hint.cause and hint.fix


def _named_hint_ids() -> dict[str, set[str]]:
    """Every id passed to pytest.mark.hints(...) in the acceptance suite, by file."""
    found: dict[str, set[str]] = {}
    for path in sorted(PROJECT.glob("tests_*/**/*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "hints"
                and isinstance(node.func.value, ast.Attribute)
                and node.func.value.attr == "mark"
            ):
                for arg in node.args:
                    if isinstance(arg, ast.Attribute) and arg.attr == "hint":  # a compose rule's (checked below)
                        continue
                    assert isinstance(arg, ast.Constant), f"{path}: hint ids must be string literals"
                    found.setdefault(str(path.relative_to(PROJECT)), set()).add(arg.value)
    return found


def test_every_hint_a_test_names_is_in_the_catalogue():
    named = _named_hint_ids()
    assert named, "the acceptance suite names no hints at all"
    ids = Catalogue.load().ids
    missing = {f: sorted(h - ids) for f, h in named.items() if h - ids}
    assert not missing, f"tests name hint ids the catalogue lacks: {missing}"


def test_every_compose_rule_hint_is_in_the_catalogue():
    from gb10check.compose_rules import RULES

    ids = Catalogue.load().ids
    assert len({r.id for r in RULES}) == len(RULES)
    assert [r.hint for r in RULES if r.hint not in ids] == []


def test_symptoms_match_real_failure_texts():
    cat = Catalogue.load()
    assert [h.id for h in cat.match("Failed to initialize NVML: Driver/library version mismatch")] == [
        "driver-version-mismatch"
    ]
    assert "follower-not-headless" in [
        h.id for h in cat.match("RuntimeError: collective_rpc should not be called on follower node")
    ]
    assert "gpu-not-in-container" in [
        h.id
        for h in cat.match(
            'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].'
        )
    ]
    assert cat.match("all good") == []


def test_resolve_puts_named_first_and_rejects_unknown():
    cat = Catalogue.load()
    got = cat.resolve(["roce-link-down"], "Failed to initialize NVML: Driver/library version mismatch")
    assert [h.id for h in got] == ["roce-link-down", "driver-version-mismatch"]
    with pytest.raises(HintCatalogueError, match="unknown hint id 'no-such-hint'"):
        cat.resolve(["no-such-hint"], "")


def test_site_file_adds_and_overrides(tmp_path):
    site = tmp_path / "site.toml"
    site.write_text(GOOD + GOOD.replace("[x-y]", "[node-unreachable]").replace('"t"', '"our bastion is down"'))
    cat = Catalogue.load([site])
    assert "x-y" in cat.ids and cat["node-unreachable"].title == "our bastion is down"
    assert cat["node-unreachable"].source == str(site)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (GOOD.replace("[x-y]", "[X_Y]"), "id must be lowercase words"),
        (GOOD.replace('fix = "f"\n', ""), "missing key 'fix'"),
        (GOOD + 'colour = "red"\n', "unknown key(s) colour"),
        (GOOD.replace('commands = ["ls"]', 'commands = "ls"'), "'commands' must be a non-empty list"),
        (GOOD.replace('title = "t"', 'title = "  "'), "'title' must be a non-empty str"),
        (GOOD.replace('["boom"]', '["(unclosed"]'), "is not a valid regex"),
        (GOOD.replace('["boom"]', '[""]'), "every item of 'symptoms' must be a non-empty string"),
        ("[x-y\n", "not valid TOML"),
    ],
)
def test_malformed_entries_are_rejected(text, message):
    with pytest.raises(HintCatalogueError) as err:
        parse_catalogue(text, "site.toml")
    assert message in str(err.value) and str(err.value).startswith("site.toml")


def test_missing_site_file(tmp_path):
    with pytest.raises(HintCatalogueError, match=r"--hints .*nope\.toml: cannot read"):
        Catalogue.load([tmp_path / "nope.toml"])
