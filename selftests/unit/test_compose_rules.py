"""The compose lint rules (gb10check/compose_rules.py) on the sim's compose file and edits of it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gb10check.compose_fallback import load_service
from gb10check.compose_rules import RULES, Context, NotApplicable
from gb10check.fit import GIB
from gb10check.inventory import parse_inventory
from gb10check.vllm_command import rank_run

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = (ROOT / "sim" / "deploy" / "compose.yml").read_text()
EXAMPLE = (ROOT / "fixtures" / "cluster.example.toml").read_text()
ADDRESS = {0: "169.254.94.252", 1: "169.254.159.206"}
MEM_TOTAL = int(119.17 * GIB)  # a GB10's MemTotal
RING_ONLY = ("ring-nccl", "ray-on-ring")  # the pair skips them (the last test below)


def _context(rank: int, compose: str = COMPOSE, inventory_text: str = EXAMPLE) -> Context:
    env = {"MODEL_ID": "Qwen/Qwen3.8-Flash-Next-FP8", "NODE_RANK": str(rank), "VLLM_HOST_IP": ADDRESS[rank]}
    svc = load_service(compose, env, container="vllm-qwen38", what="c", compose_dir="/d", env_files={"/d/.env": env})
    inventory = parse_inventory(inventory_text, "example")
    return Context(svc, rank_run(svc, rank, "c"), rank, inventory, MEM_TOTAL)


def _rule(rule_id: str):
    return next(r for r in RULES if r.id == rule_id)


@pytest.mark.parametrize("rank", [0, 1])
def test_the_sims_compose_passes_every_rule(rank):
    for rule in RULES:
        if (rule.rank0_only and rank != 0) or rule.id in RING_ONLY:
            continue
        ok, expected, found = rule.check(_context(rank))
        assert ok, f"{rule.id}: expected {expected}, found {found}"


def test_every_rule_has_its_own_id_and_hint():
    assert len({r.id for r in RULES}) == len(RULES)
    assert len({r.hint for r in RULES}) == len(RULES)


@pytest.mark.parametrize(
    ("rule_id", "old", "new", "found"),
    [
        ("ib-hca", "NCCL_IB_HCA==", "NCCL_IB_HCA=", "NCCL_IB_HCA=rocep1s0f0,roceP2p1s0f0"),
        ("cudagraph-mode", "-cc.cudagraph_mode", "-cc.cudagraph-mode", "-cc.cudagraph-mode"),
        ("socket-family", "NCCL_SOCKET_FAMILY=AF_INET", "NCCL_SOCKET_FAMILY=AF_INET6", "AF_INET6"),
        ("memory-limit", "105G", "64G", "64.00 GiB"),
    ],
)
def test_an_edit_breaks_its_rule_and_says_what_was_found(rule_id, old, new, found):
    assert old in COMPOSE, f"the sim's compose changed: {old!r} is gone"
    ok, _expected, said = _rule(rule_id).check(_context(1, COMPOSE.replace(old, new)))
    assert not ok and found in said


def test_follower_without_headless_fails_on_rank_1_only():
    compose = re.sub(r"\s--headless", "", COMPOSE)
    assert compose != COMPOSE
    assert _rule("headless").check(_context(0, compose))[0]
    assert not _rule("headless").check(_context(1, compose))[0]


def test_rules_that_do_not_apply_skip_instead_of_passing():
    one_link = (
        EXAMPLE[: EXAMPLE.index("[[rails]]", EXAMPLE.index("[[rails]]") + 1)] + EXAMPLE[EXAMPLE.index("[service]") :]
    )
    with pytest.raises(NotApplicable, match="one"):
        _rule("ib-merge-nics").check(_context(0, inventory_text=one_link))
    no_service = EXAMPLE[: EXAMPLE.index("[service]")] + EXAMPLE[EXAMPLE.index("[deployment]") :]
    with pytest.raises(NotApplicable, match="no \\[service\\]"):
        _rule("served-model-name").check(_context(0, inventory_text=no_service))


def test_an_exec_form_command_is_not_taken_for_a_shell_script():
    """`-cc.cudagraph_mode=...` has a `c` after its dash, and is vLLM's option, not `sh -c`."""
    compose = """services:
  vllm:
    image: vllm/vllm-openai:qwen38-flash-next
    container_name: vllm-qwen38
    entrypoint: ["vllm", "serve"]
    command: ["Qwen/Qwen3.8-Flash-Next-FP8", "-cc.cudagraph_mode=FULL_DECODE_ONLY", "--max-num-seqs", "8"]
"""
    svc = load_service(compose, {}, container="vllm-qwen38", what="c")
    run = rank_run(svc, 0, "c")
    assert run.model == "Qwen/Qwen3.8-Flash-Next-FP8"
    assert run.value("-cc.cudagraph_mode") == "FULL_DECODE_ONLY" and run.value("--max-num-seqs") == "8"


