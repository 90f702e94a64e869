"""The simulated cluster of 2 to 8 nodes: a scenario's topology and size, its nodes by rank, a fault
over another base (NAME@BASE), and everything a node gets derived from the node list (the layout,
the inventory the sim writes, the compose, vLLM's log, the stubs' outputs)."""

from __future__ import annotations

import ipaddress
import re
import tomllib
from pathlib import Path

import pytest

from gb10check import inventory as inv
from gb10check.errors import SimError
from gb10check.reading import probes
from gb10check.reading.parsers.vllm_log import (
    expected_milestones,
    milestones,
    nccl_gdr,
    nccl_transport,
    parse_docker_log,
)
from gb10check.reading.snapshot import Where
from selftests.e2e.test_read_only import READS
from sim import deploy, inventory_file, layout, vllm_logs
from sim.scenario import builtin_names, load_scenario
from sim.stubs import nccl_tests, perftest

RUN = Path("/run/gb10sim/0")


def _scenario(tmp_path: Path, body: str, name: str = "mine.toml") -> Path:
    path = tmp_path / name
    path.write_text(body)
    return path


# -- topology and size -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "topology", "size"),
    [("healthy", "pair", 2), ("healthy-ring3", "ring", 3), ("healthy-ring4", "ring", 4),
     ("healthy-switch4", "switch", 4), ("healthy-switch8", "switch", 8)],
)  # fmt: skip
def test_the_healthy_scenarios_of_every_shape(name, topology, size):
    scenario = load_scenario(name)
    assert (scenario.topology, len(scenario.nodes)) == (topology, size)
    assert list(scenario.nodes) == [layout.node_name(k) for k in range(size)]
    assert [n.lan() for n in scenario.nodes.values()] == [f"192.168.40.{30 + 2 * k}/24" for k in range(size)]
    assert scenario.expect is not None and scenario.expect.fails == {}


def test_a_switch_is_every_node_on_both_halves_of_port_0():
    model = load_scenario("healthy-switch8").model
    rails = model.rails
    assert [r.name for r in rails] == ["enp1s0f0np0", "enP2p1s0f0np0"]
    assert all(model.switched(r) for r in rails)
    for half, rail in enumerate(rails):
        assert [(e.node, e.address) for e in rail.members] == [
            (layout.node_name(k), f"192.168.{100 + half}.{10 + k}/24") for k in range(8)
        ]
    assert model.unused_ports == {"rocep1s0f1": "enp1s0f1np1", "roceP2p1s0f1": "enP2p1s0f1np1"}


