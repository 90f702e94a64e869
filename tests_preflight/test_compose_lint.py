"""The compose file, rule by rule (gb10check/compose_rules.py), as each node's Docker Compose reads it."""

import pytest

from gb10check.compose_rules import Context, NotApplicable
from gb10check.facts import compose_service, vllm_run
from gb10check.parsers.meminfo import parse_meminfo

pytestmark = pytest.mark.preflight


def test_compose_rule(rule_on_node, cluster, inventory, deployment, evidence):
    """One test per rule and node (rank-0 rules on rank 0 only); parametrized in fixtures/cluster.py."""
    node, rule = cluster[rule_on_node.node], rule_on_node.rule
    cluster.gather()
    snap = node.snapshot()
    ctx = Context(
        service=compose_service(snap, deployment),
        run=vllm_run(snap, deployment, node.spec.rank),
        rank=node.spec.rank,
        inventory=inventory,
        mem_total=snap.parsed("meminfo", parse_meminfo).total,
    )
    try:
        ok, expected, found = rule.check(ctx)
    except NotApplicable as exc:
        pytest.skip(str(exc))
    evidence.expect(ok, what=f"{deployment.compose_file}: {rule.what}", expected=expected, found=found)
