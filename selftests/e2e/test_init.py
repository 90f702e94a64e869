"""`gb10check init` on the simulated clusters: run on rank 0 with only what a user knows (the nodes'
addresses and the SSH login), it writes an inventory that says what the sim's own says (nodes, ranks,
rails, topology, a ring's cable order, the control plane, the service and the deployment); the suite
passes on it; `--check` finds a cable moved since, and an inventory is never overwritten."""

from __future__ import annotations

import ipaddress
import subprocess
import sys
from pathlib import Path

import pytest

from gb10check import inventory as inv
from gb10check.commands import init as init_command
from selftests.e2e.by_hand import up_by_hand

pytestmark = pytest.mark.sim


@pytest.fixture(scope="module")
def pair():
    yield from up_by_hand("healthy")


@pytest.fixture(scope="module", params=["healthy-ring4", "healthy-switch8"])
def larger(request):
    yield from up_by_hand(request.param)


def _init(sim, out: Path, *extra: str, named: bool = True) -> tuple[int, str]:
    """init run in rank 0's namespace, rank 0 read at its address too (the sim's /sys is its sshd's); the
    other nodes named in rank order, or (named=False) found on the fabric."""
    from sim import netns

    hosts = [n.host for n in sorted(sim.inventory.nodes, key=lambda n: n.rank)]
    others = hosts[1:] if named else []
    args = ["--rank0", hosts[0], *others, "--user", "root", "--key", str(sim.dir / "client_key")]
    args += ["--known-hosts", str(sim.dir / "known_hosts"), "--no-ssh-config", "-o", str(out), *extra]
    said: list[str] = []
    previous = netns.enter(sim.api_namespace)
    try:
        rc = init_command.main(args, print_=said.append, when="2026-12-07 08:00 UTC")
    finally:
        netns.leave(previous)
    return rc, "".join(said)


def _members(inventory: inv.Inventory) -> dict[str, set[tuple[str, str, str, str]]]:
    return {
        str(r.subnet): {(m.node, m.netdev, m.rdma_device, str(ipaddress.ip_interface(m.address))) for m in r.members}
        for r in inventory.rails
    }


def _says_what_the_sim_says(written: inv.Inventory, sim) -> None:
    own = sim.inventory
    assert [(n.name, n.rank, n.host) for n in written.nodes] == [
        (n.name, n.rank, n.host) for n in sorted(own.nodes, key=lambda n: n.rank)
    ]
    assert written.topology == own.topology
    assert _members(written) == _members(own)
    if own.topology == "ring":  # the cables in the same order: each rail's pair of nodes, rail by rail
        assert [sorted(r.nodes) for r in written.rails] == [sorted(r.nodes) for r in own.rails]
    names = [n.name for n in own.nodes]
    assert [written.control_netdev(n) for n in names] == [own.control_netdev(n) for n in names]
    assert written.master_address == own.master_address
    assert written.service is not None and own.service is not None
    for key in ("served_model_name", "model", "max_model_len", "reasoning_parser", "tool_call_parser", "base_url"):
        assert getattr(written.service, key) == getattr(own.service, key), key
    assert written.deployment is not None and own.deployment is not None
    for key in ("compose_file", "container", "image", "hf_cache"):
        assert getattr(written.deployment, key) == getattr(own.deployment, key), key


