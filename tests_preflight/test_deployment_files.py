"""The deployment's files across the nodes, and the master address every rank is given."""

import hashlib

import pytest

from gb10check.errors import ParseError
from gb10check.judging.compare import odd_ones_out, shown
from gb10check.reading import probes

pytestmark = pytest.mark.preflight


def _non_empty(text):
    if not text.strip():  # two empty files are identical, and useless
        raise ParseError("the deployment's file", "it is empty", text)
    return text


@pytest.mark.hints("deployment-files-differ")
def test_compose_identical_on_every_node(cluster, inventory, deployment, evidence):
    """The same compose file (or launch script) on every node (advice).

    One file for every node is the simplest to keep right; a head's and a worker's own files work as well,
    so a difference is advice: the launch plan's rules and the ranks' agreement judge what each node runs."""
    digests, paths = {}, {}
    for n in inventory.nodes:
        if deployment.compose_file is None and inventory.launch_of(n.name).runs_on is not None:
            continue  # the script another node runs: that node's file, compared there
        script = inventory.launch_of(n.name).script
        path = deployment.compose_file or script
        assert path is not None  # the inventory names one or the other
        read = probes.COMPOSE if deployment.compose_file else probes.LAUNCH_SCRIPT
        text = cluster.snapshot(n.name).fact(read, _non_empty)
        digests[n.name] = hashlib.sha256(text.encode()).hexdigest()[:12]
        paths[n.name] = path
    rank0 = inventory.api_node.name
    odd = odd_ones_out(digests, [rank0])
    found = shown(digests, odd)
    named = " and ".join(dict.fromkeys(paths.values()))
    if odd:
        good = next(n for n in digests if n not in odd)
        evidence.advise(
            "advice",
            what=f"{named} (sha256)",
            expected="the same file on every node",
            found=found,
            why="what each node runs is judged from its own plan; one file kept in step is less to get wrong: "
            + "; ".join(f"scp {paths[good]} {n}:{paths[n]}   # on {good}" for n in odd),
        )
    evidence.expect(True, what=f"{named} on every node", expected="read on every node", found=found)


@pytest.mark.hints("compose-invalid")
def test_compose_accepted(node, cluster, deployment, evidence):
    """The node's Docker Compose accepts the compose file.

    `docker compose config` on the node, with its env file and the launcher's shell, as `docker compose up`
    would read it: a file it rejects is this check's failure, and every check that needs the node's launch
    plan follows from it (skipped, naming it)."""
    if deployment.compose_file is None:
        pytest.skip("the deployment is a launch script, not a compose file")
    # rejected: errors.ComposeRejected is this check's failure, Compose's own words in its message (masked as a
    # node's output, the suite's words kept)
    plan = cluster.plan(node.name)
    if not plan.read_by.startswith("docker compose"):  # no Compose plugin on the node: nobody to ask
        pytest.skip(f"read by {plan.read_by}: the node has no Docker Compose to ask (the docker checks say why)")
    evidence.expect(
        True,
        what=f"docker compose config ({deployment.compose_file})",
        expected="accepted",
        found=f"accepted (read by {plan.read_by})",
    )


@pytest.mark.hints("master-addr-wrong")
def test_master_addr_is_rank0(node, cluster, inventory, evidence):
    """MASTER_ADDR fixed to rank 0's address.

    The master address every rank is given (--master-addr, else MASTER_ADDR) is rank 0's on the control
    plane; it must never follow the node's own VLLM_HOST_IP."""
    plan = cluster.plan(node.name)
    rank0 = inventory.master_address
    if rank0 is None:
        pytest.skip("the inventory gives no address for rank 0 on the control plane ([control] addresses)")
    if plan.role == "ray worker":
        pytest.skip(f"{node.name} runs a Ray worker: it joins the head's address, not a master address")
    found = plan.vllm.value("--master-addr") or plan.env("MASTER_ADDR")
    if found is None and plan.vllm.value("--distributed-executor-backend") == "ray":
        pytest.skip("the Ray executor: the ranks find each other through the Ray head, not a master address")
    evidence.expect(
        found == rank0,
        what="master address (--master-addr / MASTER_ADDR)",
        expected=f"{rank0} (rank 0 on the control plane {inventory.control_netdev(inventory.api_node.name)})",
        found=found or "not set",
        detail=f"set at {plan.env_source('MASTER_ADDR') or plan.command}",
    )
