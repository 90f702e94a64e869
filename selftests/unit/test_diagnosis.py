"""How the service checks read what they were told: which log findings belong to a node's start, and
how a finish_reason of `length` reads (the answer cut short, and by what)."""

from __future__ import annotations

import pytest

from gb10check.asks import REASONING
from gb10check.diagnosis import expect_finished, findings_in, startup_findings
from gb10check.hints import Catalogue
from gb10check.parsers.vllm_log import expected_milestones, milestones, parse_docker_log
from gb10check.verdict import CheckFailed, Evidence

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