@pytest.mark.parametrize("shell", [["/bin/bash", "-lc"], ["sh", "-c"], ["bash", "-l", "-c"], ["/bin/sh", "-ec"]])
def test_a_shell_script_command_is_read_after_the_shells_own_options(shell):
    compose = f"""services:
  vllm:
    image: x
    container_name: vllm-qwen38
    entrypoint: {shell!r}
    command: ["vllm serve org/m --max-num-seqs 4"]
""".replace("'", '"')
    run = rank_run(load_service(compose, {}, container="vllm-qwen38", what="c"), 0, "c")
    assert (run.model, run.value("--max-num-seqs")) == ("org/m", "4")


@pytest.mark.parametrize("rule_id", ["socket-ifname", "ib-hca", "ib-merge-nics"])
def test_fabric_rules_do_not_apply_to_a_node_alone(rule_id):
    """One node, no fabric (topology single): nothing to compare the socket interfaces or RDMA devices with."""
    alone = re.sub(r"\[\[rails\]\].*?(?=\n\[(?!\[rails)|\Z)", "", EXAMPLE, flags=re.DOTALL)
    alone = re.sub(r"\[control\]\n[^\[]*", "", alone).replace('topology = "pair"', 'topology = "single"')
    alone = alone[: alone.index("[[nodes]]", alone.index("[[nodes]]") + 1)] + alone[alone.index("[service]") :]
    assert "[[rails]]" not in alone and "[control]" not in alone
    with pytest.raises(NotApplicable, match=r"rails|control plane"):
        _rule(rule_id).check(_context(0, inventory_text=alone))


@pytest.mark.parametrize(
    ("grant", "said"), [("privileged: true", "privileged: true"), ("cap_add: [ALL]", "cap_add: [ALL]")]
)
def test_privileged_or_all_capabilities_count_as_what_they_give(grant, said):
    """Compose gives a privileged container every device and capability; cap_add: [ALL] every capability."""
    stripped = COMPOSE.replace("    devices:\n      - /dev/infiniband:/dev/infiniband\n", "")
    stripped = stripped.replace("    cap_add:\n      - IPC_LOCK\n", f"    {grant}\n")
    assert stripped.count(grant) == 1 and "IPC_LOCK" not in stripped
    ok, _, found = _rule("ipc-lock").check(_context(0, stripped))
    assert ok and said in found
    ok, _, found = _rule("rdma-device").check(_context(0, stripped))
    assert ok == (grant == "privileged: true"), found  # cap_add: [ALL] adds no device


