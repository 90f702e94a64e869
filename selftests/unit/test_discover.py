"""gb10check init's discovery: the fabric from what nodes say (gb10check/reading/discover.py), the inventory it
writes (every value with its source, TODO lines refused by the reader) and the drift it reports."""

from __future__ import annotations

import argparse

import pytest

from gb10check import inventory as inv
from gb10check.commands import init as init_command
from gb10check.errors import InventoryError
from gb10check.reading import discover
from gb10check.reading.parsers.iproute import Netdev
from gb10check.reading.parsers.rdma_sysfs import Gid, RdmaPortState

F0, F1 = ("enp1s0f0np0", "rocep1s0f0"), ("enp1s0f1np1", "rocep1s0f1")
G0, G1 = ("enP2p1s0f0np0", "roceP2p1s0f0"), ("enP2p1s0f1np1", "roceP2p1s0f1")


def _reading(
    host: str, name: str, ports: dict[tuple[str, str], str | None], lan: str | None = None
) -> discover.NodeReading:
    """A node whose netdevs `ports` (netdev, RDMA device) have these addresses (None: none), its LAN enP7s7."""
    netdevs = {}
    rdma = {}
    for (netdev, device), address in ports.items():
        addrs = (address,) if address else ()
        netdevs[netdev] = Netdev(netdev, True, address is not None, 9000, "UP", addrs)
        gids = (Gid(3, "0000:0000:0000:0000:0000:ffff:" + _hex(address), "RoCE v2", netdev),) if address else ()
        rdma[device] = RdmaPortState(device, 1, (netdev,), "4: ACTIVE", "5: LinkUp", "Ethernet", "200 Gb/sec", gids)
    if lan:
        netdevs["enP7s7"] = Netdev("enP7s7", True, True, 1500, "UP", (lan,))
    return discover.NodeReading(host, name, discover.ports_of(netdevs, rdma), netdevs)


def _hex(address: str | None) -> str:
    a, b, c, d = (int(x) for x in (address or "0.0.0.0").split("/")[0].split("."))
    return f"{a:02x}{b:02x}:{c:02x}{d:02x}"


def _ring(order: list[int]) -> list[discover.NodeReading]:
    """Four nodes cabled in `order` (indexes into spark-1..4): each node's f0/g0 toward the next, f1/g1 back."""
    ports: dict[int, dict[tuple[str, str], str | None]] = {i: {} for i in range(4)}
    for k, here in enumerate(order):
        nxt = order[(k + 1) % 4]
        ports[here][F0] = f"10.20.{2 * k}.{here + 1}/24"
        ports[here][G0] = f"10.20.{2 * k + 1}.{here + 1}/24"
        ports[nxt][F1] = f"10.20.{2 * k}.{nxt + 1}/24"
        ports[nxt][G1] = f"10.20.{2 * k + 1}.{nxt + 1}/24"
    return [_reading(f"192.168.40.{31 + i}", f"spark-{i + 1}", ports[i], f"192.168.40.{31 + i}/24") for i in range(4)]


NAMES4 = ["spark-1", "spark-2", "spark-3", "spark-4"]


def test_a_pair_is_its_rails_and_an_unaddressed_port_is_said():
    a = _reading("local", "pgx-30", {F0: "169.254.94.252/16", G0: "192.168.101.10/24", F1: None})
    b = _reading("pgx-32", "pgx-32", {F0: "169.254.159.206/16", G0: "192.168.101.11/24", F1: None})
    fabric = discover.infer([a, b], ["pgx-30", "pgx-32"])
    assert fabric.topology == "pair"
    assert [(r.name, r.subnet, r.nodes) for r in fabric.rails] == [
        ("enp1s0f0np0", "169.254.0.0/16", ("pgx-30", "pgx-32")),
        ("enP2p1s0f0np0", "192.168.101.0/24", ("pgx-30", "pgx-32")),
    ]
    assert all(r.alike and {m.port.gid_index for m in r.members} == {3} for r in fabric.rails)
    assert any("pgx-30's enp1s0f1np1" in n and "no IPv4 address" in n for n in fabric.notes), fabric.notes


def test_a_ring_is_found_in_its_cable_order_from_rank_0():
    fabric = discover.infer(_ring([0, 1, 2, 3]), NAMES4)
    assert fabric.topology == "ring"
    assert fabric.cables == (
        ("spark-1", "spark-2"),
        ("spark-2", "spark-3"),
        ("spark-3", "spark-4"),
        ("spark-4", "spark-1"),
    )
    assert [r.name for r in fabric.rails] == ["c1a", "c1b", "c2a", "c2b", "c3a", "c3b", "c4a", "c4b"]
    first = fabric.rails[0]
    assert [(m.node, m.port.netdev) for m in first.members] == [("spark-1", F0[0]), ("spark-2", F1[0])]
    # cabled out of rank order: the cables as they are, from rank 0 toward its lower-ranked neighbour
    crossed = discover.infer(_ring([0, 2, 1, 3]), NAMES4)
    assert crossed.topology == "ring"
    assert crossed.cables == (
        ("spark-1", "spark-3"),
        ("spark-3", "spark-2"),
        ("spark-2", "spark-4"),
        ("spark-4", "spark-1"),
    )


