"""The compose file, rule by rule (gb10check/compose_rules.py), as each node's Docker Compose reads it."""

from dataclasses import dataclass

import pytest

from fixtures.cluster import INVENTORY, OnNode
from gb10check import probes
from gb10check.compose_rules import RULES, Context, NotApplicable, Rule
from gb10check.facts import compose_service, vllm_run

pytestmark = pytest.mark.preflight


@dataclass(frozen=True)
class RuleOnNode(OnNode):
    rule: Rule

    def __str__(self) -> str:
        return f"{self.node}-{self.rule.id}"


def pytest_generate_tests(metafunc):
    """One case per rule and node (rank-0 rules on rank 0 only), each with its rule's hint; a rule for
    other cluster shapes (a ring's NCCL settings on a pair) is no check of this cluster: not collected."""
    if "rule_on_node" in metafunc.fixturenames and INVENTORY in metafunc.config.stash:
        inventory = metafunc.config.stash[INVENTORY]
        rules = [r for r in RULES if not r.topologies or inventory.topology in r.topologies]
        cases = [RuleOnNode(n.name, r) for r in rules for n in inventory.nodes if n.rank == 0 or not r.rank0_only]
        metafunc.parametrize(
            "rule_on_node", [pytest.param(c, id=str(c), marks=pytest.mark.hints(c.rule.hint)) for c in cases]
        )


def test_compose_rule(rule_on_node, cluster, inventory, deployment, evidence):
    """The compose obeys the deployment rule."""
    node, rule = cluster[rule_on_node.node], rule_on_node.rule
    cluster.gather()
    snap = node.snapshot()
    service = compose_service(snap, deployment)
    ctx = Context(
        service=service,
        run=vllm_run(snap, deployment, node.spec.rank),
        rank=node.spec.rank,
        inventory=inventory,
        mem_total=snap.fact(probes.MEMINFO).total,
    )
    try:
        ok, expected, found = rule.check(ctx)
    except NotApplicable as exc:
        pytest.skip(str(exc))
    evidence.expect(
        ok,
        what=f"{deployment.compose_file} (read by {service.reader}): {rule.what}",
        expected=expected,
        found=found,
        detail=service.why_fallback,
    )
