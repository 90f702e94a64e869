"""Rank 0 logs in to every peer over each QSFP address without a password (copying weights,
starting the follower), as the deployment user."""

import re

import pytest

from gb10check.node import follows_from
from gb10check.probes import ssh_login

pytestmark = pytest.mark.preflight

# nothing answered at all: the link, not the keys (see `pytest -m network`)
_NO_PATH = re.compile(r"Connection timed out|No route to host|Network is unreachable|Connection refused")


def _last_line(text):
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


@pytest.mark.hints("ssh-qsfp-denied")
def test_passwordless_ssh_over_qsfp(peer, cluster, inventory, evidence):
    peer = peer.node
    if not inventory.links:
        pytest.skip("the inventory lists no QSFP links to log in over")
    rank0 = inventory.api_node.name
    snap = cluster.snapshot(rank0)
    failed, failed_ips, unreachable = [], [], True
    for link in inventory.links:
        ip = link.ip(peer)
        res = snap.raw(ssh_login(peer, link, inventory.ssh.connect_timeout))
        if res.timed_out or res.rc != 0:
            failed_ips.append(ip)
        if res.timed_out:
            failed.append(f"{link.netdev} {ip}: no answer within {res.duration:.0f} s")
        elif res.rc != 0:
            said = _last_line(res.stderr) or _last_line(res.stdout) or "(nothing printed)"
            failed.append(f"{link.netdev} {ip}: exit {res.rc}: {said}")
            unreachable = unreachable and bool(_NO_PATH.search(res.stderr))
    gone = cluster.unreachable([peer]) if failed else []
    evidence.expect(
        not failed,
        what=f"ssh from {rank0} to {peer} (BatchMode, no password)",
        expected="login on every QSFP address",
        found="; ".join(failed) or f"logged in over {len(inventory.links)} address(es)",
        detail=follows_from(gone) if gone else "",
        # the peer cannot be asked at all: the logins follow from it, not from its keys or the link
        hints=("node-unreachable",) if gone else ("roce-link-down",) if failed and unreachable else (),
        context={"node_qsfp_ips": failed_ips},  # the hint's ssh lines: the addresses that failed, only those
    )
