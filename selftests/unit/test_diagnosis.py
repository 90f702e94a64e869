"""How the service checks read what they were told: which log findings belong to a node's start, and
how a finish_reason of `length` reads (the answer cut short, and by what)."""

from __future__ import annotations

import pytest

from gb10check.errors import ServiceError
from gb10check.judging.diagnosis import expect_finished, explain, findings_in, log_findings, startup_findings, stopped
from gb10check.judging.hints import Catalogue
from gb10check.judging.verdict import CheckFailed, Evidence
from gb10check.reading import probes
from gb10check.reading.parsers.vllm_log import expected_milestones, milestones, parse_docker_log
from gb10check.reading.snapshot import Snapshot
from gb10check.reading.transport import CommandResult
from gb10check.service.asks import REASONING

START = [
    "2026-12-01T09:00:09.000000000Z (EngineCore_DP0 pid=187) INFO 12-01 09:00:09 [parallel_state.py:1411] rank 0 "
    "in world size 2 is assigned as DP rank 0, PP rank 0, PCP rank 0, TP rank 0, EP rank 0",
    "2026-12-01T09:00:10.000000000Z (EngineCore_DP0 pid=187) INFO 12-01 09:00:10 [gpu_model_runner.py:3562] "
    "Starting to load model Qwen/Qwen3.8-Flash-Next-FP8...",
    "2026-12-01T09:14:21.700000000Z (APIServer pid=1) INFO:     Application startup complete.",
]
# vllm/entrypoints/serve/exception_handling/error_response.py:25 (vLLM 0.33, VLLM_LOGGING_LEVEL=DEBUG)
WRONG_MODEL = (
    "2026-12-01T09:17:30.120000000Z (APIServer pid=1) DEBUG 12-01 09:17:30 [error_response.py:25] "
    "create_error_response called with VLLMNotFoundError: The model `qwen3-next` does not exist."
)
NCCL_LOST = (
    "2026-12-01T09:00:09.500000000Z host:187:412 [0] transport/net_ib.cc:2543 NCCL WARN NET/IB: Got completion "
    "from peer 169.254.159.206<45123> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) reqSize=1048576"
)


def _findings(raw: list[str]):
    lines = parse_docker_log("\n".join(raw) + "\n")
    return findings_in("r0", lines, Catalogue.load()), milestones(lines)


def test_a_finding_after_the_start_is_not_the_starts_verdict():
    """A client's wrong-model 404 three minutes after "Application startup complete." is the log check's
    finding; a start that failed for its own reasons keeps its own hint."""
    found, reached = _findings([*START, WRONG_MODEL])
    assert [f.hint for f in found] == ["model-not-registered"]
    assert startup_findings(found, "r0", reached, expected_milestones(0, eager=False)[-1]) == []


def test_a_finding_during_the_start_explains_it():
    found, reached = _findings([START[0], NCCL_LOST, START[1]])  # it never reached serving
    last = expected_milestones(0, eager=False)[-1]
    assert [f.hint for f in startup_findings(found, "r0", reached, last)] == ["nccl-peer-lost"]
    found, reached = _findings([START[0], NCCL_LOST, *START[1:], WRONG_MODEL])  # before serving: still the start's
    assert [f.hint for f in startup_findings(found, "r0", reached, last)] == ["nccl-peer-lost"]
    assert startup_findings(found, "r1", reached, last) == []  # another node's are its own


KV = (
    "2026-12-01T09:12:10.000000000Z (EngineCore_DP0 pid=187) INFO 12-01 09:12:10 [gpu_worker.py:375] "
    "Available KV cache memory: 7.62 GiB"
)
# PyTorch's watchdog (selftests/data/commands/vllm.rank_timeout_lines.from_source.txt)
WATCHDOG = (
    "2026-12-01T{}.000000000Z [rank0]:[E1201 09:00:00.000000000 ProcessGroupNCCL.cpp:632] [PG ID 0 PG GUID 0 "
    "Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, OpType=ALLREDUCE, NumelIn=1, "
    "NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out."
)


