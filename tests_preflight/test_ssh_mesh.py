"""Every node logs in to each node it shares a rail with, over each of those rails, without a
password (copying weights, starting the followers, mpirun), as the deployment user."""

import re

import pytest

from fixtures.cluster import INVENTORY, OnPair
from gb10check.reading import wire
from gb10check.reading.node import follows_from
from gb10check.reading.probes import ssh_login

pytestmark = pytest.mark.preflight

# nothing answered at all: the link, not the keys (see `pytest -m network`)
_NO_PATH = re.compile(r"Connection timed out|No route to host|Network is unreachable|Connection refused")


def _last_line(text):
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def pytest_generate_tests(metafunc):
    """`ssh_route`: from each node to each node it shares a rail with (both ways: each has its own keys)."""
    if "ssh_route" in metafunc.fixturenames:
        inventory = metafunc.config.stash.get(INVENTORY, None)
        routes = [OnPair(a, b) for a, b in inventory.node_pairs()] if inventory else []
        routes += [OnPair(r.peer, r.node) for r in routes]
        metafunc.parametrize("ssh_route", routes, ids=[str(r) for r in routes])


@pytest.mark.hints("ssh-qsfp-denied")
def test_passwordless_ssh_over_qsfp(ssh_route, cluster, inventory, fault_owners, evidence):
    """Passwordless SSH to the peer over the fabric.

    Each node logs in to each node it shares a rail with, over each of those rails, with `ssh -o BatchMode=yes` (no
    password), both ways: each node has its own keys. A login that nothing answers (timed out, no route, refused) points
    at the link, not the keys; a peer that cannot be reached at all, or a wire that ends at another node, is named as
    such.

    A login that fails only over dark ports or wires that end elsewhere follows from the check that owns them, when
    the run has it (the interface check, the cabling check)."""
    node, peer = ssh_route.node, ssh_route.peer
    snap = cluster.snapshot(node)
    failed, failed_ips, unreachable, crossed, owned = [], [], True, [], []
    rails = inventory.rails_between(node, peer)
    for rail in rails:
        target = rail.member(peer)
        res = snap.raw(ssh_login(target, inventory.ssh.connect_timeout))
        if res.timed_out or res.rc != 0:
            failed_ips.append(target.ip)
            owned.append(fault_owners.over(rail, node, peer))
            # a wire that ends at another node than the peer (the neighbour table says who answered)
            crossed += (
                [(rail.name, rail.member(node).netdev, target.ip)]
                if wire.answered_wrong(cluster, rail, rail.member(node), target)
                else []
            )
        if res.timed_out:
            failed.append(f"rail {rail.name} {target.ip}: no answer within {res.duration:.0f} s")
        elif res.rc != 0:
            said = _last_line(res.stderr) or _last_line(res.stdout) or "(nothing printed)"
            failed.append(f"rail {rail.name} {target.ip}: exit {res.rc}: {said}")
            unreachable = unreachable and bool(_NO_PATH.search(res.stderr))
    gone = cluster.unreachable([peer]) if failed else []
    if owned and all(owned):  # every failed login went over a dark port or a crossed wire: its owner's failure
        evidence.explained_by(owned[0])
    # the peer cannot be asked at all: the logins follow from it, not from its keys or the link; a crossed
    # cable (the link is up, the address answered by another node or by none) is not a link down
    hints: tuple[str, ...] = ()
    detail, context = "", {"node_qsfp_ips": failed_ips}
    if gone:
        hints, detail, context["node"] = ("node-unreachable",), follows_from(gone), gone[0]
    elif crossed:
        hints = ("cable-crossed",)
        on = ", ".join(c[0] for c in crossed)
        detail = f"the wire of rail {on} ends at another node than {peer}: see the cabling check"
        context |= {"netdev": crossed[0][1], "peer_ip": crossed[0][2]}
    elif failed and unreachable:
        hints = ("roce-link-down",)
    evidence.expect(
        not failed,
        what=f"ssh from {node} to {peer} (BatchMode, no password)",
        expected="login on every fabric address",
        found="; ".join(failed) or f"logged in over {len(rails)} address(es)",
        detail=detail,
        hints=hints,
        context=context,  # the hint's ssh lines: the addresses that failed, only those
    )