def test_a_ring_missing_a_cable_is_no_topology_and_says_why():
    readings = _ring([0, 1, 2, 3])
    last = readings[3]
    gone = {
        p.netdev: None if p.netdev in (F0[0], G0[0]) else p.address for p in last.ports
    }  # spark-4 -> spark-1 unaddressed
    readings[3] = _reading(last.host, last.hostname, {(p.netdev, p.rdma_device): gone[p.netdev] for p in last.ports})
    fabric = discover.infer(readings, NAMES4)
    assert fabric.topology is None
    assert any("no single cycle" in n for n in fabric.notes), fabric.notes
    assert any("alone on 10.20.6.0/24" in n for n in fabric.notes), fabric.notes


def test_a_switch_is_every_rail_holding_every_node():
    readings = [
        _reading(f"h{i}", f"spark-{i + 1}", {F0: f"10.30.0.{i + 1}/24", G0: f"10.30.1.{i + 1}/24"}) for i in range(4)
    ]
    fabric = discover.infer(readings, NAMES4)
    assert fabric.topology == "switch"
    assert [(r.name, len(r.members)) for r in fabric.rails] == [("enp1s0f0np0", 4), ("enP2p1s0f0np0", 4)]


def _opts(**kw: object) -> argparse.Namespace:
    base = dict(user="nvidia", port=None, key=None, known_hosts=None, accept_new=False, no_ssh_config=False,
                connect_timeout=5.0, name=None)  # fmt: skip
    return argparse.Namespace(**{**base, **kw})


def _found(readings: list[discover.NodeReading], names: list[str]) -> tuple[init_command.Found, discover.Fabric]:
    fabric = discover.infer(readings, names)
    found = init_command.Found()
    found.put("cluster", "name", "spark-ring", "--name")
    init_command.nodes_table(found, names, ["local", *names[1:]], _opts())
    init_command.fabric_tables(found, fabric, readings)
    init_command.deployment_tables(found, [()] * len(names), names)
    init_command.control_table(found, fabric, readings, None)
    return found, fabric


def test_what_init_cannot_find_is_a_todo_line_the_reader_refuses_naming_it():
    found, _ = _found(_ring([0, 1, 2, 3]), NAMES4)
    text = init_command.render(found, "2026-12-07 08:00 UTC")
    assert '[control]\nnetdev = "enP7s7"  # the port each node was reached on' in text
    with pytest.raises(InventoryError) as err:
        inv.parse_inventory(text, "cluster.toml")
    said = str(err.value)
    assert "still TODO" in said and "compose_file" in said and "served_model_name" in said
    assert said.count("\n  - line ") == len(found.todo) == 7, said


def test_a_filled_in_inventory_is_read_with_the_fabric_found():
    found, fabric = _found(_ring([0, 1, 2, 3]), NAMES4)
    text = init_command.render(found, "now")
    filled = {
        "compose_file": "/srv/vllm/compose.yml", "container": "vllm", "image": "vllm/vllm-openai:v0.11",
        "hf_cache": "/srv/hf", "served_model_name": "m", "model": "org/m", "max_model_len": 8192,
    }  # fmt: skip
    for key, value in filled.items():
        text = text.replace(f'{key} = "TODO"', f"{key} = {init_command._value(value)}")
    read = inv.parse_inventory(text, "cluster.toml")
    assert read.topology == "ring" and [n.name for n in read.nodes] == NAMES4
    assert [(r.name, sorted(r.nodes)) for r in read.rails] == [(r.name, sorted(r.nodes)) for r in fabric.rails]
    assert read.control_netdev("spark-3") == "enP7s7" and read.master_address == "192.168.40.31"
    assert init_command.differences(found, fabric, read) == []
    # the cables moved since: the drift names the rails and the order
    moved_found, moved = _found(_ring([0, 2, 1, 3]), NAMES4)
    drift = init_command.differences(moved_found, moved, read)
    assert any(d.startswith("the ring's cables moved: the inventory joins spark-1-spark-2") for d in drift), drift
    assert any(d.startswith("the rail on 10.20.0.0/24 changed") for d in drift), drift