def test_variables_the_script_exports_are_what_the_rules_judge():
    script_export = COMPOSE.replace("      - NCCL_IB_GID_INDEX=3\n", "").replace(
        '        if [ "$${NODE_RANK}" = "0" ]; then',
        '        export NCCL_IB_GID_INDEX=3\n        if [ "$${NODE_RANK}" = "0" ]; then',
    )
    assert "export NCCL_IB_GID_INDEX=3" in script_export
    assert _rule("ib-gid-index").check(_context(0, script_export))[0]
    wrong = script_export.replace("export NCCL_IB_GID_INDEX=3", "export NCCL_IB_GID_INDEX=1")
    ok, _, found = _rule("ib-gid-index").check(_context(0, wrong))
    assert not ok and "NCCL_IB_GID_INDEX=1" in found


def test_the_gid_index_rule_takes_the_smallest_index_as_a_number():
    """Links at indexes 3 and 10: NCCL_IB_GID_INDEX=3 is the smallest (as strings "10" sorts before "3")."""
    second = EXAMPLE.index("gid_index = 3", EXAMPLE.index("gid_index = 3") + 1)
    inventory_text = EXAMPLE[:second] + "gid_index = 10" + EXAMPLE[second + len("gid_index = 3") :]
    ok, expected, found = _rule("ib-gid-index").check(_context(0, inventory_text=inventory_text))
    assert ok and "NCCL_IB_GID_INDEX=3" in expected, (expected, found)


# -- the launch plan of a ring (issue 19) ---------------------------------------------------------------
def _ring(size: int, edits: tuple[tuple[str, str], ...] = (), rank: int = 1) -> Context:
    """Rank `rank` of the sim's healthy ring of `size` nodes: its inventory and its rendered compose."""
    from sim import deploy, inventory_file, layout
    from sim.scenario import load_scenario

    model = load_scenario("healthy-ring4" if size == 4 else "healthy-ring3").model
    assert len(model.nodes) == size
    text = inventory_file.dumps(inventory_file.written(model, Path("/run/gb10sim/0")))
    cluster = deploy.ComposeCluster("ring", size, "192.168.40.30", "enP7s7", layout.DEVICE_ORDER)
    compose = deploy.render_compose(list(edits), cluster)
    env = {
        "MODEL_ID": "Qwen/Qwen3.8-Flash-Next-FP8",
        "NODE_RANK": str(rank),
        "VLLM_HOST_IP": f"192.168.40.{30 + 2 * rank}",
    }
    svc = load_service(compose, env, container="vllm-qwen38", what="c", compose_dir="/d", env_files={"/d/.env": env})
    return Context(svc, rank_run(svc, rank, "c"), rank, parse_inventory(text, "cluster.toml"), MEM_TOTAL)


@pytest.mark.parametrize("size", [3, 4])
def test_the_sims_ring_compose_passes_every_rule(size):
    for rank in (0, size - 1):
        ctx = _ring(size, rank=rank)
        for rule in RULES:
            if rule.rank0_only and rank != 0:
                continue
            try:
                ok, expected, found = rule.check(ctx)
            except NotApplicable:
                continue
            assert ok, f"{rule.id}: expected {expected}, found {found}"


@pytest.mark.parametrize(
    ("size", "line", "found"),
    [
        (3, "      - NCCL_IB_SUBNET_AWARE_ROUTING=1\n", "NCCL_IB_SUBNET_AWARE_ROUTING=not set"),
        (4, "      - NCCL_IB_SUBNET_AWARE_ROUTING=1\n", "NCCL_IB_SUBNET_AWARE_ROUTING=not set"),
        (3, "      - NCCL_NET_PLUGIN=none\n", "NCCL_NET_PLUGIN=not set"),
        (4, "      - NCCL_ALGO=Ring\n", "NCCL_ALGO=not set"),
    ],
)
def test_a_ring_without_one_of_its_nccl_settings_fails_naming_it(size, line, found):
    ok, expected, said = _rule("ring-nccl").check(_ring(size, ((line, ""),)))
    assert not ok and found in said, said
    assert ("NCCL_ALGO=Ring" in expected) == (size >= 4) and f"a ring of {size}" in expected


