"""Rank 0 logs in to every peer over each QSFP address without a password (copying weights,
starting the follower), as the deployment user."""

import re

import pytest

from gb10check.errors import ParseError

pytestmark = pytest.mark.preflight

_BLOCK = re.compile(r"^=== (?P<peer>\S+) (?P<netdev>\S+) (?P<ip>\S+)\n(?P<out>.*?)^=== rc (?P<rc>\d+)$", re.M | re.S)


_NO_PATH = re.compile(r"Connection timed out|No route to host|Network is unreachable|Connection refused")


def parse_mesh(text):
    found = {(m["peer"], m["netdev"]): (m["ip"], int(m["rc"]), m["out"].strip()) for m in _BLOCK.finditer(text)}
    if not found:
        raise ParseError("ssh to the peers over QSFP", "no '=== peer netdev ip' blocks", text)
    return found


@pytest.mark.hints("ssh-qsfp-denied")
def test_passwordless_ssh_over_qsfp(peer, cluster, inventory, evidence):
    rank0 = inventory.api_node.name
    mesh = cluster.snapshot(rank0).parsed("ssh_mesh", parse_mesh, accept_rc=tuple(range(256)))
    failed, unreachable = [], True
    for link in inventory.links:
        ip, rc, out = mesh.get((peer, link.netdev), (link.addresses[peer], None, "not tried"))
        if rc != 0:
            failed.append(f"{link.netdev} {ip}: {out.splitlines()[-1] if out else f'exit {rc}'}")
            unreachable = unreachable and bool(_NO_PATH.search(out))
    evidence.expect(
        not failed,
        what=f"ssh from {rank0} to {peer} (BatchMode, no password)",
        expected="login on every QSFP address",
        found="; ".join(failed),
        # nothing answered at all: the link, not the keys (see `pytest -m network`)
        hints=("roce-link-down",) if failed and unreachable else (),
    )