def _suite_passes(sim, inventory: Path, tmp_path: Path) -> None:
    """`gb10check all` on rank 0 with the inventory init wrote: every check passes or skips."""
    run = subprocess.run(
        ["ip", "netns", "exec", sim.api_namespace, sys.executable, "-m", "gb10check.commands.cli", "all",
         f"--cluster={inventory}", f"--reports-dir={tmp_path / 'reports'}", "-q", "-p", "no:cacheprovider"],
        capture_output=True, text=True, timeout=900, cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert " passed" in run.stdout.splitlines()[-1], run.stdout[-2000:]


def test_init_on_a_pair_writes_the_sims_inventory_and_the_suite_passes_on_it(pair, tmp_path):
    out = tmp_path / "cluster.toml"
    rc, said = _init(pair, out)
    assert rc == 0, said
    assert '= "TODO"' not in out.read_text() and f"wrote {out}: 2 nodes, pair, 2 rails" in said, said
    text = out.read_text()
    assert "# rank 0's NCCL_SOCKET_IFNAME (the launch plan)" in text  # every value says where it came from
    written = inv.load_inventory(out)
    _says_what_the_sim_says(written, pair)
    _suite_passes(pair, out, tmp_path)
    # run again with the inventory there: nothing differs, nothing written
    before = out.read_bytes()
    rc, said = _init(pair, out)
    assert (rc, out.read_bytes()) == (0, before), said
    assert "the cluster is as the inventory says" in said


def test_init_check_names_the_drift_and_never_overwrites(pair, tmp_path):
    out = tmp_path / "cluster.toml"
    assert _init(pair, out)[0] == 0
    moved = out.read_text().replace('"192.168.101.11/24"', '"192.168.101.12/24"')
    out.write_text(moved)
    rc, said = _init(pair, out, "--check")
    assert rc == 1, said
    assert "the rail on 192.168.101.0/24 changed" in said and "192.168.101.12/24" in said, said
    assert out.read_text() == moved  # never overwritten
    rc, said = _init(pair, tmp_path / "absent.toml", "--check")
    assert rc == 4 and not (tmp_path / "absent.toml").exists(), said


def test_init_on_a_ring_and_a_switch_writes_what_the_sim_says_and_the_suite_passes_on_it(larger, tmp_path):
    out = tmp_path / "cluster.toml"
    rc, said = _init(larger, out)
    assert rc == 0, said
    n = len(larger.inventory.nodes)
    assert f"{n} nodes, {larger.inventory.topology}" in said, said
    _says_what_the_sim_says(inv.load_inventory(out), larger)
    _suite_passes(larger, out, tmp_path)


def test_init_with_no_node_named_finds_them_on_the_fabric(pair, tmp_path):
    """The pair's other node answers the sweep on a rail; it is read at its LAN address, as the sim names it."""
    out = tmp_path / "cluster.toml"
    rc, said = _init(pair, out, named=False)
    assert rc == 0, said
    other = next(n for n in pair.inventory.nodes if n.rank == 1)
    assert f"{other.name} answered on the fabric at " in said and f"read at {other.host}" in said, said
    _says_what_the_sim_says(inv.load_inventory(out), pair)


def test_init_with_no_node_named_finds_a_rings_far_nodes_and_a_switchs_eight(larger, tmp_path):
    """Breadth first: a ring's far node through its near neighbours' cables, a switch's seven others on its
    rails; the inventory says what the sim's says (nodes and ranks in hostname order, as the sim numbers them)."""
    out = tmp_path / "cluster.toml"
    rc, said = _init(larger, out, named=False)
    assert rc == 0, said
    assert said.count(" answered on the fabric at ") == len(larger.inventory.nodes) - 1, said
    _says_what_the_sim_says(inv.load_inventory(out), larger)


@pytest.fixture(scope="module")
def compose_elsewhere():
    yield from up_by_hand("compose-outside-usual-places")


def test_init_reads_the_deployment_from_the_running_container_when_no_compose_file_is_found(
    compose_elsewhere, tmp_path
):
    """The compose file is deeper than init looks: the vLLM container that runs names it (its Compose label)
    and its launch plan, read as `gb10check plan --running` reads it, gives the service; the suite passes."""
    out = tmp_path / "cluster.toml"
    rc, said = _init(compose_elsewhere, out)
    assert rc == 0, said
    text = out.read_text()
    assert "the vLLM container running on rank 0" in text and "docker inspect vllm-qwen38" in text, text
    _says_what_the_sim_says(inv.load_inventory(out), compose_elsewhere)
    _suite_passes(compose_elsewhere, out, tmp_path)


@pytest.fixture(scope="module")
def docker_run():
    yield from up_by_hand("docker-run-launcher")


def test_init_on_a_docker_run_launcher_names_the_container_and_the_launch_script_to_confirm(docker_run, tmp_path):
    """No compose file: the container that runs (docker ps) gives the container and the image; the launch
    script that starts vLLM at the usual places is named in the TODO the reader refuses until it is filled."""
    out = tmp_path / "cluster.toml"
    rc, said = _init(docker_run, out)
    assert rc == 0, said
    text = out.read_text()
    own = docker_run.inventory.deployment
    assert own is not None and own.launch.script is not None
    assert f'container = "{own.container}"' in text and f'image = "{own.image}"' in text, text
    todo = f'launch = "TODO"  # TODO: {own.container} runs, started without Compose: '
    assert todo + f'launch = {{ script = "{own.launch.script}" }}' in text, text
    with pytest.raises(inv.InventoryError, match="TODO"):
        inv.load_inventory(out)
