"""The model answers correctly, and under load: a small canary of questions with one checkable
answer each (arithmetic, a fact, a JSON shape) at temperature 0: a broken quantization or tensor-
parallel layout answers fluently and wrongly, which every other check passes. Then as many requests
at once as --max-num-seqs admits (capped by service.max_concurrent_requests), each completing with
its usage. --soak=MINUTES keeps that load and fails the moment generated tokens stop advancing."""

import threading
import time

import pytest

from fixtures.cluster import SETTINGS
from gb10check.errors import GB10Error, ServiceError
from gb10check.judging.diagnosis import expect_answered, expect_finished, explain
from gb10check.reading.parallel import map_parallel
from gb10check.reading.parsers.vllm_metrics import parse_vllm_metrics
from gb10check.service import asks

pytestmark = pytest.mark.service

VLLM_DEFAULT_MAX_NUM_SEQS = 256  # vLLM's default when the command does not set --max-num-seqs


@pytest.mark.hints("model-answers-wrong")
@pytest.mark.parametrize("canary", asks.CANARIES, ids=[c.ask.name.removeprefix("canary-") for c in asks.CANARIES])
def test_canary_answer(api_node, canary, answer, evidence):
    """The canary question gets the right answer.

    One of a canary of questions with one checkable answer each (arithmetic, a fact, a JSON shape), asked at
    temperature 0, gets its answer. finish_reason `length` is judged first, as in every chat check: the answer cut
    short, all the tokens asked used, or the server stopped short of them."""
    reply = answer(canary.ask)
    expect_answered(evidence, reply.status, reply.error, f"chat completion ({canary.ask.prompt!r})")
    expect_finished(evidence, reply.finish_reason, reply.usage, canary.ask)
    evidence.expect(
        canary.correct(reply.content),
        what=f"the answer to {canary.ask.prompt!r} (temperature 0)",
        expected=canary.expected,
        found=repr(reply.content.strip()[:160]) or "an empty answer",
    )


def _concurrency(cluster, inventory):
    """--max-num-seqs of rank 0's command (vLLM's default when unset), capped by the inventory."""
    seqs, where = VLLM_DEFAULT_MAX_NUM_SEQS, "vLLM's default"
    if inventory.deployment is not None:
        try:
            value = cluster.plan(inventory.api_node.name).vllm.value("--max-num-seqs")
            if value is not None and value.isdigit():
                seqs, where = int(value), "--max-num-seqs"
        except GB10Error:
            pass  # the launch plan's own checks say why it cannot be read
    cap = inventory.service.max_concurrent_requests
    return min(seqs, cap), f"{where} {seqs}" + (
        f", capped at service.max_concurrent_requests {cap}" if seqs > cap else ""
    )


@pytest.mark.hints("load-requests-failed")
def test_concurrent_requests_complete(api_node, api, cluster, inventory, ready, answers, findings, evidence):
    """Concurrent requests all complete.

    `--max-num-seqs` requests at once (rank 0's, vLLM's default 256 when unset, capped by
    `service.max_concurrent_requests`), each completing with its usage."""
    n, why = _concurrency(cluster, inventory)
    request = asks.Ask("load", "Count from 1 to 20, separated by commas.", thinking=False, max_tokens=128)

    def one(_):
        try:
            return api.chat(**request.request(inventory.service.served_model_name))
        except GB10Error as exc:
            return exc

    start = time.monotonic()
    outcomes = map_parallel(one, range(n), name="gb10check-load")
    seconds = time.monotonic() - start
    errors = [o for o in outcomes if isinstance(o, ServiceError)]
    if len(errors) == n:  # no request got an answer: the API is down, not overloaded
        raise explain(errors[0], findings)
    refused = [o for o in outcomes if not isinstance(o, GB10Error) and o.status != 200]
    if len(refused) == n:  # every request refused alike: what the status means, not the load's fault
        expect_answered(evidence, refused[0].status, refused[0].error, f"{n} requests at once ({why})")
    failures = [
        f"no answer: {str(o)[:120]}" if isinstance(o, GB10Error)
        else f"HTTP {o.status}: {o.error[:120]}" if o.status != 200
        else "no usage" if not o.usage.get("completion_tokens") else ""
        for o in outcomes
    ]  # fmt: skip
    failures = [f for f in failures if f]
    evidence.figure("load_seconds", seconds)
    evidence.expect(
        not failures,
        what=f"{n} requests at once ({why})",
        expected="each completes with its usage",
        found=f"{n - len(failures)} of {n} completed in {seconds:.1f} s"
        + (f"; {len(failures)} failed, e.g. {failures[0]}" if failures else ""),
    )


def _generated(api):
    answer = api.get("/metrics")
    return parse_vllm_metrics(answer.text) if answer.status == 200 else None


@pytest.mark.hints("engine-stuck")
def test_soak(api_node, request, api, cluster, inventory, evidence):
    """A steady load for --soak minutes completes.

    With `--soak=MINUTES`, that load kept up that long: it fails when the generated tokens stop advancing
    (vllm:generation_tokens_total on /metrics) or a request fails. Without `--soak`: skipped."""
    minutes = request.config.stash[SETTINGS].soak_minutes
    if not minutes:
        pytest.skip("no --soak=MINUTES given: add one (e.g. --soak=20) for a steady load that long")
    request.getfixturevalue("ready")
    n, why = _concurrency(cluster, inventory)
    stop = threading.Event()
    done, failed = [0], []
    ask = asks.Ask("soak", "Count from 1 to 40, separated by commas.", thinking=False, max_tokens=256)

    def worker(_):
        while not stop.is_set():
            try:
                reply = api.chat(**ask.request(inventory.service.served_model_name))
                done[0] += 1 if reply.status == 200 else 0
                if reply.status != 200:
                    failed.append(f"HTTP {reply.status}: {reply.error[:100]}")
            except GB10Error as exc:
                failed.append(str(exc)[:160])

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    # /metrics every few seconds; tokens must move within twice the read timeout (a stream may be silent
    # that long) and three polls, under load
    poll = min(5.0, inventory.service.read_timeout)
    stall = max(3 * poll, 2 * inventory.service.read_timeout)
    began = time.monotonic()
    end, last, last_change = began + minutes * 60, None, began
    verdict = ""
    try:
        while time.monotonic() < end and not verdict:
            time.sleep(poll)
            try:
                m = _generated(api)
            except ServiceError as exc:
                verdict = f"/metrics did not answer: {exc}"
                break
            if m is not None and m.generation_tokens != last:
                last, last_change = m.generation_tokens, time.monotonic()
            elif time.monotonic() - last_change > stall:
                running = f"{m.running:g}" if m else "?"
                verdict = f"no token generated for {stall:g} s with {running} request(s) running"
    finally:
        stop.set()
    evidence.figure("soak_seconds", time.monotonic() - began)  # less than the soak's length: it stopped at a stall
    evidence.figure("soak_requests", done[0])
    evidence.figure("soak_tokens", last or 0)
    evidence.expect(
        not verdict and not failed,
        what=f"steady load for {minutes:g} min ({n} at once, {why})",
        expected="tokens keep advancing, every request answered",
        found=verdict
        or (f"{len(failed)} request(s) failed, e.g. {failed[0]}" if failed else f"{done[0]} requests answered"),
    )