def test_node_text_in_a_comment_stays_one_comment_line():
    found = init_command.Found()
    found.notes.append("spark-2's x\n[service]\nbase_url = 'http://evil'")
    found.put("cluster", "name", "c", "from\nnowhere")
    text = init_command.render(found, "now")
    assert "\n[service]" not in text and "\nbase_url" not in text
    assert init_command.render(found, "now").count("\n# found: ") == 1


def test_init_without_the_other_nodes_says_how_to_name_them(capsys, tmp_path):
    assert init_command.main(["-o", str(tmp_path / "c.toml")]) == 4
    err = capsys.readouterr().err
    assert "has no fabric port with an address" in err and "gb10check init spark-02 spark-03" in err, err
    assert not (tmp_path / "c.toml").exists()


def test_the_control_plane_is_the_one_netdev_nccl_socket_ifname_selects():
    readings = _ring([0, 1, 2, 3])
    pick = init_command._named_netdev
    assert pick("enP7s7", readings) == pick("=enP7s7", readings) == pick("enP7", readings) == "enP7s7"
    assert pick("^lo,docker0", readings) is None  # an exclude list names no interface to use
    assert pick("enp1s0f", readings) is None  # a prefix of two netdevs on every node
    assert pick("=enP7", readings) is None  # exact: no such netdev


@pytest.mark.parametrize(("text", "length"), [("262144", 262144), ("32k", 32000), ("32K", 32768), ("1M", 1048576),
                                              ("1.5k", 1500), ("auto", None), ("0", None), (None, None)])  # fmt: skip
def test_max_model_len_is_read_as_vllm_reads_it(text, length):
    assert init_command._length(text) == length


def test_a_ring_whose_cables_join_like_ports_keeps_each_rail_its_own_name():
    """Every cable port 0 to port 0: each rail is alike, but the rails of one netdev are several: named c1a..."""
    ports: dict[int, dict[tuple[str, str], str | None]] = {i: {} for i in range(4)}
    for k in range(4):
        a, b = k, (k + 1) % 4
        half = F0 if k % 2 == 0 else F1
        ports[a][half] = f"10.9.{k}.{a + 1}/24"
        ports[b][half] = f"10.9.{k}.{b + 1}/24"
    readings = [
        _reading(f"192.168.40.{31 + i}", f"spark-{i + 1}", ports[i], f"192.168.40.{31 + i}/24") for i in range(4)
    ]
    found, fabric = _found(readings, NAMES4)
    assert fabric.topology == "ring"
    assert [r["name"] for r in found.data["rails"]] == ["c1a", "c2a", "c3a", "c4a"]


def test_the_same_ring_written_the_other_way_round_is_no_drift():
    found, fabric = _found(_ring([0, 1, 2, 3]), NAMES4)
    data = {k: v for k, v in found.data.items()}
    data["rails"] = list(reversed(found.data["rails"]))
    filled = {**data, "service": {"base_url": "http://localhost:8000", "served_model_name": "m", "model": "m",
              "max_model_len": 8}, "deployment": {"compose_file": "/c.yml", "container": "c", "image": "i",
              "hf_cache": "/h"}}  # fmt: skip
    read = inv.Inventory.model_validate(filled)
    assert init_command.differences(found, fabric, read) == []


def test_init_names_a_node_it_cannot_reach_as_typed_and_exits_as_a_set_up_error(tmp_path, capsys):
    """A name that does not resolve is said as such, once, with the name the operator typed and its rank;
    no file is written and the exit is 4 (set-up), not 1 (drift)."""
    from gb10check.commands import init as init_command

    out = tmp_path / "cluster.toml"
    rc = init_command.main(["no-such-host.invalid", "-o", str(out), "--connect-timeout", "2"])
    err = capsys.readouterr().err
    assert rc == 4 and not out.exists(), err
    assert "no-such-host.invalid (rank 1): the name does not resolve" in err, err
    assert "rank1 (" not in err and "Name each node as this machine reaches it over SSH" in err


def test_with_no_compose_file_the_launch_scripts_that_start_vllm_are_named_in_the_todo():
    found = init_command.Found()
    init_command.deployment_tables(found, [(), ()], ["spark-01", "spark-02"], (), ["/home/nvidia/vllm/launch.sh"])
    todo = next(t for t in found.todo if t.startswith("[deployment] compose_file"))
    assert 'launch = { script = "/home/nvidia/vllm/launch.sh" }' in todo and "launch.args" in todo, todo
    bare = init_command.Found()
    init_command.deployment_tables(bare, [(), ()], ["spark-01", "spark-02"])
    assert 'a launch script: launch = { script = "PATH" }' in next(t for t in bare.todo if "compose_file" in t)
