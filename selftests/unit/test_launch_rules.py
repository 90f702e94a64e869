"""The launch plan's rules (gb10check/deployment/launch/rules.py) on the sim's compose file and edits of it: each
judged by what its source says the value does on the node, four outcomes kept apart."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gb10check.deployment.compose_fallback import load_service
from gb10check.deployment.launch.from_compose import compose_plan
from gb10check.deployment.launch.rules import RULES, Context, NotApplicable
from gb10check.inventory import parse_inventory
from gb10check.judging.fit import GIB
from gb10check.reading.parsers.docker import Image
from gb10check.reading.parsers.iproute import Netdev
from gb10check.reading.parsers.rdma_sysfs import RdmaPortState

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = (ROOT / "sim" / "deploy" / "compose.yml").read_text()
EXAMPLE = (ROOT / "fixtures" / "cluster.example.toml").read_text()
ADDRESS = {0: "169.254.94.252", 1: "169.254.159.206"}
MEM_TOTAL = int(119.17 * GIB)  # a GB10's MemTotal
RING_ONLY = ("ring-nccl", "ray-on-ring")  # the pair skips them (the last test below)
IMAGE = Image("sha256:1", ("x",), (), "arm64", ("PATH=/usr/bin",), ("vllm", "serve"), None)


def _port(device: str, netdev: str, active: bool) -> RdmaPortState:
    state = "4: ACTIVE" if active else "1: DOWN"
    return RdmaPortState(
        device, 1, (netdev,), state, "5: LinkUp" if active else "3: Disabled", "Ethernet", "200 Gb/sec", ()
    )


# a GB10's four RDMA devices: port 0's two halves cabled (ACTIVE), port 1's not
PORTS = {
    "rocep1s0f0": _port("rocep1s0f0", "enp1s0f0np0", True),
    "rocep1s0f1": _port("rocep1s0f1", "enp1s0f1np1", False),
    "roceP2p1s0f0": _port("roceP2p1s0f0", "enP2p1s0f0np0", True),
    "roceP2p1s0f1": _port("roceP2p1s0f1", "enP2p1s0f1np1", False),
}


def _netdevs(rank: int) -> dict[str, Netdev]:
    ip = ADDRESS[rank]
    return {
        "enp1s0f0np0": Netdev("enp1s0f0np0", True, True, 1500, "UP", (f"{ip}/16",)),
        "enP2p1s0f0np0": Netdev("enP2p1s0f0np0", True, True, 1500, "UP", (f"192.168.101.{10 + rank}/24",)),
        "enP7s7": Netdev("enP7s7", True, True, 1500, "UP", (f"192.168.40.{30 + 2 * rank}/24",)),
    }


def _context(
    rank: int,
    compose: str = COMPOSE,
    inventory_text: str = EXAMPLE,
    *,
    offline: bool = False,
    hostname=("192.168.40.30",),
) -> Context:
    env = {"MODEL_ID": "Qwen/Qwen3.8-Flash-Next-FP8", "NODE_RANK": str(rank), "VLLM_HOST_IP": ADDRESS[rank]}
    svc = load_service(compose, env, container="vllm-qwen38", what="c", compose_dir="/d", env_files={"/d/.env": env})
    inventory = parse_inventory(inventory_text, "example")
    node = inventory.by_rank(rank).name
    plan = compose_plan(
        svc, node=node, rank=rank, compose_file="/d/c.yml", compose_text=compose, env_files={},
        image=IMAGE, image_ref="x", host_file=lambda _p: None,
    )  # fmt: skip
    return Context(
        plan,
        inventory,
        MEM_TOTAL,
        None if offline else PORTS,
        None if offline else _netdevs(rank),
        None if offline else hostname,
    )


def _rule(rule_id: str):
    return next(r for r in RULES if r.id == rule_id)


def _judge(rule_id: str, rank: int = 1, old: str | None = None, new: str = "", **kw):
    compose = COMPOSE
    if old is not None:
        assert old in COMPOSE, f"the sim's compose changed: {old!r} is gone"
        compose = COMPOSE.replace(old, new)
    return _rule(rule_id).check(_context(rank, compose, **kw))


@pytest.mark.parametrize("offline", [False, True])
@pytest.mark.parametrize("rank", [0, 1])
def test_the_sims_compose_fails_no_rule_and_costs_nothing(rank, offline):
    for rule in RULES:
        if (rule.rank0_only and rank != 0) or rule.id in RING_ONLY:
            continue
        try:
            verdict = rule.check(_context(rank, offline=offline))
        except NotApplicable:
            assert offline and rule.id == "gloo-hostname"
            continue
        assert verdict.outcome in ("pass", "advice"), f"{rule.id}: {verdict}"


def test_every_rule_has_its_own_id_hint_and_source():
    assert len({r.id for r in RULES}) == len(RULES)
    assert len({r.hint for r in RULES}) == len(RULES)
    assert all(r.source for r in RULES)


@pytest.mark.parametrize(
    ("rule_id", "old", "new", "outcome", "found"),
    [
        # NCCL's HCA filter is a prefix list over the node's devices: without `=` the same two are chosen
        ("ib-hca", "NCCL_IB_HCA==", "NCCL_IB_HCA=", "pass", "NCCL uses roceP2p1s0f0, rocep1s0f0"),
        ("ib-hca", "      - NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0\n", "", "pass", "unset (every device)"),
        ("ib-hca", "NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0", "NCCL_IB_HCA==rocep1s0f0", "advisory", "not roceP2p1s0f0"),
        ("ib-hca", "NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0", "NCCL_IB_HCA=mlx5_0", "fail", "no device"),
        ("ib-hca", "NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0", "NCCL_IB_HCA=^roce", "fail", "no device"),
        ("ib-enabled", "NCCL_IB_DISABLE=0", "NCCL_IB_DISABLE=1", "fail", "NCCL_IB_DISABLE=1"),
        ("ib-enabled", "      - NCCL_IB_DISABLE=0\n", "", "pass", "NCCL_IB_DISABLE=not set"),
        ("cudagraph-mode", "-cc.cudagraph_mode", "-cc.cudagraph-mode", "fail", "-cc.cudagraph-mode"),
        ("socket-family", "NCCL_SOCKET_FAMILY=AF_INET", "NCCL_SOCKET_FAMILY=AF_INET6", "fail", "AF_INET6"),
        ("socket-family", "      - NCCL_SOCKET_FAMILY=AF_INET\n", "", "pass", "not set"),
        ("memory-limit", "105G", "64G", "fail", "64.00 GiB"),
        ("memory-limit", "105G", "98G", "advisory", "98.00 GiB"),
        ("memory-limit", "    mem_limit: 105G\n", "", "advice", "no memory limit"),
        # RDMA pins memory with either CAP_IPC_LOCK or an unlimited memlock (the kernel's ib_umem_get)
        ("memory-pinning", "      - IPC_LOCK", "      - SYS_NICE", "pass", "memlock unlimited"),
        ("memory-pinning", "      memlock: -1\n", "", "pass", "cap_add: IPC_LOCK"),
        ("restart-policy", 'restart: "no"', "restart: unless-stopped", "advice", "unless-stopped"),
        ("shm", "    ipc: host\n", "", "fail", "64 MiB (Docker's default)"),
        ("shm", "    ipc: host\n", "    shm_size: 16gb\n", "pass", ""),
        ("host-network", "    network_mode: host\n", "", "fail", "Docker puts the container on its bridge"),
        (
            "socket-ifname",
            "      - NCCL_SOCKET_IFNAME=enp1s0f0np0\n      - GLOO_SOCKET_IFNAME=enp1s0f0np0\n",
            "",
            "advice",
            "NCCL_SOCKET_IFNAME unset",
        ),
        ("socket-ifname", "NCCL_SOCKET_IFNAME=enp1s0f0np0", "NCCL_SOCKET_IFNAME=eth", "fail", "selects no interface"),
        ("socket-ifname", "NCCL_SOCKET_IFNAME=enp1s0f0np0", "NCCL_SOCKET_IFNAME=enp1", "pass", "enp1s0f0np0"),
        ("host-ip", "", "", "pass", "VLLM_HOST_IP=169.254.159.206"),
        ("distributed-timeout", "--distributed-timeout-seconds 3600", "", "advisory", "600 s"),
    ],
)
def test_an_edit_is_judged_by_what_it_does(rule_id, old, new, outcome, found):
    verdict = _judge(rule_id, 1, old or None, new)
    assert verdict.outcome == outcome, verdict
    assert found in verdict.found
    if outcome != "pass":
        assert verdict.why, "a verdict that is not a pass says what breaks, what it costs or why"


def test_without_either_way_to_pin_memory_rdma_fails_with_the_kernels_reason():
    compose = COMPOSE.replace("      - IPC_LOCK", "      - SYS_NICE").replace("      memlock: -1\n", "")
    verdict = _rule("memory-pinning").check(_context(1, compose))
    assert verdict.outcome == "fail" and "ib_umem_get" in verdict.why


def test_follower_without_headless_fails_on_rank_1_only():
    compose = re.sub(r"\s--headless", "", COMPOSE)
    assert compose != COMPOSE
    assert _rule("headless").check(_context(0, compose)).ok
    assert _rule("headless").check(_context(1, compose)).outcome == "fail"


def test_gloo_binds_what_the_hostname_resolves_to():
    compose = COMPOSE.replace("      - GLOO_SOCKET_IFNAME=enp1s0f0np0\n", "")
    assert _rule("gloo-hostname").check(_context(1, compose)).ok
    loopback = _rule("gloo-hostname").check(_context(1, compose, hostname=("127.0.1.1",)))
    assert loopback.outcome == "fail" and "127.0.1.1" in loopback.found


def test_the_wrong_host_ip_fails_and_says_where_it_is_set():
    ctx = _context(1)
    assert ctx.plan.env("VLLM_HOST_IP") == ADDRESS[1]
    env = {"MODEL_ID": "Qwen/Qwen3.8-Flash-Next-FP8", "NODE_RANK": "1", "VLLM_HOST_IP": ADDRESS[0]}
    svc = load_service(COMPOSE, env, container="vllm-qwen38", what="c", compose_dir="/d", env_files={"/d/.env": env})
    plan = compose_plan(
        svc, node=ctx.node, rank=1, compose_file="/d/c.yml", compose_text=COMPOSE,
        env_files={"/d/.env": "VLLM_HOST_IP=x\n"}, image=IMAGE, image_ref="x", host_file=lambda _p: None,
    )  # fmt: skip
    verdict = _rule("host-ip").check(Context(plan, ctx.inventory, MEM_TOTAL, PORTS, _netdevs(1)))
    assert verdict.outcome == "fail" and str(verdict.where) == "/d/.env:1 (env_file)"


def test_rules_that_do_not_apply_skip_instead_of_passing():
    one_link = (
        EXAMPLE[: EXAMPLE.index("[[rails]]", EXAMPLE.index("[[rails]]") + 1)] + EXAMPLE[EXAMPLE.index("[service]") :]
    )
    with pytest.raises(NotApplicable, match="one"):
        _rule("ib-merge-nics").check(_context(0, inventory_text=one_link))
    no_service = EXAMPLE[: EXAMPLE.index("[service]")] + EXAMPLE[EXAMPLE.index("[deployment]") :]
    with pytest.raises(NotApplicable, match="no \\[service\\]"):
        _rule("served-model-name").check(_context(0, inventory_text=no_service))


@pytest.mark.parametrize("rule_id", ["socket-ifname", "ib-hca", "ib-merge-nics"])
def test_fabric_rules_do_not_apply_to_a_node_alone(rule_id):
    """One node, no fabric (topology single): nothing to compare the socket interfaces or RDMA devices with."""
    alone = re.sub(r"\[\[rails\]\].*?(?=\n\[(?!\[rails)|\Z)", "", EXAMPLE, flags=re.DOTALL)
    alone = re.sub(r"\[control\]\n[^\[]*", "", alone).replace('topology = "pair"', 'topology = "single"')
    alone = alone[: alone.index("[[nodes]]", alone.index("[[nodes]]") + 1)] + alone[alone.index("[service]") :]
    assert "[[rails]]" not in alone and "[control]" not in alone
    with pytest.raises(NotApplicable, match=r"rails|control plane"):
        _rule(rule_id).check(_context(0, inventory_text=alone))


def test_without_rdma_devices_nccl_runs_over_sockets_unless_the_deployment_pins_ib():
    """No /dev/infiniband: NCCL's IB transport finds no device and NCCL takes its socket transport, which
    works, slower (advisory, whatever NCCL_IB_HCA or NCCL_IB_DISABLE=0 say), and pins no memory (memory-pinning
    does not apply); a deployment that pins NCCL to IB (NCCL_NET=IB) stops at start, and fails."""
    no_device = COMPOSE.replace("    devices:\n      - /dev/infiniband:/dev/infiniband\n", "")
    assert no_device != COMPOSE
    verdict = _rule("rdma-device").check(_context(1, no_device))
    assert verdict.outcome == "advisory" and "order of magnitude slower" in verdict.why
    pinned = no_device.replace("      - NCCL_IB_DISABLE=0\n", "      - NCCL_IB_DISABLE=0\n      - NCCL_NET=IB\n")
    assert pinned != no_device
    stops = _rule("rdma-device").check(_context(1, pinned))
    assert stops.outcome == "fail" and "NCCL_NET=IB" in stops.found
    with pytest.raises(NotApplicable, match="no RDMA device"):
        _rule("memory-pinning").check(_context(1, no_device.replace("      - IPC_LOCK", "      - SYS_NICE")))
