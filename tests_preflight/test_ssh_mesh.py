"""Every node logs in to each node it shares a rail with, over each of those rails, without a
password (copying weights, starting the followers, mpirun), as the deployment user."""

import re

import pytest

from fixtures.cluster import INVENTORY, OnPair
from gb10check.node import follows_from
from gb10check.probes import ssh_login

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
def test_passwordless_ssh_over_qsfp(ssh_route, cluster, inventory, evidence):
    """Passwordless SSH to the peer over the fabric."""
    node, peer = ssh_route.node, ssh_route.peer
    snap = cluster.snapshot(node)
    failed, failed_ips, unreachable = [], [], True
    rails = inventory.rails_between(node, peer)
    for rail in rails:
        target = rail.member(peer)
        res = snap.raw(ssh_login(target, inventory.ssh.connect_timeout))
        if res.timed_out or res.rc != 0:
            failed_ips.append(target.ip)
        if res.timed_out:
            failed.append(f"rail {rail.name} {target.ip}: no answer within {res.duration:.0f} s")
        elif res.rc != 0:
            said = _last_line(res.stderr) or _last_line(res.stdout) or "(nothing printed)"
            failed.append(f"rail {rail.name} {target.ip}: exit {res.rc}: {said}")
            unreachable = unreachable and bool(_NO_PATH.search(res.stderr))
    gone = cluster.unreachable([peer]) if failed else []
    evidence.expect(
        not failed,
        what=f"ssh from {node} to {peer} (BatchMode, no password)",
        expected="login on every fabric address",
        found="; ".join(failed) or f"logged in over {len(rails)} address(es)",
        detail=follows_from(gone) if gone else "",
        # the peer cannot be asked at all: the logins follow from it, not from its keys or the link
        hints=("node-unreachable",) if gone else ("roce-link-down",) if failed and unreachable else (),
        # the hint's ssh lines: the addresses that failed, only those; node-unreachable's: for the node that is off
        context={"node_qsfp_ips": failed_ips, **({"node": gone[0]} if gone else {})},
    )
