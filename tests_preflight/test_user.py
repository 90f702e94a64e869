"""The deployment assumes one user name on every node (SSH between them, file ownership)."""

import pytest

from gb10check.judging.compare import odd_ones_out, shown
from gb10check.reading import probes

pytestmark = pytest.mark.preflight


@pytest.mark.hints("user-mismatch")
def test_same_user_on_every_node(cluster, inventory, evidence):
    """The same user on every node.

    The user name (`id -un`) is the same on every node; the nodes whose name differs from the others' are named."""
    users = {n.name: cluster.snapshot(n.name).fact(probes.WHOAMI) for n in inventory.nodes}
    odd = odd_ones_out(users, [inventory.api_node.name])
    common = next(u for n, u in users.items() if n not in odd)
    evidence.expect(
        not odd,
        what="user name (id -un)",
        expected=f"{common} on every node",
        found=shown(users, odd),
    )