def test_a_ring_cables_port_0_of_each_node_to_port_1_of_the_next():
    model = load_scenario("healthy-ring4").model
    rails = {r.name: r for r in model.rails}
    assert list(rails) == ["c0a", "c0b", "c1a", "c1b", "c2a", "c2b", "c3a", "c3b"]
    assert not any(model.switched(r) for r in rails.values()) and model.unused_ports == {}
    last = rails["c3b"]  # the last cable closes the ring: rank 3's port 0 to rank 0's port 1
    assert [(e.node, e.netdev, e.rdma_device, e.address) for e in last.members] == [
        ("thinkstationpgx-36", "enP2p1s0f0np0", "roceP2p1s0f0", "10.20.7.4/24"),
        ("thinkstationpgx-30", "enP2p1s0f1np1", "roceP2p1s0f1", "10.20.7.1/24"),
    ]
    for name in model.nodes:  # every node: all four netdevs cabled, each on its own rail
        assert sorted(e.netdev for _, e in model.ends_of(name)) == sorted(n for p in layout.PORTS for n, _ in p)


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ('topology = "ring"\nsize = 2\n', "size = 2: a ring has 3 to 8 nodes"),
        ('topology = "switch"\nsize = 9\n', "size = 9: a switch has 2 to 8 nodes"),
        ('topology = "pair"\nsize = 3\n', "size = 3: a pair has 2 nodes"),
        ('topology = "ring"\n', 'topology = "ring" needs size = 3..8'),
        ('topology = "mesh"\nsize = 4\n', "topology = 'mesh': the sim builds 'pair', 'ring', 'switch'"),
        ("size = 4\n", "size = 4 needs a topology"),
        ('base = "healthy-switch4"\n[nodes.rank4]\nsudo = false\n', "nodes.rank4: no node has rank 4"),
        ('base = "healthy-ring3"\n[nodes.rank1.rdma.enp1s0f0np0]\nbw_to = { rank7 = 40 }\n',
         "nodes.rank1.rdma.enp1s0f0np0.bw_to.rank7: no node has rank 7"),
        ('base = "healthy-switch4"\n[nodes.thinkstationpgx-50]\nsudo = false\n',
         "nodes.thinkstationpgx-50 is not a node of this switch of 4"),
        ('base = "healthy-switch4"\n[nodes.rank1]\nsudo = false\n[nodes.thinkstationpgx-32]\nsudo = true\n',
         "nodes.thinkstationpgx-32 and nodes.thinkstationpgx-32 are the same node"),
        ('base = "healthy"\ntopology = "switch"\nsize = 4\n', "over a base that lists its own nodes and rails"),
        ('base = "healthy-switch4"\n[nodes.rank1]\nunplugged = ["enp1s0f1np1"]\n',
         "nodes.thinkstationpgx-32.unplugged names ['enp1s0f1np1'], which no rail of thinkstationpgx-32 has"),
        ('base = "healthy-switch4"\n[nodes.rank1.rdma.enp1s0f0np0]\nbw_to = { rank1 = 40 }\n',
         "are not thinkstationpgx-32's peers on enp1s0f0np0"),
    ],
)  # fmt: skip
def test_a_wrong_shape_or_rank_names_the_file_and_the_key(tmp_path, body, said):
    path = _scenario(tmp_path, body)
    with pytest.raises(SimError) as err:
        load_scenario(str(path))
    assert str(err.value).startswith(str(path)) and said in str(err.value), str(err.value)


# -- nodes by rank, faults over another base --------------------------------------------------------
def test_a_fault_by_rank_runs_at_any_size():
    """link-down names rank 1: over a switch of 8 or a ring of 3 it breaks that size's rank 1."""
    for ref, rail in (("link-down@healthy-switch8", "enP2p1s0f0np0"), ("link-down@healthy-ring3", "c1b")):
        scenario = load_scenario(ref)
        assert scenario.name == ref and scenario.expect is None  # the file's [expect] was written for the pair
        downs = {name: node.down for name, node in scenario.nodes.items() if node.down}
        assert downs == {"thinkstationpgx-32": ["enP2p1s0f0np0"]}
        end = next(
            e for r in scenario.model.rails if r.name == rail for e in r.members if e.node == "thinkstationpgx-32"
        )
        assert end.netdev == "enP2p1s0f0np0"
    assert load_scenario("link-down").topology == "pair"


def test_a_rebase_in_a_file_and_plain_names(tmp_path):
    path = _scenario(
        tmp_path,
        'description = "mine"\nbase = "link-down@healthy-switch4"\n'
        '[nodes.thinkstationpgx-36]\nunplugged = ["enp1s0f0np0"]\n[expect]\nfails = {}\n',
    )
    scenario = load_scenario(str(path))
    assert scenario.data["description"] == "mine" and scenario.expect is not None
    assert scenario.nodes["thinkstationpgx-32"].down == ["enP2p1s0f0np0"]
    assert scenario.nodes["thinkstationpgx-36"].unplugged == ["enp1s0f0np0"]
    assert scenario.placeholders() == {f"rank{k}": layout.node_name(k) for k in range(4)}


def test_rank_keys_resolve_against_the_base_before_merging(tmp_path):
    """A size set in the file itself counts: rank 7 exists in an eight-node switch made from a four-node one."""
    path = _scenario(
        tmp_path,
        'base = "healthy-switch4"\nsize = 8\n[nodes.rank7.rdma.enp1s0f0np0]\nbw_to = { rank2 = 40, rank0 = 50 }\n',
    )
    node = load_scenario(str(path)).nodes["thinkstationpgx-44"]
    assert node.rdma["enp1s0f0np0"].bw_to == {"thinkstationpgx-34": 40, "thinkstationpgx-30": 50}


