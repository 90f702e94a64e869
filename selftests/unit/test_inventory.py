"""The inventory: the example loads value for value; bad files say file, key and what to write."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gb10check.errors import InventoryError
from gb10check.inventory import default_path, load_inventory, parse_inventory

EXAMPLES = Path(__file__).resolve().parents[2] / "fixtures"
EXAMPLE = EXAMPLES / "cluster.example.toml"
MINIMAL = """
[[nodes]]
name = "a"
rank = 0
transport = "local"
"""


def test_example_is_the_seed_deployment():
    inv = load_inventory(EXAMPLE)
    assert [(n.name, n.rank) for n in inv.nodes] == [("thinkstationpgx-30", 0), ("thinkstationpgx-32", 1)]
    assert inv.api_node.transport == "local"
    assert inv.topology == "pair"
    rails = {rail.name: rail for rail in inv.rails}
    assert [(m.node, m.netdev, m.rdma_device, m.address) for m in rails["enp1s0f0np0"].members] == [
        ("thinkstationpgx-30", "enp1s0f0np0", "rocep1s0f0", "169.254.94.252/16"),
        ("thinkstationpgx-32", "enp1s0f0np0", "rocep1s0f0", "169.254.159.206/16"),
    ]
    assert rails["enP2p1s0f0np0"].ip("thinkstationpgx-32") == "192.168.101.11"
    assert {rail.gid_index for rail in inv.rails} == {3}
    assert inv.control_netdev("thinkstationpgx-32") == "enp1s0f0np0"
    assert inv.service is not None and inv.deployment is not None
    assert (
        inv.service.base_url,
        inv.service.served_model_name,
        inv.service.model,
        inv.service.max_model_len,
    ) == ("http://localhost:20001", "qwen3.8-flash-next", "Qwen/Qwen3.8-Flash-Next-FP8", 262144)
    assert inv.deployment.container == "vllm-qwen38"
    assert inv.deployment.image == "vllm/vllm-openai:qwen38-flash-next"
    assert inv.deployment.compose_file == "/home/lenovo/vllm/qwen3.8-flash-next-compose.yml"
    assert inv.cluster.tensor_parallel_size == 2


def test_example_is_never_the_default():
    path, origin = default_path()
    assert (path, origin) == (Path("cluster.toml"), "default")
    assert path.name != EXAMPLE.name


def test_missing_file_says_how_to_write_one(tmp_path):
    with pytest.raises(InventoryError) as err:
        load_inventory(tmp_path / "nope.toml", "--cluster")
    text = str(err.value)
    assert "nope.toml not found, from --cluster" in text
    # the example's absolute path in the clone, whatever the current folder; the sim as the README says it
    example = Path(__file__).resolve().parents[2] / "fixtures" / "cluster.example.toml"
    assert f"cp {example} cluster.toml" in text and example.is_file()
    assert "gb10check all --sim" in text


def test_minimal_inventory():
    inv = parse_inventory(MINIMAL, "m.toml")
    assert inv.nodes[0].name == "a" and inv.service is None and inv.thresholds.command_timeout == 10


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nodes = 3", "m.toml: invalid inventory:\n  - 'nodes': Input should be a valid list"),
        (
            MINIMAL.replace("rank = 0", 'rank = "0"'),
            "'nodes[0] (name = 'a').rank': Input should be a valid integer (found '0')",
        ),
        (MINIMAL + 'hots = "x"\n', "key 'nodes[0] (name = 'a').hots' is not known (misspelt?)"),
        (MINIMAL.replace('transport = "local"', 'transport = "ssh"'), "transport 'ssh' needs host ="),
        (
            MINIMAL.replace('transport = "local"', 'transport = "telnet"'),
            "Input should be 'ssh' or 'local' (found 'telnet')",
        ),
        (MINIMAL + MINIMAL, "node names must be unique; repeated: a"),
        (
            MINIMAL + MINIMAL.replace('"a"', '"b"').replace("rank = 0", "rank = 2"),
            "node ranks must be 0..1, each once; found [0, 2]",
        ),
        (
            MINIMAL + '[[links]]\nnetdev = "e"\nrdma_device = "r"\naddresses = { a = "10.0.0.1" }\n',
            "a = '10.0.0.1' needs a prefix length",
        ),
        (
            MINIMAL
            + '[[links]]\nnetdev = "e"\nrdma_device = "r"\naddresses = { a = "10.0.0.2/24", b = "10.0.0.1/24" }\n',
            "rail e names unknown node(s) ['b']",
        ),
        (
            MINIMAL + '[[links]]\nnetdev = "e"\nrdma_device = "r"\naddresses = { a = "10.0.0.1/24" }\n',
            "a rail joins two or more nodes; this one has 1 (a)",
        ),
        (
            MINIMAL + '[service]\nbase_url = "localhost:20001"\n',
            "'service.base_url': String should match pattern",
        ),
        (
            MINIMAL + "[thresholds]\ncommand_timeout = 0\n",
            "'thresholds.command_timeout': Input should be greater than 0",
        ),
        ("[[nodes]\n", "m.toml: not valid TOML"),
        # perftest reads -D with strtol: 0.5 would be 0, which it refuses, and 2.5 would run 2 s
        (
            MINIMAL + "[thresholds]\nbandwidth_seconds = 0.5\n",
            "'thresholds.bandwidth_seconds': Input should be a valid integer",
        ),
        (
            MINIMAL + "[thresholds]\nbandwidth_seconds = 0\n",
            "'thresholds.bandwidth_seconds': Input should be greater than or equal to 1",
        ),
    ],
)
def test_invalid_inventory_names_file_key_and_expectation(text, message):
    with pytest.raises(InventoryError) as err:
        parse_inventory(text, "m.toml")
    assert message in str(err.value)
    assert str(err.value).startswith("m.toml: ")


RING = EXAMPLES / "cluster.ring.example.toml"
SWITCH = EXAMPLES / "cluster.switch.example.toml"


def _nodes(n, first_local=True):
    return "".join(
        f'[[nodes]]\nname = "n{k}"\nrank = {k}\n'
        + ('transport = "local"\n' if k == 0 and first_local else 'host = "h"\n')
        for k in range(n)
    )


def _switch_rail(n, netdev="e0", device="r0", subnet="10.0.0", skip=()):
    addresses = ", ".join(f'n{k} = "{subnet}.{k + 1}/24"' for k in range(n) if k not in skip)
    return f'[[rails]]\nnetdev = "{netdev}"\nrdma_device = "{device}"\naddresses = {{ {addresses} }}\n'


def _cable(name, a, b, subnet):
    return (
        "[[rails]]\n" + (f'name = "{name}"\n' if name else "") + "members = [\n"
        f'  {{ node = "n{a}", netdev = "p0", rdma_device = "d0", address = "{subnet}.{a + 1}/24" }},\n'
        f'  {{ node = "n{b}", netdev = "p1", rdma_device = "d1", address = "{subnet}.{b + 1}/24" }},\n]\n'
    )


def _ring(n, cables=None):
    cables = cables if cables is not None else [(k, (k + 1) % n) for k in range(n)]
    return "".join(_cable(f"c{i}", a, b, f"10.1.{i}") for i, (a, b) in enumerate(cables))


CONTROL = '[control]\nnetdev = "lan0"\n'


def test_the_three_example_topologies_load():
    ring, switch = load_inventory(RING), load_inventory(SWITCH)
    assert (ring.topology, ring.size, switch.topology, switch.size) == ("ring", 4, "switch", 4)
    assert [r.name for r in ring.rails] == ["c1a", "c1b", "c2a", "c2b", "c3a", "c3b", "c4a", "c4b"]
    # a ring member names its own netdev: port 0 of one node meets port 1 of the next
    c4a = ring.rails[6]
    assert [(m.node, m.netdev, m.rdma_device) for m in c4a.members] == [
        ("spark-01", "enp1s0f1np1", "rocep1s0f1"),  # members in rank order, whatever order they were written
        ("spark-04", "enp1s0f0np0", "rocep1s0f0"),
    ]
    assert ring.peers("spark-01") == ["spark-02", "spark-04"]
    assert ring.node_pairs() == [
        ("spark-01", "spark-02"), ("spark-02", "spark-03"), ("spark-03", "spark-04"), ("spark-01", "spark-04")
    ]  # fmt: skip
    assert [r.name for r in ring.rails_between("spark-04", "spark-01")] == ["c4a", "c4b"]
    assert (ring.control_netdev("spark-03"), ring.master_address) == ("enP7s7", "192.168.40.31")
    assert len(switch.node_pairs()) == 6 and switch.peers("spark-03") == ["spark-01", "spark-02", "spark-04"]
    assert [len(r.pairs()) for r in switch.rails] == [6, 6]
    pair = load_inventory(EXAMPLE)
    assert pair.topology == "pair" and pair.master_address == "169.254.94.252"
    assert pair.control_address("thinkstationpgx-32") == "169.254.159.206"


def test_a_pair_without_control_or_topology_reads_as_today():
    """A file written before N nodes (no topology, no [control], [[links]]): the pair, the control
    plane on its first link (the seed's)."""
    text = EXAMPLE.read_text().replace("[[rails]]", "[[links]]")
    text = re.sub(r'\[control\]\nnetdev = "enp1s0f0np0"\n', "", text).replace('topology = "pair"', "")
    inv = parse_inventory(text, "old.toml")
    assert inv.topology == "pair" and inv.control is None
    assert inv.control_netdev("thinkstationpgx-30") == "enp1s0f0np0" and inv.master_address == "169.254.94.252"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            _nodes(9) + '[cluster]\ntopology = "switch"\n' + CONTROL + _switch_rail(9),
            "gb10check checks clusters of up to 8 nodes; this inventory has 9",
            id="nine-nodes",
        ),
        pytest.param(
            _nodes(3) + CONTROL + '[cluster]\ntopology = "ring"\n' + _ring(3, [(0, 1), (1, 2)]),
            "n0 is cabled to 1 neighbour (n1): in a ring each node has exactly two",
            id="ring-not-closed",
        ),
        pytest.param(
            _nodes(6)
            + CONTROL
            + '[cluster]\ntopology = "ring"\n'
            + _ring(6, [(0, 1), (1, 2), (0, 2), (3, 4), (4, 5), (3, 5)]),
            "the cables make 2 separate rings (n0 - n1 - n2; n3 - n4 - n5), not one cycle",
            id="two-rings",
        ),
        pytest.param(
            _nodes(4)
            + CONTROL
            + '[cluster]\ntopology = "switch"\n'
            + _switch_rail(4)
            + _cable("direct", 0, 1, "10.9.9"),
            "rail direct joins only n0 and n1: a direct cable beside a switch. NVIDIA: do not connect",
            id="switch-mixed-with-direct",
        ),
        pytest.param(
            _nodes(4) + CONTROL + '[cluster]\ntopology = "ring"\n' + _ring(4) + _switch_rail(4, "e9", "r9", "10.9.9"),
            "rail e9 joins 4 nodes: a ring's rails join two neighbours",
            id="ring-mixed-with-switch",
        ),
        pytest.param(
            _nodes(3) + CONTROL + '[cluster]\ntopology = "switch"\n' + _switch_rail(3, skip=(2,)),
            "n2 is on no rail",
            id="node-on-no-rail",
        ),
        pytest.param(
            _nodes(2) + _switch_rail(2) + _switch_rail(2, "e1", "r1", "10.0.0"),
            "address 10.0.0.1 is given twice",
            id="address-twice",
        ),
        pytest.param(
            _nodes(2)
            + _switch_rail(2)
            + _switch_rail(2, "e1", "r1", "10.0.0").replace(".1/24", ".11/24").replace(".2/24", ".12/24"),
            "rails e0 and e1 share a subnet (10.0.0.0/24, 10.0.0.0/24)",
            id="two-rails-one-subnet",
        ),
        pytest.param(
            _nodes(4) + '[cluster]\ntopology = "switch"\n' + _switch_rail(4),
            'name the control plane: [control] netdev = "enP7s7"',
            id="control-unnamed",
        ),
        pytest.param(
            _nodes(3) + CONTROL + _switch_rail(3),
            'say the cluster\'s shape: [cluster] topology = "ring" or "switch" (3 nodes;',
            id="three-nodes-without-a-topology",
        ),
        pytest.param(
            _nodes(3) + CONTROL + '[cluster]\ntopology = "pair"\n' + _switch_rail(3),
            'topology "pair" is two nodes; this inventory has 3: write topology = "ring" or "switch"',
            id="pair-of-three",
        ),
        pytest.param(
            _nodes(2) + _cable(None, 0, 1, "10.0.0"),
            'its members are on different netdevs (n0 p0, n1 p1): give the rail a name, e.g. name = "c0a"',
            id="ring-rail-unnamed",
        ),
        pytest.param(
            _nodes(2) + _cable("x", 0, 1, "10.0.0").replace("10.0.0.2/24", "10.0.1.2/24"),
            "rail x is one subnet, but its members' addresses are on 2",
            id="rail-two-subnets",
        ),
        pytest.param(
            _nodes(2) + _switch_rail(2) + _switch_rail(2, "e0", "r1", "10.0.1"),
            "n0's e0 is on rails e0, e0: one rail per port half",
            id="netdev-on-two-rails",
        ),
    ],
)
def test_a_fabric_that_cannot_be_is_refused_saying_what_to_write(text, message):
    with pytest.raises(InventoryError) as err:
        parse_inventory(text, "m.toml")
    assert message in str(err.value)


