"""NCCL's own collective between the nodes (optional): the inventory's nccl-tests command (`[nccl_tests]`,
e.g. mpirun ... all_gather_perf) from rank 0, with a buffer bounded by the nodes' MemAvailable (a
16 GiB buffer has frozen a node), bounded in time; every result validated, and the bus bandwidth
against the topology's floor (NVIDIA's: 21.875 GB/s direct or through a switch, 10 on a ring) or
[nccl_tests] min_busbw_gbs (a `performance` verdict). It competes with vLLM's NCCL: skipped while the
deployment's container runs, as the bandwidth test is. Without [nccl_tests]: skipped, saying so."""

import shlex

import pytest

from gb10check.errors import CommandTimeout, clip
from gb10check.judging.fit import GIB
from gb10check.reading import probes
from gb10check.reading.parsers.nccl_tests import parse_nccl_test

pytestmark = pytest.mark.network
MIB = 1024**2
SHARE = 8  # the buffer is at most this fraction of the lowest MemAvailable (send, receive and NCCL's own)


def _buffer_bytes(cluster, inventory):
    """The largest power-of-two MiB buffer within max_buffer_gib and 1/SHARE of the lowest MemAvailable."""
    lowest = min(cluster.snapshot(n.name).fact(probes.MEMINFO).available for n in inventory.nodes)
    limit = min(inventory.nccl_tests.max_buffer_gib * GIB, lowest / SHARE)
    size = MIB
    while size * 2 <= limit:
        size *= 2
    return size, lowest


@pytest.fixture(scope="session")
def collective(cluster, inventory, skip_while_serving):
    """The one nccl-tests run of the session: (command, result, buffer bytes, lowest MemAvailable)."""
    cfg = inventory.nccl_tests
    if cfg is None:
        pytest.skip("the inventory has no [nccl_tests] (the command that runs nccl-tests from rank 0): not measured")
    skip_while_serving([n.name for n in inventory.nodes], "an NCCL collective")
    size, lowest = _buffer_bytes(cluster, inventory)
    command = f"{cfg.command} -b {size} -e {size} -f 2 -g 1"
    rank0 = cluster[inventory.api_node.name]
    res = rank0.run(command, cfg.timeout)
    if res.timed_out:
        raise CommandTimeout(f"{rank0.name}: `{clip(command, 200)}` did not finish within {cfg.timeout:g} s")
    return command, res, size, lowest


@pytest.mark.hints("nccl-tests-failed")
def test_nccl_collective_runs(collective, inventory, evidence):
    """The NCCL collective runs, one rank on every node.

    `[nccl_tests]` names your nccl-tests command (e.g. `mpirun ... all_gather_perf`): it runs from rank 0 with a
    buffer bounded by the nodes' MemAvailable (an eighth of the lowest) and `max_buffer_gib`, within its timeout; it
    exits 0, nccl-tests' validation finds no wrong or out-of-bounds result, and it has one rank on every node.
    Without `[nccl_tests]`: skipped; skipped too while the deployment's container runs, as the bandwidth test is."""
    command, res, size, lowest = collective
    rank0_name = inventory.api_node.name  # where the command ran: its hint's lines say so
    evidence.expect(
        res.rc == 0,
        what=f"`{clip(command, 160)}` from rank 0 ({size // MIB} MiB buffer, MemAvailable {lowest / GIB:.1f} GiB)",
        expected="exit 0",
        found=f"exit {res.rc}",
        detail=clip((res.stdout + res.stderr).strip(), 400),
        context={"command": command, "node": rank0_name},
    )
    result = parse_nccl_test(res.stdout, shlex.split(command)[0])
    evidence.expect(
        result.wrong == 0 and result.out_of_bounds == 0,
        what="the collective's results (nccl-tests' validation)",
        expected="0 wrong, 0 out of bounds",
        found=f"{result.wrong} wrong, {result.out_of_bounds} out of bounds over {len(result.rows)} size(s)",
        context={"command": command, "node": rank0_name},
    )
    # a collective over some of the nodes proves nothing about the others' links
    short = {h.split(".")[0] for h in result.hosts}  # nccl-tests prints gethostname(): named as the nodes are?
    missing = [n.name for n in inventory.nodes if n.name.split(".")[0] not in short]
    named = len(missing) < inventory.size  # some host is an inventory node's name: the rest are comparable
    evidence.expect(
        len(result.hosts) == inventory.size,
        what="the ranks of the collective (nccl-tests' `Rank N ... on HOST` lines)",
        expected=f"one rank on each of the {inventory.size} nodes",
        found=f"{len(result.hosts)} rank(s)"
        + (f", on {', '.join(result.hosts)}" if result.hosts else "")
        + (f"; none on {', '.join(missing)}" if named and missing else ""),
        hints=("nccl-tests-partial",),
        context={"command": command, "node": rank0_name},
    )


@pytest.mark.performance
@pytest.mark.hints("nccl-busbw-low")
def test_nccl_collective_bandwidth(collective, inventory, evidence):
    """NCCL bus bandwidth at or above the topology's floor.

    nccl-tests' average bus bandwidth, recorded, against `min_busbw_gbs` of `[nccl_tests]`, by default NVIDIA's floor
    for the topology (21.875 GB/s direct or through a switch, 10 GB/s on a ring)."""
    command, res, size, _ = collective
    rank0_name = inventory.api_node.name
    if res.rc != 0:
        pytest.skip("the collective failed: no figure (see test_nccl_collective_runs)")
    result = parse_nccl_test(res.stdout, shlex.split(command)[0])
    evidence.figure("nccl_busbw_gbs", result.avg_busbw)
    floor, source = inventory.nccl_busbw_floor()
    evidence.expect(
        result.avg_busbw >= floor,
        what=f"NCCL bus bandwidth across {inventory.size} nodes ({size // MIB} MiB, nccl-tests' average)",
        expected=f">= {floor:g} GB/s ({source})",
        found=f"{result.avg_busbw:g} GB/s ({result.avg_busbw * 8:.1f} Gb/s), peak {result.peak_busbw:g}",
        context={"command": command, "node": rank0_name},
    )