# -- the inventory the sim writes ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["healthy", "healthy-ring3", "healthy-switch8"])
def test_the_written_inventory_is_the_topology(name):
    scenario = load_scenario(name)
    data = inventory_file.written(scenario.model, RUN)
    text = inventory_file.dumps(data)
    assert tomllib.loads(text) == data
    inventory = inv.parse_inventory(text, "cluster.toml")
    size = len(scenario.nodes)
    assert (inventory.topology, inventory.size, inventory.cluster.tensor_parallel_size) == (
        scenario.topology,
        size,
        size,
    )
    assert [r.name for r in inventory.rails] == [r.name for r in scenario.model.rails]
    if scenario.topology == "pair":  # the example's: the control plane on the first rail
        assert data["control"] == {"netdev": "enp1s0f0np0"} and inventory.master_address == "169.254.94.252"
        assert '[[rails]]\nnetdev = "enp1s0f0np0"\nrdma_device = "rocep1s0f0"\naddresses = { ' in text
    else:  # the LAN, with every node's address
        assert inventory.control_netdev("thinkstationpgx-32") == "enP7s7"
        assert inventory.master_address == "192.168.40.30"
        assert inventory.control_address(layout.node_name(size - 1)) == f"192.168.40.{30 + 2 * (size - 1)}"
    if scenario.topology == "ring":  # the long form, one member a line
        assert '[[rails]]\nname = "c0a"\nmembers = [\n  { node = "thinkstationpgx-30", netdev = "enp1s0f0np0"' in text


# -- the compose, per topology ---------------------------------------------------------------------
def _compose(topology: str, size: int, devices: tuple[str, ...]) -> str:
    return deploy.render_compose([], deploy.ComposeCluster(topology, size, "192.168.40.30", "enP7s7", devices))


def test_the_pairs_compose_is_the_template():
    assert deploy.render_compose([]) == deploy.COMPOSE_TEMPLATE.read_text(encoding="utf-8")
    assert "--tensor-parallel-size 2 --nnodes 2" in deploy.render_compose([])


def test_a_switch_compose():
    text = _compose("switch", 8, ("rocep1s0f0", "roceP2p1s0f0"))
    for line in ("- MASTER_ADDR=192.168.40.30", "- NCCL_SOCKET_IFNAME=enP7s7", "- GLOO_SOCKET_IFNAME=enP7s7",
                 "- TP_SOCKET_IFNAME=enP7s7", "- NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0", "- NCCL_IB_MERGE_NICS=1",
                 "--tensor-parallel-size 8 --nnodes 8", "across 8 GB10 nodes (on a QSFP switch)"):  # fmt: skip
        assert line in text
    assert "169.254" not in text and "SUBNET_AWARE" not in text and "NCCL_ALGO" not in text


@pytest.mark.parametrize(("size", "algo"), [(3, False), (4, True), (8, True)])
def test_a_ring_compose(size, algo):
    text = _compose("ring", size, layout.DEVICE_ORDER)
    assert "- NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0,rocep1s0f1,roceP2p1s0f1" in text
    assert "- NCCL_IB_MERGE_NICS=0\n      - NCCL_IB_SUBNET_AWARE_ROUTING=1" in text
    assert "- NCCL_NET_PLUGIN=none" in text and ("- NCCL_ALGO=Ring" in text) == algo
    assert f"--tensor-parallel-size {size} --nnodes {size}" in text


