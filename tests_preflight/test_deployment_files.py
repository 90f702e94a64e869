"""The deployment files: one compose for all nodes; each node's .env names that node."""

import hashlib

import pytest

from gb10check import probes
from gb10check.compare import odd_ones_out, shown
from gb10check.errors import ParseError
from gb10check.facts import dotenv, vllm_run

pytestmark = pytest.mark.preflight


def _non_empty(text):
    if not text.strip():  # two empty files are identical, and useless
        raise ParseError("the compose file", "it is empty", text)
    return text


@pytest.mark.hints("deployment-files-differ")
def test_compose_identical_on_every_node(cluster, inventory, deployment, evidence):
    """The same compose file on every node."""
    digests = {}
    for n in inventory.nodes:
        text = cluster.snapshot(n.name).fact(probes.COMPOSE, _non_empty)
        digests[n.name] = hashlib.sha256(text.encode()).hexdigest()[:12]
    rank0 = inventory.api_node.name
    odd = odd_ones_out(digests, [rank0])
    good = next(n for n in digests if n not in odd)
    evidence.expect(
        not odd,
        what=f"{deployment.compose_file} (sha256)",
        expected="the same file on every node",
        found=shown(digests, odd),
        detail="copy it from a node that has the common one: "
        + "; ".join(f"scp {deployment.compose_file} {n}:{deployment.compose_file}   # on {good}" for n in odd),
    )


@pytest.mark.hints("env-mismatch")
def test_env_names_this_node(node, inventory, deployment, evidence):
    """The .env names this node: rank, address, model."""
    env = dotenv(node.snapshot(), deployment)
    # VLLM_HOST_IP: the node's own address on the control plane (where Gloo and the master address are)
    expected = {"NODE_RANK": str(node.spec.rank), "VLLM_HOST_IP": inventory.control_address(node.name)}
    if inventory.service is not None:
        expected["MODEL_ID"] = inventory.service.model
    wrong = [k for k, v in expected.items() if v is not None and env.get(k) != v]
    evidence.expect(
        not wrong,
        what=deployment.env_file,
        expected=", ".join(f"{k}={v}" for k, v in expected.items() if v is not None),
        found=", ".join(f"{k}={env.get(k, '(unset)')}" for k, v in expected.items() if v is not None),
        detail=f"wrong: {', '.join(wrong)}",
    )


@pytest.mark.hints("master-addr-wrong")
def test_master_addr_is_rank0(node, inventory, deployment, evidence):
    """MASTER_ADDR fixed to rank 0's address.

    MASTER_ADDR is fixed to rank 0's address; it must never follow the node's own VLLM_HOST_IP."""
    snap = node.snapshot()
    run = vllm_run(snap, deployment, node.spec.rank)
    rank0 = inventory.master_address
    if rank0 is None:
        pytest.skip("the inventory gives no address for rank 0 on the control plane ([control] addresses)")
    found = run.value("--master-addr") or run.environment.get("MASTER_ADDR")
    evidence.expect(
        found == rank0,
        what="master address (--master-addr / MASTER_ADDR)",
        expected=f"{rank0} (rank 0 on the control plane {inventory.control_netdev(inventory.api_node.name)})",
        found=found or "not set",
    )
