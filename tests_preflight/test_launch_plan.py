"""The launch plan across the nodes (issue 19): what each node's compose and script say together.

Each node's own `vllm serve` is judged rule by rule in test_launch_rules.py; here the checks that only
make sense across the nodes."""

import pytest

from fixtures.cluster import INVENTORY, OnNode
from gb10check.deployment.launch.drift import drift
from gb10check.deployment.launch.running import running_plan
from gb10check.errors import DecidedAtStart
from gb10check.judging.compare import odd_ones_out, shown
from gb10check.judging.fit import tp_split_problems
from gb10check.reading import probes
from gb10check.reading.facts import container
from gb10check.reading.node import follows_from

pytestmark = pytest.mark.preflight


def pytest_generate_tests(metafunc):
    """`follower`: every node but rank 0 (the master itself)."""
    if "follower" in metafunc.fixturenames and INVENTORY in metafunc.config.stash:
        nodes = [OnNode(n.name) for n in metafunc.config.stash[INVENTORY].nodes if n.rank != 0]
        metafunc.parametrize("follower", nodes, ids=[str(n) for n in nodes])


@pytest.mark.hints("node-rank-repeated")
def test_node_rank_unique(cluster, inventory, deployment, evidence):
    """Each node starts with its own --node-rank.

    Every node starts vLLM with its own --node-rank: two nodes with one rank are named together."""
    cluster.gather()
    plans = {n.name: cluster.plan(n.name) for n in inventory.nodes}
    if any(p.role.startswith("ray") or p.vllm.value("--distributed-executor-backend") == "ray" for p in plans.values()):
        pytest.skip("the Ray executor: Ray places the ranks, no node gives --node-rank")
    ranks = {n: p.vllm.value("--node-rank") or ("0" if p.rank == 0 else None) for n, p in plans.items()}
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


@pytest.mark.hints("master-unreachable")
def test_master_reachable_on_control_plane(follower, cluster, inventory, evidence):
    """Each follower reaches the master over the control plane.

    Each follower reaches the master address (rank 0 on the control plane) out of its control-plane netdev (where its
    ranks' sockets and Gloo go): full frames, don't fragment, from its own snapshot, one ping each. A control-plane
    netdev that is absent or DOWN fails as such (ping sends nothing out of it)."""
    node, master, rank0 = follower.node, inventory.master_address, inventory.api_node.name
    netdev = inventory.control_netdev(node)
    if netdev is None or master is None:
        pytest.skip("the inventory gives no control plane with rank 0's address ([control] netdev and addresses)")
    snap = cluster.snapshot(node)
    dev = snap.fact(probes.IP_ADDR).get(netdev)
    if dev is None or not dev.admin_up:  # ping sends nothing out of a netdev that is absent or DOWN
        evidence.expect(
            False,
            what=f"the master address {master} ({rank0}) out of {netdev}",
            expected=f"{netdev} up on {node}",
            found=f"{netdev} {'absent' if dev is None else 'DOWN'} on {node}",
            context={"peer_ip": master},
        )
    (read,) = probes.master_pings(inventory, inventory.node(node))
    result = snap.fact(read)
    gone = cluster.unreachable([rank0])
    evidence.expect(
        result.all_answered,
        what=f"ping the master address {master} ({rank0}) out of {netdev} (full frames, don't fragment)",
        expected=f"{result.transmitted} of {result.transmitted} answered",
        found=f"{result.received} of {result.transmitted} answered, {result.loss_pct:g}% loss",
        detail="; ".join([*result.messages, *([follows_from(gone)] if gone else [])]),
        hints=("node-unreachable",) if gone else (),
        context={
            "peer_ip": master,
            **({"ping_size": str(result.size)} if result.size is not None else {}),
            **({"node": gone[0]} if gone else {}),  # node-unreachable's commands: for rank 0, which is off
        },
    )


