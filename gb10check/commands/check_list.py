"""The checks as a list a reader can look up (docs/checks.md), made from the checks themselves.

Each `test_*` of tests_preflight/, tests_network/ and tests_service/ gives one row: its stage and markers
(module `pytestmark` and its own), what one verdict is for (the fixture it is parametrized by: a node, a
port, a pair on a rail...), the hint ids its code names (gb10check/judging/hints.py's reading of a module, in the
test and the module's helpers it calls) and its docstring: the first line is the title, the rest the
detail. The launch rules (gb10check/deployment/launch/rules.py) and the known-issues catalogue are listed from their
data. Read from the source, never imported: the list needs no inventory and no pytest.

`python -m gb10check.commands.check_list > docs/checks.md` writes the page; selftests/unit/test_check_list.py fails
when the committed page is not what this makes.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

from gb10check import suite
from gb10check.deployment.launch.rules import RULES
from gb10check.errors import GB10Error
from gb10check.judging import known_issues
from gb10check.judging.hints import hint_ids_in_source

__all__ = [
    "HINTS_BELOW",
    "MARKS",
    "NAV",
    "PER",
    "SHARED",
    "STAGES",
    "Check",
    "CheckListError",
    "main",
    "markdown",
    "read_checks",
]

# the stage folders, in the order a cluster meets them, with the page's words for each
STAGES: dict[str, tuple[str, str]] = {
    "preflight": (
        "tests_preflight",
        "Before starting vLLM (`gb10check preflight`, `pytest -m preflight`): read-only; the one action is a "
        "throwaway `docker run --rm` per node where no container runs to `docker exec` into.",
    ),
    "network": (
        "tests_network",
        "After cabling and netplan (`gb10check network`): the RoCE links, addresses, reachability, the RDMA "
        "bandwidth and NCCL's collective in the serving image. The bandwidth and the collective skip while the "
        "deployment's container runs (they would compete with NCCL for the links and the GPU); `--bandwidth` "
        "runs the bandwidth anyway.",
    ),
    "service": (
        "tests_service",
        "After `docker compose up` (`gb10check service`): the API on rank 0 as its users call it (the openai "
        "SDK, retries off; raw HTTP only for /health, /version, /metrics and streams), every request bounded "
        "in total (`service.request_timeout`, a stream's silence by `read_timeout`), the requests that do not "
        "depend on each other sent at once; the API key from the variable `service.api_key_env` names, in no "
        "output.",
    ),
}

# what one verdict is for: the first of these a check takes is the fixture it is parametrized by
PER: tuple[tuple[str, str], ...] = (
    ("rule_on_node", "rule, node"),
    ("ssh_route", "ordered pair, rail"),
    ("rail_pair", "pair, rail"),
    ("node_pair", "pair"),
    ("member", "port"),
    ("rail", "rail"),
    ("follower", "follower"),
    ("canary", "question"),
    ("node", "node"),
    ("nvidia_smi", "node"),
    ("api_node", "rank 0"),
)
# fixtures that parametrize nothing: a check that takes only these judges the cluster once
SHARED = frozenset(
    {
        "cluster",
        "inventory",
        "deployment",
        "evidence",
        "request",
        "model",
        "runs",
        "fault_owners",
        "link_down_advice",
        "container_nccl_conf",
        "container_gpu_probes",
        "container_libraries",
        "skip_if_starting",
        "known_issues",
        "answer",
        "answers",
        "ready",
        "readiness",
        "findings",
        "api",
        "decode_reply",
        "decode_clocks",
        "service_snapshots",
        "collective",
    }
)
MARKS = ("smoke", "performance")
# checks whose hint is their case's, listed below the stages' tables
HINTS_BELOW = {
    "test_launch_rule": "each rule's (the launch rules, below)",
    "test_no_known_issue": "each entry's own (below)",
}
NAV = (
    "[README](../README.md) · [cluster](cluster.md) · [checks](checks.md) · [judging](judging.md) · "
    "[reports](reports.md) · [operations](operations.md) · [security](security.md) · [speed](speed.md) · "
    "[design](DESIGN.md)"
)


class CheckListError(GB10Error):
    """A check the list cannot place (a fixture it does not know), or a check file it cannot read."""


@dataclass(frozen=True)
class Check:
    stage: str
    path: str  # relative to the suite's root
    name: str
    title: str
    detail: str
    per: str
    marks: tuple[str, ...]
    hints: tuple[str, ...]


def _marks(decorators: list[ast.expr]) -> list[str]:
    """`pytest.mark.NAME` (called or not), in a decorator list or a pytestmark value."""
    out: list[str] = []
    for node in decorators:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Attribute) and sub.value.attr == "mark":
                out.append(sub.attr)
    return out


def _is_pytestmark(node: ast.stmt) -> bool:
    return isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)


def _per(path: str, fn: ast.FunctionDef) -> str:
    args = [a.arg for a in fn.args.args]
    for fixture, per in PER:
        if fixture in args:
            return per
    unknown = [a for a in args if a not in SHARED]
    if unknown:
        raise CheckListError(
            f"{path}::{fn.name} takes {', '.join(unknown)}: gb10check/commands/check_list.py does not know whether "
            "it parametrizes the check (add it to PER with what one verdict is for, or to SHARED)"
        )
    return "cluster"


def _hints(fn: ast.FunctionDef, helpers: dict[str, ast.FunctionDef]) -> tuple[str, ...]:
    """The hint ids the check's code names, and those of the module's own functions it calls (transitively)."""
    seen: set[str] = set()
    ids: list[str] = []
    todo = [fn]
    while todo:
        node = todo.pop()
        if node.name in seen:
            continue
        seen.add(node.name)
        for hint_id, _line in hint_ids_in_source(ast.unparse(node)):
            if hint_id not in ids:
                ids.append(hint_id)
        called = {c.func.id for c in ast.walk(node) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
        todo += [helpers[name] for name in sorted(called) if name in helpers]
    return tuple(ids)


def _docstring(path: str, fn: ast.FunctionDef) -> tuple[str, str]:
    doc = ast.get_docstring(fn)
    if not doc:
        raise CheckListError(f"{path}::{fn.name} has no docstring: its first line is the check's title")
    title, _, rest = doc.partition("\n")
    paragraphs = [" ".join(p.split()) for p in rest.split("\n\n") if p.strip()]
    return title.strip(), " ".join(paragraphs)


def read_checks(root: Path) -> list[Check]:
    """Every check of the three stages, in folder and file order, then as written in each file."""
    out: list[Check] = []
    for stage, (folder, _about) in STAGES.items():
        for file in sorted((root / folder).glob("test_*.py")):
            rel = file.relative_to(root).as_posix()
            source = file.read_text(encoding="utf-8")
            try:
                module = ast.parse(source)
            except SyntaxError as exc:
                raise CheckListError(f"{rel}:{exc.lineno}: cannot read it: {exc.msg}") from exc
            module_marks = [
                mark
                for node in module.body
                if isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
                for mark in _marks([node.value])
            ]
            functions = [n for n in module.body if isinstance(n, ast.FunctionDef)]
            helpers = {f.name: f for f in functions if not f.name.startswith("test_")}
            for fn in functions:
                if not fn.name.startswith("test_"):
                    continue
                marks = [*module_marks, *_marks(fn.decorator_list)]
                title, detail = _docstring(rel, fn)
                out.append(
                    Check(
                        stage=stage,
                        path=rel,
                        name=fn.name,
                        title=title,
                        detail=detail,
                        per=_per(rel, fn),
                        marks=tuple(m for m in MARKS if m in marks),
                        hints=_hints(fn, helpers),
                    )
                )
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _ids(ids: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f"`{i}`" for i in ids)


def markdown(checks: list[Check]) -> str:
    """docs/checks.md: each stage's checks, then the launch rules and the known issues."""
    lines = [
        NAV,
        "",
        "# The checks",
        "",
        "<!-- Made by `python -m gb10check.commands.check_list > docs/checks.md` from the checks' docstrings,",
        "     markers and hint ids, the launch rules and the known-issues catalogue; selftests/unit/test_check_list.py",
        "     holds it current. Edit those, not this page. -->",
        "",
        "Every check is a pytest test: a row's check is `FILE::NAME`, one verdict per what *per* says (a node,",
        "a port, a pair of nodes on a rail...). *also* names the other markers it carries: `smoke` (the",
        'post-reboot subset, `gb10check smoke`) and `performance` (a threshold on a speed: `-m "not performance"`',
        "is the functional run, so a slow link never reads like a broken one). *hints* are the troubleshooting",
        "entries (gb10check/judging/hints.toml) its code names; a read that fails adds its own (`node-unreachable`,",
        "`command-timeout`, `tool-missing`, `file-missing`, `output-cut`, `sudo-required`...:",
        "[judging.md](judging.md)),",
        "and a symptom the catalogue knows in what a node printed adds its hint. Every failure says what was",
        "expected, what was found and where.",
        "",
    ]
    for stage, (_folder, about) in STAGES.items():
        rows = [c for c in checks if c.stage == stage]
        lines += [f"## {stage} ({len(rows)} checks)", "", about, "", "| check | per | also | hints | what it holds |"]
        lines.append("|---|---|---|---|---|")
        for c in rows:
            hints = _ids(c.hints) or HINTS_BELOW.get(c.name, "")
            what = f"**{_cell(c.title)}**" + (f" {_cell(c.detail)}" if c.detail else "")
            lines.append(
                f"| `{c.path.split('/', 1)[1]}::{c.name}` | {c.per} | {', '.join(c.marks)} | {hints} | {what} |"
            )
        lines.append("")
    lines += [
        f"## The launch rules ({len(RULES)})",
        "",
        "`tests_preflight/test_launch_rules.py::test_launch_rule[RULE-NODE]` judges each rank's launch plan",
        "(`gb10check plan` prints it) by each rule: fail only on evidence that the value breaks this deployment",
        "on this node, advisory where it costs speed, advice where it is a preference, with the rule's source.",
        "",
        "| rule | what it judges | hint | shapes | source |",
        "|---|---|---|---|---|",
    ]
    for rule in RULES:
        shapes = ", ".join(rule.topologies) or "every"
        scope = "rank 0" if rule.rank0_only else "every rank"
        lines.append(
            f"| `{rule.id}` | {_cell(rule.what)} ({scope}) | `{rule.hint}` | {shapes} | {_cell(rule.source)} |"
        )
    issues = known_issues.load()
    lines += [
        "",
        f"## The known issues ({len(issues)})",
        "",
        "`tests_preflight/test_known_issues.py::test_no_known_issue[NODE]` holds each node's facts against every",
        "entry of gb10check/judging/known_issues.toml (`gb10check known-issues -v` prints what each matches and",
        "why): a failure entry fails with its fix and sources, one that costs speed is an advisory, a risk the",
        "node cannot confirm is advice. A site adds its own with `--known-issues FILE`.",
        "",
        "| entry (its hint id) | outcome | what | matches | sources |",
        "|---|---|---|---|---|",
    ]
    for issue in issues:
        sources = ", ".join(f"<{s.url}> ({s.date.isoformat()})" for s in issue.sources)
        lines.append(
            f"| `{issue.id}` | {issue.outcome} | {_cell(issue.title)} | {_cell(issue.conditions)} | {sources} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    del argv
    try:
        sys.stdout.write(markdown(read_checks(suite.root())))
    except GB10Error as exc:
        print(f"gb10check.commands.check_list: {exc}", file=sys.stderr)
        return 4
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
