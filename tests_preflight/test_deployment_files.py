"""The deployment files: one compose for all nodes; each node's .env names that node."""

import hashlib

import pytest

from gb10check import probes
from gb10check.errors import ParseError
from gb10check.facts import dotenv, vllm_run

pytestmark = pytest.mark.preflight


def _qsfp_address(inventory, name):
    """The node's address on the first link: the control plane (Gloo/TCP) and VLLM_HOST_IP."""
    return inventory.links[0].ip(name) if inventory.links else None


def _non_empty(text):
    if not text.strip():  # two empty files are identical, and useless
        raise ParseError("the compose file", "it is empty", text)
    return text


@pytest.mark.hints("deployment-files-differ")
def test_compose_identical_on_every_node(cluster, inventory, deployment, evidence):
    digests = {}
    for n in inventory.nodes:
        text = cluster.snapshot(n.name).fact(probes.COMPOSE, _non_empty)
        digests[n.name] = hashlib.sha256(text.encode()).hexdigest()[:12]
    ref = digests[inventory.api_node.name]
    evidence.expect(
        len(set(digests.values())) == 1,
        what=f"{deployment.compose_file} (sha256)",
        expected=f"{ref} on every node, as on {inventory.api_node.name}",
        found=", ".join(f"{name}: {d}" for name, d in digests.items()),
        detail=f"copy it from rank 0: scp {deployment.compose_file} <peer>:{deployment.compose_file}",
    )


@pytest.mark.hints("env-mismatch")
def test_env_names_this_node(node, inventory, deployment, evidence):
    env = dotenv(node.snapshot(), deployment)
    expected = {"NODE_RANK": str(node.spec.rank), "VLLM_HOST_IP": _qsfp_address(inventory, node.name)}
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
    """MASTER_ADDR is fixed to rank 0's address; it must never follow the node's own VLLM_HOST_IP."""
    snap = node.snapshot()
    run = vllm_run(snap, deployment, node.spec.rank)
    rank0 = _qsfp_address(inventory, inventory.api_node.name)
    found = run.value("--master-addr") or run.environment.get("MASTER_ADDR")
    evidence.expect(
        found == rank0,
        what="master address (--master-addr / MASTER_ADDR)",
        expected=f"{rank0} (rank 0 on {inventory.links[0].netdev})" if inventory.links else rank0,
        found=found or "not set",
    )