def test_the_ring_algorithm_is_not_asked_of_a_three_ring_and_case_does_not_matter():
    assert "NCCL_ALGO" not in _rule("ring-nccl").check(_ring(3))[1]
    assert _rule("ring-nccl").check(_ring(4, (("NCCL_ALGO=Ring", "NCCL_ALGO=ring"),)))[0]
    ok, _, found = _rule("ring-nccl").check(_ring(4, (("NCCL_ALGO=Ring", "NCCL_ALGO=Tree"),)))
    assert not ok and "NCCL_ALGO=Tree" in found


def test_ray_on_a_ring_is_flagged_and_the_ring_rules_skip_a_pair():
    ok, expected, found = _rule("ray-on-ring").check(_ring(3, (("backend mp", "backend ray"),)))
    assert not ok and found == "--distributed-executor-backend ray" and "mp" in expected
    for rule_id in RING_ONLY:
        with pytest.raises(NotApplicable, match="pair"):
            _rule(rule_id).check(_context(0))


@pytest.mark.parametrize(
    ("new", "ok", "said"),
    [
        ("--tensor-parallel-size 2 --nnodes 2", True, "--pipeline-parallel-size 1 (default) x"),
        ("--tensor-parallel-size 2 --pipeline-parallel-size 2 --nnodes 2", False, "= 4"),
        ("--tensor-parallel-size 1 --pipeline-parallel-size 2 --nnodes 2", True, "--pipeline-parallel-size 2"),
        ("--tensor-parallel-size 2 --data-parallel-size 2 --nnodes 2", False, "--data-parallel-size 2 = 4"),
        ("--tensor-parallel-size two --nnodes 2", False, "not a whole number"),
    ],
)
def test_tp_times_pp_times_dp_is_the_gpus(new, ok, said):
    compose = COMPOSE.replace("--tensor-parallel-size 2 --nnodes 2", new)
    result, expected, found = _rule("parallel-size").check(_context(1, compose))
    assert result == ok and said in found, found
    assert "= 2 (the GPUs: 2 nodes x 1)" in expected


def test_a_four_ring_at_tp_4_is_four_gpus_and_pp_2_on_top_is_not():
    assert _rule("parallel-size").check(_ring(4))[0]
    edit = ("--tensor-parallel-size 4", "--tensor-parallel-size 4 --pipeline-parallel-size 2")
    ok, expected, found = _rule("parallel-size").check(_ring(4, (edit,)))
    assert not ok and found.endswith("= 8") and "= 4 (the GPUs: 4 nodes x 1)" in expected


@pytest.mark.parametrize(
    ("line", "ok", "said"),
    [
        ("", True, "unset: NCCL picks"),  # the line removed
        ("      - NCCL_IB_GID_INDEX=\n", True, "'': NCCL picks"),  # empty: NCCL ignores it (src/misc/param.cc)
        ("      - NCCL_IB_GID_INDEX=-1\n", True, "'-1': NCCL picks"),  # NCCL 2.21+'s own default
        ("      - NCCL_IB_GID_INDEX=0x3\n", True, "NCCL_IB_GID_INDEX=0x3"),  # strtoll's base 0: three
        ("      - NCCL_IB_GID_INDEX=1\n", False, "NCCL_IB_GID_INDEX=1"),  # RoCE v1
    ],
    ids=["unset", "empty", "minus-one", "hex", "v1"],
)
def test_the_gid_index_rule_lets_nccl_pick_when_the_index_is_unset(line, ok, said):
    """Unset or empty, NCCL 2.21 and later pick each device's first RoCE v2 IPv4 GID (the network stage's
    test_gid_index judges where that lands on the node's real table); a set index must be the rails'."""
    compose = COMPOSE.replace("      - NCCL_IB_GID_INDEX=3\n", line)
    passed, expected, found = _rule("ib-gid-index").check(_context(0, compose))
    assert passed == ok and said in found, (expected, found)
    assert "or unset" in expected
