"""The deployment assumes one user name on every node (SSH between them, file ownership)."""

import pytest

from gb10check import probes

pytestmark = pytest.mark.preflight


@pytest.mark.hints("user-mismatch")
def test_same_user_on_every_node(cluster, inventory, evidence):
    users = {n.name: cluster.snapshot(n.name).fact(probes.WHOAMI) for n in inventory.nodes}
    rank0 = users[inventory.api_node.name]
    evidence.expect(
        len(set(users.values())) == 1,
        what="user name (id -un)",
        expected=f"{rank0} on every node",
        found=", ".join(f"{name}: {user}" for name, user in users.items()),
    )