# -- vLLM's log and the stubs, from the node list --------------------------------------------------
def test_every_rank_logs_its_place_in_the_world():
    from datetime import UTC, datetime

    started = datetime(2026, 12, 4, tzinfo=UTC)
    for rank in range(8):
        lines = vllm_logs.startup_log(
            rank, started, version="0.12.0", model="m", served="s", port=20001, transport="IB",
            host=layout.node_name(rank), world=8, master="192.168.40.30", devices=list(layout.DEVICE_ORDER),
            oob=f"enP7s7:{layout.lan_address(rank).split('/')[0]}",
        )  # fmt: skip
        parsed = parse_docker_log("\n".join(vllm_logs.stamped(lines, started)))
        text = "\n".join(line.text for line in parsed)
        assert f"rank {rank} in world size 8 is assigned as" in text and f"TP rank {rank}," in text
        assert [m.milestone for m in milestones(parsed)] == expected_milestones(rank, eager=False)
        assert ("head node address 192.168.40.30" in text) == (rank > 0)
        assert ("tensor_parallel_size=8" in text) == (rank == 0)
        found = nccl_transport(parsed)
        assert found is not None and found.kind == "IB" and list(found.devices) == list(layout.DEVICE_ORDER)
        assert text.count(f"{layout.node_name(rank)}:187:187 [0] NCCL INFO NET/IB : Using") == 1
        gdr = nccl_gdr(parsed)  # NCCL's GPU Direct RDMA line per HCA, the sim's image exporting dma-buf
        assert gdr is not None and gdr.on and list(gdr.hcas) == list(layout.DEVICE_ORDER)


def test_nccl_tests_lists_a_rank_per_node():
    nodes = [layout.node_name(k) for k in range(4)]
    out, _, rc = nccl_tests.all_gather_perf({"node": nodes[0], "nodes": nodes, "nccl_tests": {"busbw_gbs": 21.0}}, [])
    ranks = [line.split(" on ")[1].split()[0] for line in out.splitlines() if line.startswith("#  Rank")]
    assert rc == 0 and ranks == nodes
    row = next(line for line in out.splitlines() if line.strip() and not line.startswith("#"))
    algbw, busbw = (float(v) for v in row.split()[6:8])
    assert busbw == 21.0 and algbw == pytest.approx(28.0, abs=0.01)  # busbw = algbw * (n - 1) / n


def test_a_port_carries_its_own_figure_toward_each_peer():
    port = {"gbps": 109.0, "to": {"192.168.100.12": 40.0}, "failure": None}
    assert perftest._toward(port, "192.168.100.12") == (40.0, None)
    assert perftest._toward(port, "192.168.100.13") == (109.0, None)
    assert perftest._toward({**port, "failure": "remote-access"}, "192.168.100.13") == (109.0, "remote-access")


def test_the_layout_addresses_are_distinct_per_rail():
    for topology, size in (("ring", 8), ("switch", 8), ("pair", 2)):
        rails = layout.skeleton(topology, size)["rails"]
        nets = []
        for rail in rails:
            addresses = (
                list(rail["addresses"].values()) if "addresses" in rail else [m["address"] for m in rail["members"]]
            )
            assert len({ipaddress.ip_interface(a).network for a in addresses}) == 1
            nets.append(ipaddress.ip_interface(addresses[0]).network)
        assert len(set(nets)) == len(nets)


FAULTS = [n for n in builtin_names() if load_scenario(n).topology == "pair" and n != "healthy"]


@pytest.mark.slow
@pytest.mark.parametrize("base", ["healthy-ring3", "healthy-switch4", "healthy-switch8"])
def test_every_pair_fault_loads_over_every_shape(base):
    """Each of the pair's faults names its nodes by rank, so it is a valid scenario over any shape;
    what it breaks lands on that shape's rank (bring-up then refuses the few whose edits name the
    pair's own values, saying which)."""
    for name in FAULTS:
        scenario = load_scenario(f"{name}@{base}")
        assert scenario.topology == load_scenario(base).topology
        assert set(scenario.nodes) == set(load_scenario(base).nodes), name


def test_a_scenario_without_a_base_says_how_to_start(tmp_path):
    """A fault written as if over healthy, without `base =`, said "key 'nodes.thinkstationpgx-32.rank' is
    required"; it says what a scenario starts from."""
    from gb10check.errors import SimError
    from sim.scenario import load_scenario

    for table in ("rank1", "thinkstationpgx-32"):
        path = tmp_path / f"{table}.toml"
        path.write_text(f'description = "x"\n[nodes.{table}]\npowered_off = true\n')
        with pytest.raises(SimError) as err:
            load_scenario(str(path))
        said = str(err.value)
        assert f"[nodes.{table}] changes a node, but the file has no base" in said and 'base = "healthy"' in said
        assert "topology = " in said