@pytest.mark.hints("tp-heads-indivisible")
def test_tp_splits_the_heads(cluster, inventory, deployment, evidence):
    """The TP size splits the model's attention and KV heads.

    The TP size rank 0 starts with (`--tensor-parallel-size`, 1 when not given) splits the model's heads, read from
    its config.json in rank 0's HF cache: the attention heads divide by TP; the KV heads divide by TP, or TP by them
    (the KV heads replicated). The same weights and command everywhere are checks of their own."""
    rank0 = inventory.api_node
    snap = cluster.snapshot(rank0.name)
    dims = snap.fact(probes.HF_CONFIG)
    tp = cluster.plan(rank0.name).vllm.value("--tensor-parallel-size") or "1"
    if not tp.isdigit() or int(tp) < 1:
        pytest.skip(f"--tensor-parallel-size {tp} is not a whole number (the compose lint's topology rule says so)")
    problems = tp_split_problems(dims, int(tp))
    model = inventory.service.model if inventory.service else "the model"
    evidence.expect(
        not problems,
        what=f"{model}'s heads over --tensor-parallel-size {tp} (config.json on {rank0.name})",
        expected=f"TP {tp} divides the attention heads, and the KV heads divide by TP or TP by them",
        found="; ".join(problems) or f"{dims.attention_heads} attention heads, {dims.kv_heads} KV heads",
    )


# what every rank's `vllm serve` must say alike: the world's shape and what it loads (vLLM's ParallelConfig and
# ModelConfig on each rank build the same engine; a rank with another size, model or context never joins or
# loads other shapes)
AGREE = (  # (the TP size and node count are each node's topology rule's, the master address its own check's)
    "--pipeline-parallel-size",
    "--data-parallel-size",
    "--master-port",
    "--distributed-executor-backend",
    "--max-model-len",
    "--dtype",
    "--quantization",
    "--kv-cache-dtype",
)


@pytest.mark.hints("ranks-disagree")
def test_ranks_agree(cluster, inventory, deployment, evidence):
    """Every rank starts vLLM with the same model and parallel sizes.

    The values every rank's `vllm serve` must give alike (the model and its context length, dtype and
    quantization, the parallel sizes, the master address and port, the executor): compared across the
    nodes that run `vllm serve`, the odd ones named (a Ray worker gets the head's)."""
    cluster.gather()
    plans = {n.name: cluster.plan(n.name) for n in inventory.nodes}
    serving = {n: p for n, p in plans.items() if p.started.vllm is not None}
    if len(serving) < 2:
        pytest.skip("fewer than two nodes run `vllm serve` (the Ray executor's workers get the head's)")
    rank0 = inventory.api_node.name
    found_all = []
    for option in ("model", *AGREE):
        values = {}
        for n, p in serving.items():
            try:
                value = p.vllm.model_name if option == "model" else p.vllm.value(option)
                values[n] = "not given" if value is None else value
            except DecidedAtStart:
                values[n] = "(decided at start)"
        if len(set(values.values())) > 1 and "(decided at start)" not in values.values():
            odd = odd_ones_out(values, [rank0])
            evidence.expect(
                False,
                what=f"{option} across the ranks",
                expected="the same on every rank",
                found=shown(values, odd),
                context={"node": odd[0]},
            )
        if set(values.values()) != {"not given"}:
            found_all.append(f"{option} {next(iter(values.values()))}")
    evidence.expect(
        True, what="the ranks' model and parallel sizes", expected="the same on every rank", found="; ".join(found_all)
    )


@pytest.mark.hints("deployment-drift")
def test_running_container_is_the_files_plan(node, cluster, inventory, deployment, evidence):
    """The running container runs what the deployment's files say.

    Where vLLM runs, its container as Docker holds it (docker inspect) and the vLLM process's own command
    line and environment (/proc) against the rank's plan from the files (gb10check/deployment/launch/drift.py): the
    image, vLLM's options, the environment the files give, the container's network, IPC, shared memory,
    privilege, devices and memlock. The launch rules judge the files: the next start; this says whether
    that is what runs now."""
    snap = node.snapshot()
    c = container(snap)
    if c is None or not c.running:
        pytest.skip(f"nothing runs on {node.name}: the files are what its next start runs")
    files = cluster.plan(node.name)
    processes = snap.fact(probes.CONTAINER_PROCESSES) if snap.raw(probes.CONTAINER_PROCESSES).ok else None
    running = running_plan(c, processes, node=node.name, rank=inventory.node(node.name).rank)
    image = snap.fact(probes.IMAGE)
    image_env = frozenset(e.partition("=")[0] for e in image.env) if image is not None else frozenset()
    differ = drift(files, running, image_env)
    evidence.expect(
        not differ,
        what=f"the running container {c.name} against the deployment's files",
        expected="the image, vLLM's command, environment and container settings the files give",
        found="; ".join(differ) if differ else "the same",
        detail="what runs now is the running side; preflight's launch checks judged the files (the next start)",
    )