def test_links_errors_name_links_when_the_file_says_links():
    text = _nodes(2) + '[[links]]\nnetdev = "e"\nrdma_device = "r"\naddresses = { n0 = "10.0.0.1/24", n1 = 5 }\n'
    with pytest.raises(InventoryError) as err:
        parse_inventory(text, "m.toml")
    assert "'links[0]'" in str(err.value) and "addresses.n1 must be a string" in str(err.value)


def test_every_inventory_key_is_read_by_the_suite():
    """Config the suite accepts, it uses: each key of the inventory's models is read outside
    inventory.py (a user who sets a threshold assumes it is checked)."""
    from pydantic import BaseModel

    from gb10check import inventory as inv

    root = Path(__file__).resolve().parents[2]
    code = "\n".join(
        p.read_text()
        for folder in ("gb10check", "fixtures", "tests_preflight", "tests_network", "tests_service")
        for p in (root / folder).rglob("*.py")
        if p.name != "inventory.py"
    )
    models = [
        m
        for m in vars(inv).values()
        if isinstance(m, type) and issubclass(m, BaseModel) and m.__module__ == inv.__name__
    ]
    unread = sorted(
        f"{m.__name__}.{name}"
        for m in models
        for name in m.model_fields
        if name != "source" and not re.search(rf"\.{name}\b|[\"']{name}[\"']", code)
    )
    # keys the suite reads through the inventory's own methods: those methods must be read outside it
    through = {
        "Inventory.control": ("control_netdev", "control_address", "master_address"),
        "NcclTests.min_busbw_gbs": ("nccl_busbw_floor",),
        "SecretShape.alphabet": ("regex",),
        "SecretShape.length": ("regex",),
    }
    assert [k for k in unread if k not in through] == []
    assert all(any(re.search(rf"\.{m}\b", code) for m in through[k]) for k in unread)


def test_a_switch_on_one_rail_is_refused_unless_it_says_so():
    """One rail on a switch is half of every port's bandwidth: refused, saying why, unless [cluster] rails = 1."""
    text = _nodes(3) + CONTROL + '[cluster]\ntopology = "switch"\n' + _switch_rail(3)
    with pytest.raises(InventoryError) as err:
        parse_inventory(text, "s.toml")
    assert "a switch with one rail" in str(err.value) and "[cluster] rails = 1" in str(err.value)
    said = text.replace('topology = "switch"\n', 'topology = "switch"\nrails = 1\n')
    assert len(parse_inventory(said, "s.toml").rails) == 1
    wrong = text.replace('topology = "switch"\n', 'topology = "switch"\nrails = 2\n')
    with pytest.raises(InventoryError, match=r"rails = 2, but the inventory has 1 \[\[rails\]\]"):
        parse_inventory(wrong, "s.toml")