# -- crossed wires (issue 19, check 1) -------------------------------------------------------------
def test_crossed_netdevs_trade_places_on_the_wire():
    """nodes.<name>.crossed: each netdev of a pair sits where the other's cable or switch port is wired,
    keeping its own name and address; the others stay where they are."""
    node = load_scenario("cable-halves-crossed").nodes[layout.node_name(1)]
    assert [node.placed(n) for n in ("enp1s0f0np0", "enP2p1s0f0np0", "enP7s7")] == [
        "enP2p1s0f0np0",
        "enp1s0f0np0",
        "enP7s7",
    ]


@pytest.mark.parametrize(
    "crossed",
    ['[["enp1s0f0np0", "enp9s9"]]', '[["enp1s0f0np0", "enP2p1s0f0np0"], ["enp1s0f0np0", "enp1s0f1np1"]]'],
)
def test_a_crossing_names_two_ports_the_node_has_once(tmp_path, crossed):
    path = _scenario(tmp_path, f'base = "healthy-switch4"\n[nodes.rank1]\ncrossed = {crossed}\n')
    with pytest.raises(SimError, match="crossed names"):
        load_scenario(str(path))


@pytest.mark.parametrize("name", ["healthy", "healthy-ring4", "healthy-switch4"])
def test_the_wire_probe_asks_every_peer_and_is_a_read(name):
    """probes.NEIGHBOURS on every shape: one ARP per peer address out of the shared rail's netdev (a
    ring node: its two neighbours on both halves), a fallback over every other node's addresses, and
    the command the read-only proof accepts."""
    inventory = inv.parse_inventory(
        inventory_file.dumps(inventory_file.written(load_scenario(name).model, RUN)), "cluster.toml"
    )
    for node in inventory.nodes:
        command = probes.NEIGHBOURS.command(Where(inventory, node))
        assert command is not None and any(re.fullmatch(r, command) for r in READS), command
        for rail, mine in inventory.members_of(node.name):
            for other in rail.members:
                if other.node != node.name:
                    assert f"-I {mine.netdev} {other.ip} " in command
        if inventory.topology == "ring":
            assert command.count("; do ping") == 4  # each of its 4 ends has others to fall back on


def test_the_older_links_tables_are_read_as_the_inventorys_rails(tmp_path):
    """One fabric vocabulary: a scenario's [links.<name>] (the form before [[rails]]) loads as the same
    rails, and a link's `wired` as the cable's [wired]; a file may not give both forms."""
    healthy = load_scenario("healthy")
    old = tmp_path / "old.toml"
    nodes = tomllib.loads((healthy.source).read_text())["nodes"]
    links = "\n".join(
        f'[links.{rail.name}]\nrdma_device = "{rail.members[0].rdma_device}"\n'
        "addresses = { " + ", ".join(f'{m.node} = "{m.address}"' for m in rail.members) + " }"
        for rail in healthy.model.rails
    )
    ranks = "\n".join(f"[nodes.{name}]\nrank = {table['rank']}" for name, table in nodes.items())
    old.write_text(f"{ranks}\n{links}\n")
    assert load_scenario(str(old)).model.rails == healthy.model.rails
    ring = tmp_path / "ring.toml"
    ring.write_text(
        'base = "healthy-ring4"\n[links.c0a]\nwired = [["rank0", "enp1s0f0np0"], ["rank2", "enp1s0f1np1"]]\n'
    )
    assert load_scenario(str(ring)).model.wired == {
        "c0a": (("thinkstationpgx-30", "enp1s0f0np0"), ("thinkstationpgx-34", "enp1s0f1np1"))
    }
    both = tmp_path / "both.toml"
    both.write_text(old.read_text().replace("[links.enP2p1s0f0np0]", '[[rails]]\nnetdev = "enP2p1s0f0np0"', 1))
    with pytest.raises(SimError, match=r"both.toml: give the fabric as \[\[rails\]\] or as the older"):
        load_scenario(str(both))


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ('base = "healthy-switch4"\n[wired]\nenp1s0f0np0 = [["rank0", "enp1s0f0np0"], ["rank1", "enp1s0f0np0"]]\n',
         "wired.enp1s0f0np0: rail enp1s0f0np0 is a switch's, not a cable"),
        ('base = "healthy-ring3"\n[wired]\nc9a = [["rank0", "enp1s0f0np0"], ["rank1", "enp1s0f1np1"]]\n',
         "wired.c9a: no rail is named c9a"),
        ('base = "healthy"\n[[rails]]\nnetdev = "enp1s0f0np0"\nrdma_device = "rocep1s0f0"\n'
         'addresses = { rank0 = "10.1.0.1/24", nobody = "10.1.0.2/24" }\n',
         "rail enp1s0f0np0 names ['nobody'], which are not nodes of the scenario"),
        ('base = "healthy"\n[[rails]]\nnetdev = "enp1s0f0np0"\nrdma_device = "rocep1s0f0"\n'
         'addresses = { rank0 = "10.1.0.1/24", rank1 = "10.2.0.2/24" }\n',
         "is one subnet"),
    ],
)  # fmt: skip
def test_a_scenarios_rails_are_validated_as_the_inventorys(tmp_path, body, said):
    path = tmp_path / "fabric.toml"
    path.write_text(body)
    with pytest.raises(SimError) as err:
        load_scenario(str(path))
    assert said in str(err.value) and "fabric.toml" in str(err.value)