def test_a_collective_timeout_is_the_load_skew_while_starting_and_a_wedged_rank_once_serving():
    """The same watchdog line: before the rank's KV cache was sized, the faster rank waited on a slower one
    loading its weights (the distributed timeout is too short); after it, a rank stopped while serving."""
    found, _ = _findings([*START[:2], WATCHDOG.format("09:10:10")])
    assert [f.hint for f in found] == ["distributed-timeout-short"]
    found, _ = _findings([*START[:2], KV, START[2], WATCHDOG.format("10:40:00")])
    assert [f.hint for f in found] == ["rank-wedged"]
    found, _ = _findings([WATCHDOG.format("10:40:00")])  # the start is out of view (--tail): it served
    assert [f.hint for f in found] == ["rank-wedged"]
    rpc = "2026-12-01T10:40:01.000000000Z TimeoutError: RPC call to sample_tokens timed out."
    found, _ = _findings([*START[:2], KV, START[2], rpc])
    assert [(f.hint, f.line) for f in found] == [("rank-wedged", rpc[31:])]


def _snapshot(node: str, raw: list[str]) -> Snapshot:
    inspect = '[{"Name": "/vllm", "State": {"Status": "running", "Running": true}, "Config": {"Image": "x"}}]'
    return Snapshot(
        node,
        {
            probes.CONTAINER.name: CommandResult("docker container inspect vllm", 0, inspect, "", 0.1, False),
            probes.DOCKER_LOGS.name: CommandResult("docker logs", 0, "\n".join(raw) + "\n", "", 0.1, False),
        },
    )


def test_the_rank_that_stopped_first_is_the_earliest_timeout_since_the_ranks_started():
    """Across the nodes, by Docker's timestamps: each rank's first timeout once it served (not the load
    skew of its start), the earliest first; a rank whose log shows none is not in the order."""
    serving = [*START[:2], KV, START[2]]
    rpc = "2026-12-01T10:40:00.500000000Z TimeoutError: RPC call to execute_model timed out."
    snapshots = {
        "r0": _snapshot("r0", [*serving, WATCHDOG.format("10:40:02"), rpc]),
        "r1": _snapshot("r1", [*START[:2], WATCHDOG.format("09:10:00"), KV, START[2]]),  # its start's: skew
        "r2": _snapshot("r2", [*serving, WATCHDOG.format("10:40:01")]),
        "r3": _snapshot("r3", [*serving, rpc.replace("10:40:00.5", "10:40:00.9")]),
    }
    order = stopped(snapshots)
    assert [(name, stop.kind) for stop, name in order] == [("r3", "rpc"), ("r2", "collective"), ("r0", "collective")]
    assert order[1][0].shown() == "NCCL watchdog (ALLREDUCE SeqNum=3, 600012 ms)"


def test_an_api_failure_names_the_rank_that_stopped_first_first():
    """explain() lists the findings in this order: the ranks' timeouts by time, the other findings in place."""
    serving = [*START[:2], KV, START[2]]
    snapshots = {
        "r0": _snapshot("r0", [*serving, WATCHDOG.format("10:40:02")]),
        "r1": _snapshot("r1", [*serving, NCCL_LOST]),
        "r2": _snapshot("r2", [*serving, WATCHDOG.format("10:40:01")]),
    }
    found = log_findings(snapshots, Catalogue.load())
    assert [(f.node, f.hint) for f in found] == [("r2", "rank-wedged"), ("r1", "nccl-peer-lost"), ("r0", "rank-wedged")]
    # the API's failure quotes the first rank's timeout and counts the others (one line per check)
    message = str(explain(ServiceError("POST /v1/chat/completions: no complete answer within 3 s"), found))
    assert "r2's log shows [rank-wedged]" in message and "r0's log shows" not in message, message
    assert "r1's log shows [nccl-peer-lost]" in message and "the first of 2 ranks' timeouts" in message, message


@pytest.mark.parametrize(
    ("used", "says"),
    [
        (2048, "it used all 2048 tokens the suite asked for at most"),
        (300, "the server stopped it at 300 tokens, below the 2048 asked"),
        (None, "the server did not say how many tokens it generated"),
    ],
)
def test_length_is_the_answer_cut_short_and_says_by_what(used, says):
    evidence = Evidence(node="r0")
    with pytest.raises(CheckFailed) as caught:
        expect_finished(evidence, "length", {"completion_tokens": used} if used else {}, REASONING)
    assert caught.value.hint_ids == ("answer-cut-short",) and says in str(caught.value), str(caught.value)
    expect_finished(evidence, "stop", {"completion_tokens": 207}, REASONING)  # a finished answer passes
    assert [i.ok for i in evidence.items] == [False, True]
