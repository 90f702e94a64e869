"""Each rank's launch plan, rule by rule (gb10check/deployment/launch/rules.py), whatever launcher it comes from."""

from dataclasses import dataclass

import pytest

from fixtures.cluster import INVENTORY, OnNode
from gb10check.deployment.launch.rules import RULES, Context, NotApplicable, Rule
from gb10check.errors import GB10Error
from gb10check.reading import probes

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
        unknown = [r for r in inventory.rules.strict if r != "all" and r not in {rule.id for rule in RULES}]
        if unknown:
            raise pytest.UsageError(
                f"{inventory.source}: [rules] strict names {', '.join(unknown)}, which are no rules; the rules: "
                + ", ".join(r.id for r in RULES)
            )
        rules = [r for r in RULES if not r.topologies or inventory.topology in r.topologies]
        cases = [RuleOnNode(n.name, r) for r in rules for n in inventory.nodes if n.rank == 0 or not r.rank0_only]
        metafunc.parametrize(
            "rule_on_node", [pytest.param(c, id=str(c), marks=pytest.mark.hints(c.rule.hint)) for c in cases]
        )


def _optional(read, snap):
    try:
        return snap.fact(read)
    except GB10Error:
        return None  # the node's own check of that read says why


def test_launch_rule(rule_on_node, cluster, inventory, deployment, evidence):
    """The launch plan obeys the rule.

    One test per rule and node (a rank-0 rule on rank 0 only): the rules of
    `gb10check/deployment/launch/rules.py`, each with its source, judge the launch plan `gb10check plan`
    prints. A rule fails, is an advisory or advice, or passes; an advisory of a rule that `[rules] strict`
    names fails.

    The rules: host network, shared memory (ipc host or a large /dev/shm), restart policy (advice), /dev/infiniband,
    RDMA memory pinning (CAP_IPC_LOCK or an unlimited memlock), memory limit, socket families, socket interfaces and
    Gloo's hostname address, NCCL's IB transport, GID index, NCCL_IB_HCA matched as NCCL matches it against the node's
    RDMA devices (selecting exactly the node's devices on its rails, both halves of each cable), merged NICs,
    VLLM_HOST_IP, `--headless` on followers only, `cudagraph_mode` with an underscore, distributed timeout,
    TP/nnodes/node-rank, parallel size, shell syntax, model, reasoning and tool-call parsers, served model name. The
    parallel size: `--tensor-parallel-size` x `--pipeline-parallel-size` x `--data-parallel-size` (each 1 when not
    given) = the GPUs, one per node.

    On a ring two more: NCCL_NET_PLUGIN=none, NCCL_IB_SUBNET_AWARE_ROUTING=1 and, from four nodes, NCCL_ALGO=Ring
    (NCCL_IB_MERGE_NICS=0 is the merged-NICs rule's); and no `--distributed-executor-backend ray`. A rule for another
    cluster shape is not collected."""
    node, rule = rule_on_node.node, rule_on_node.rule
    plan = cluster.plan(node)
    snap = cluster.snapshot(node)
    ctx = Context(
        plan=plan,
        inventory=inventory,
        mem_total=snap.fact(probes.MEMINFO).total,
        ports=_optional(probes.RDMA_PORTS, snap),
        netdevs=_optional(probes.IP_ADDR, snap),
        hostname_addresses=_optional(probes.HOSTNAME_ADDRESSES, snap),
    )
    try:
        verdict = rule.check(ctx)
    except NotApplicable as exc:
        pytest.skip(str(exc))
    what = f"{plan.launcher} (read by {plan.read_by}): {rule.what}"
    where = f"set at {verdict.where}" if verdict.where else ""
    strict = verdict.outcome == "advisory" and inventory.rules.is_strict(rule.id)
    if verdict.outcome in ("advisory", "advice") and not strict:
        evidence.advise(
            verdict.outcome, what=what, expected=verdict.expected, found=verdict.found, why=verdict.why, where=where
        )
        verdict_ok = True
    else:
        verdict_ok = verdict.outcome == "pass"
    evidence.expect(
        verdict_ok,
        what=what,
        expected=verdict.expected,
        found=verdict.found,
        detail="; ".join(x for x in (verdict.why, where, "[rules] strict names this rule" if strict else "") if x),
        context={"set_at": str(verdict.where)} if verdict.where else None,
    )