def test_the_sims_clock_scales_a_timed_tools_wait_not_what_it_prints(monkeypatch):
    from sim import node_files

    monkeypatch.delenv(node_files.TIME_SCALE_ENV, raising=False)
    assert node_files.time_scale() == 1.0
    monkeypatch.setenv(node_files.TIME_SCALE_ENV, "0.25")
    assert node_files.time_scale() == 0.25
    for bad in ("0", "1.5", "fast", "-1"):
        monkeypatch.setenv(node_files.TIME_SCALE_ENV, bad)
        with pytest.raises(SimError, match=rf"GB10SIM_TIME_SCALE is '{re.escape(bad)}': give a number in \(0, 1\]"):
            node_files.time_scale()


def test_a_rail_without_its_members_changes_only_what_it_gives(tmp_path):
    """[[rails]] merge by rail over the base's (and over a topology's), in both forms: a change of one key
    keeps the rail's members, a rail that gives its members replaces the base's."""
    for body in (
        'base = "healthy"\n[[rails]]\nname = "enp1s0f0np0"\nmtu = 9000\n',
        'base = "healthy"\n[links.enp1s0f0np0]\nmtu = 9000\n',  # the older form of the same change
    ):
        path = tmp_path / "mtu.toml"
        path.write_text(body)
        rails = {r.name: r for r in load_scenario(str(path)).model.rails}
        healthy = {r.name: r for r in load_scenario("healthy").model.rails}
        assert rails["enp1s0f0np0"].mtu == 9000 and rails["enp1s0f0np0"].members == healthy["enp1s0f0np0"].members
        assert rails["enP2p1s0f0np0"] == healthy["enP2p1s0f0np0"] and len(rails) == 2
    ring = tmp_path / "ring.toml"
    ring.write_text('base = "healthy-ring3"\n[[rails]]\nname = "c1b"\nmtu = 9000\n')
    rails = {r.name: r for r in load_scenario(str(ring)).model.rails}
    assert rails["c1b"].mtu == 9000 and [m.node for m in rails["c1b"].members] == [
        "thinkstationpgx-32",
        "thinkstationpgx-34",
    ]
    assert len(rails) == 6
    moved = tmp_path / "moved.toml"
    moved.write_text(
        'base = "healthy"\n[[rails]]\nnetdev = "enp1s0f0np0"\nrdma_device = "rocep1s0f0"\n'
        'addresses = { rank0 = "10.9.0.1/24", rank1 = "10.9.0.2/24" }\n'
    )
    rails = {r.name: r for r in load_scenario(str(moved)).model.rails}
    assert [m.address for m in rails["enp1s0f0np0"].members] == ["10.9.0.1/24", "10.9.0.2/24"]
