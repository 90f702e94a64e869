"""The compose file, rule by rule (gb10check/compose_rules.py), as each node's Docker Compose reads it."""

import pytest

from fixtures.cluster import INVENTORY
from gb10check.compose_rules import RULES, Context
from gb10check.facts import service, vllm_run
from gb10check.parsers.meminfo import parse_meminfo

pytestmark = pytest.mark.preflight


def pytest_generate_tests(metafunc):
    """One test per rule and node (rank-0 rules on rank 0 only), each rule with its own hint."""
    if "rule_case" not in metafunc.fixturenames or INVENTORY not in metafunc.config.stash:
        return
    inventory = metafunc.config.stash[INVENTORY]
    cases = [
        pytest.param((n.name, rule), id=f"{n.name}-{rule.id}", marks=pytest.mark.hints(rule.hint))
        for rule in RULES
        for n in inventory.nodes
        if n.rank == 0 or not rule.rank0_only
    ]
    metafunc.parametrize("rule_case", cases)


def test_compose_rule(rule_case, cluster, inventory, deployment, evidence):
    name, rule = rule_case
    node = cluster[name]
    cluster.gather()
    snap = node.snapshot()
    evidence.node = name
    ctx = Context(
        service=service(snap, deployment),
        run=vllm_run(snap, deployment, node.spec.rank),
        rank=node.spec.rank,
        inventory=inventory,
        mem_total=snap.parsed("meminfo", parse_meminfo).total,
    )
    ok, expected, found = rule.check(ctx)
    evidence.expect(ok, what=f"{deployment.compose_file}: {rule.what}", expected=expected, found=found)
