"""`gb10check explain`: logs as users have them, read by the service stage's reader, rows judged by phase.

The lines are in the formats of vLLM's, NCCL's, PyTorch's and Ray's own logger calls; the field corpus
(selftests/data/logs/field, with provenance) holds whole logs as their authors posted them."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime

import pytest

from gb10check.commands.explain import explain
from gb10check.judging.hints import Catalogue
from gb10check.reading.parsers.vllm_log import nccl_channels, parse_docker_log

CATALOGUE = Catalogue.load()
ASSIGNED = "(EngineCore_DP0 pid=93) INFO 12-03 10:00:00 [parallel_state.py:1] rank 0 in world size 2 is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0"  # noqa: E501
KV = "(EngineCore_DP0 pid=93) INFO 12-03 10:05:00 [gpu_worker.py:1] Available KV cache memory: 40.1 GiB"
SHM = (
    "(EngineCore_DP0 pid=93) INFO 12-03 10:06:00 [shm_broadcast.py:466] No available shared memory broadcast "
    "block found in 60 seconds. This typically happens when some processes are hanging or doing some "
    "time-consuming work (e.g. compilation, weight/kv cache quantization)."
)
GLOO_TIMEOUT = "[rank1]:[E1203 10:30:00.1 ProcessGroupGloo.cpp:143] Gloo timed out waiting 1800000ms for recv"
COMPILE = "(EngineCore_DP0 pid=93) INFO 12-03 10:02:00 [backends.py:1] Dynamo bytecode transform time: 12.3 s"


def _rows(*lines: str) -> list[str]:
    return [r.hint for r in explain("\n".join(lines) + "\n", "t.log", CATALOGUE).rows]


def test_every_prefix_users_paste_is_read_through():
    text = (
        "vllm-head-1  | 2025-11-03T10:00:00.123456789Z \x1b[36m(RayWorkerWrapper pid=812, ip=10.0.0.2)\x1b[0m "
        "INFO hello\r\n"
        'vllm-head-1  | 2025-11-03T10:00:01.000000000Z   File "x.py", line 1\r\n'
        "vllm-head-1  | progress 10%\rprogress 100%\n"
    )
    lines = parse_docker_log(text)
    assert [(ln.number, ln.text, ln.process) for ln in lines] == [
        (1, "(RayWorkerWrapper pid=812, ip=10.0.0.2) INFO hello", "RayWorkerWrapper pid=812, ip=10.0.0.2"),
        (2, '  File "x.py", line 1', None),
        (3, "progress 100%", None),
    ]
    assert lines[0].at == datetime(2025, 11, 3, 10, 0, 0, 123456, tzinfo=UTC)
    assert lines[2].at == lines[1].at  # an unstamped line keeps the time before it


def test_a_line_a_terminal_wrapped_is_joined_again():
    long = "spark1:93:93 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0 and more words here"
    width = 80
    wrapped = [long[:width], long[width:], "x" * width, "y" * width, "INFO next record"]
    lines = parse_docker_log("\n".join(wrapped))
    assert lines[0].text == long and lines[0].number == 1
    assert [ln.text for ln in lines[1:]] == ["x" * width + "y" * width, "INFO next record"]


def test_nccl_channels_name_the_network_per_channel():
    ib = [
        "h:1:1 [0] NCCL INFO Using network IBext_v10",
        "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IBext_v10/0/GDRDMA",
        "h:1:1 [0] NCCL INFO Channel 01/0 : 1[0] -> 0[0] [receive] via NET/IBext_v10/1/GDRDMA",
    ]
    found = nccl_channels(parse_docker_log("\n".join(ib)))
    assert found is not None and (found.network, found.via, found.sockets) == ("IBext_v10", {"NET/IBext_v10": 2}, False)
    sock = nccl_channels(parse_docker_log("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0"))
    assert sock is not None and sock.sockets
    assert nccl_channels(parse_docker_log("INFO nothing of NCCL")) is None
    assert _rows(*ib) == []
    assert _rows("h:1:1 [0] NCCL INFO Using network Socket") == ["nccl-using-sockets"]


def test_a_gloo_timeout_after_the_ranks_connected_is_the_distributed_timeout_not_ipv6():
    assert _rows(GLOO_TIMEOUT) == ["gloo-ipv6-timeout"]  # never connected: the address family, a firewall
    assert _rows(ASSIGNED, GLOO_TIMEOUT) == ["distributed-timeout-short"]  # connected, still starting: the skew
    assert _rows(ASSIGNED, KV, GLOO_TIMEOUT) == ["rank-wedged"]  # connected and serving: a rank stopped
    refused = "[E1203 ProcessGroupGloo.cpp:144] Gloo connectFullMesh failed with ... Connection refused"
    assert "gloo-ipv6-timeout" in _rows(ASSIGNED, refused)  # a refusal is no timeout: still the network's


def test_a_shared_memory_stall_while_compiling_is_the_start_at_work():
    assert _rows(ASSIGNED, KV, SHM) == ["shm-broadcast-stall"]
    assert _rows(ASSIGNED, COMPILE, SHM) == ["startup-retuning"]
    assert _rows(ASSIGNED, SHM) == ["shm-broadcast-stall"]  # starting, nothing compiling: a worker hangs


def test_a_log_that_ends_compiling_says_it_is_progressing():
    e = explain("\n".join([ASSIGNED, COMPILE]) + "\n", "t.log", CATALOGUE)
    assert [r.hint for r in e.rows] == ["startup-retuning"] and e.notes
    assert e.rows[0].line == 2


def test_the_first_rank_to_time_out_is_named_with_its_process_and_line():
    later = "(RayWorkerWrapper pid=2, ip=10.0.0.2) [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600100 milliseconds before timing out."  # noqa: E501
    first = "2025-01-01T00:00:00Z " + later.replace("pid=2, ip=10.0.0.2", "pid=7, ip=10.0.0.3")
    e = explain("\n".join(["2025-01-01T00:00:05Z " + later, first]) + "\n", "t.log", CATALOGUE)
    assert e.first_stop is not None and "pid=7" in e.first_stop and "line 2" in e.first_stop


def test_a_node_s_bytes_are_shown_not_obeyed_and_secrets_masked():
    e = explain("HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123 Gloo timed out\x1b]0;owned\x07\u202e\n", "t", CATALOGUE)
    assert e.rows and "hf_abcdefghijklmnop" not in e.rows[0].text
    out = subprocess.run(
        [sys.executable, "-m", "gb10check.commands.cli", "explain", "--json", "-"],
        input="Gloo timed out \u202e\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1 and "\u202e" not in out.stdout
    assert json.loads(out.stdout)["rows"][0]["hint"] == "gloo-ipv6-timeout"


@pytest.mark.parametrize(("args", "rc"), [(["/nonexistent.log"], 4), (["--bogus"], 4), (["-"], 0)])
def test_explain_exit_status(args, rc):
    out = subprocess.run(
        [sys.executable, "-m", "gb10check.commands.cli", "explain", *args],
        input="INFO all well\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == rc, out.stderr
    if rc == 4 and args[0].startswith("/"):
        assert "cannot read /nonexistent.log" in out.stderr


def test_the_known_issues_a_log_alone_shows_are_rows_and_advice_a_note():
    """NCCL 2.28.9 with graphs captured and NCCL's failed dma-buf probe (NVIDIA/nccl #2213's line): the two
    catalogue entries whose every fact a log names; the wheel's wedge needs where the library comes from,
    which no log says (preflight reads it); NCCL before 2.29.3 is advice, a note."""
    text = (
        "(EngineCore_DP0 pid=93) INFO 12-07 10:00:01 [pynccl.py:111] vLLM is using nccl==2.28.9\n"
        "(EngineCore_DP0 pid=93) INFO 12-07 10:00:02 [gpu_model_runner.py:4] Graph capturing finished in 12 secs\n"
        "spark:1:1 [0] NCCL INFO dlvsym failed on mlx5dv_reg_dmabuf_mr - /lib/aarch64-linux-gnu/libmlx5.so: "
        "undefined symbol: mlx5dv_reg_dmabuf_mr, version MLX5_1.25\n"
    )
    e = explain(text, "pasted", Catalogue.load())
    assert [(r.hint, r.line) for r in e.rows] == [("nccl-2-28-9-cuda-graph-deadlock", 1), ("libmlx5-without-dmabuf", 3)]
    assert any("nccl-before-2-29-3-arm-hang" in n for n in e.notes)
    eager = text.replace("Graph capturing finished in 12 secs", "Cudagraph is disabled under eager mode")
    assert [r.hint for r in explain(eager, "pasted", Catalogue.load()).rows] == ["libmlx5-without-dmabuf"]
