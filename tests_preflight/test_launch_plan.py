"""The launch plan across the nodes (issue 19): what each node's compose and script say together.

Each node's own `vllm serve` is judged rule by rule in test_compose_lint.py; here the checks that only
make sense across the nodes."""

import pytest

from gb10check.facts import vllm_run

pytestmark = pytest.mark.preflight


@pytest.mark.hints("node-rank-repeated")
def test_node_rank_unique(cluster, inventory, deployment, evidence):
    """Every node starts vLLM with its own --node-rank: two nodes with one rank are named together."""
    cluster.gather()
    snaps = {n.name: cluster.snapshot(n.name) for n in inventory.nodes}
    ranks = {n.name: vllm_run(snaps[n.name], deployment, n.rank).value("--node-rank") for n in inventory.nodes}
    holders: dict[str | None, list[str]] = {}
    for name, rank in ranks.items():
        holders.setdefault(rank, []).append(name)
    repeated = {rank: names for rank, names in holders.items() if len(names) > 1}
    together = [f"--node-rank {r or 'not set'} on {' and '.join(names)}" for r, names in repeated.items()]
    # the node to fix: of those sharing a rank, the one whose inventory rank is another
    sharing = [n for names in repeated.values() for n in names]
    wrong = [n for n in sharing if ranks[n] != str(inventory.node(n).rank)]
    evidence.expect(
        not repeated,
        what="--node-rank across the nodes",
        expected=f"each of 0..{inventory.size - 1} once (every node its inventory rank)",
        found="; ".join(together) or ", ".join(f"{n}: {r}" for n, r in ranks.items()),
        detail="per node: " + ", ".join(f"{n}: {r or 'not set'}" for n, r in ranks.items()),
        context={"node": (wrong or sharing or [inventory.api_node.name])[0]},
    )
