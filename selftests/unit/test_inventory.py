"""The inventory: the example loads value for value; bad files say file, key and what to write."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gb10check.errors import InventoryError
from gb10check.inventory import default_path, load_inventory, parse_inventory

EXAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "cluster.example.toml"
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
    links = {link.netdev: link for link in inv.links}
    assert links["enp1s0f0np0"].rdma_device == "rocep1s0f0"
    assert links["enp1s0f0np0"].addresses == {
        "thinkstationpgx-30": "169.254.94.252/16",
        "thinkstationpgx-32": "169.254.159.206/16",
    }
    assert links["enP2p1s0f0np0"].addresses["thinkstationpgx-32"] == "192.168.101.11/24"
    assert {link.gid_index for link in inv.links} == {3}
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
    assert "cp fixtures/cluster.example.toml cluster.toml" in text and "pytest --sim" in text


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
            MINIMAL + '[[links]]\nnetdev = "e"\nrdma_device = "r"\naddresses = { b = "10.0.0.1/24" }\n',
            "links[0] (e).addresses names unknown node(s) ['b']",
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
    ],
)
def test_invalid_inventory_names_file_key_and_expectation(text, message):
    with pytest.raises(InventoryError) as err:
        parse_inventory(text, "m.toml")
    assert message in str(err.value)
    assert str(err.value).startswith("m.toml: ")


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
    assert unread == []
