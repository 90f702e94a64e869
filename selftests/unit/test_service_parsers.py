"""What the service checks read, on vLLM's own outputs (selftests/data): reasoning in either field,
tool calls merged from stream fragments, decode figures as `vllm bench serve` defines them on a
stream with known arrival times, SSE framing, /metrics, and the container log's milestones."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gb10check.errors import ParseError
from gb10check.reading.parsers.vllm_api import (
    decode_metrics,
    merge_tool_call_deltas,
    parse_sse,
    parse_version,
    reasoning_of,
    reasoning_tokens,
    sse_chunks,
    tool_calls_of,
)
from gb10check.reading.parsers.vllm_log import (
    expected_milestones,
    graph_mode,
    meaningful_text,
    milestones,
    nccl_transport,
    nccl_version,
    parse_docker_log,
    serving_since,
    stops,
    tuning,
)
from gb10check.reading.parsers.vllm_metrics import parse_vllm_metrics

DATA = Path(__file__).resolve().parents[1] / "data"


def body(name: str) -> dict:
    return json.loads((DATA / "vllm_api" / name).read_text())["body"]


def chunks(name: str) -> list[dict]:
    return sse_chunks(parse_sse((DATA / "vllm_api" / name).read_text()))


def test_reasoning_is_found_in_whichever_field_the_version_uses():
    both = reasoning_of(body("02b_chat_nonstream_qwen3_reasoning.v0.12.0.json")["choices"][0]["message"])
    assert both.text == "\nThe user greets me.\n" and both.fields == ("reasoning", "reasoning_content")
    new = body("02c_chat_nonstream_qwen3_reasoning.v0.33.0.json")
    assert reasoning_of(new["choices"][0]["message"]).fields == ("reasoning",)
    assert reasoning_tokens(new["usage"]) == 7
    assert reasoning_tokens(body("02b_chat_nonstream_qwen3_reasoning.v0.12.0.json")["usage"]) is None
    off = reasoning_of(body("03a_chat_nonstream_enable_thinking_false.v0.12.0.json")["choices"][0]["message"])
    assert off.text == "" and off.fields == ()
    assert reasoning_of({"reasoning_content": "old"}).fields == ("reasoning_content",)


@pytest.mark.parametrize("version", ["0.12.0", "0.33.0"])
def test_tool_calls_one_answer_and_streamed_agree(version):
    whole = {
        "0.12.0": "04b_tool_call_nonstream_qwen3_xml.v0.12.0.json",
        "0.33.0": "04d_tool_call_nonstream_qwen3_xml.v0.33.0.json",
    }
    stream = {"0.12.0": "06b_stream_tool_qwen3_xml.v0.12.0.sse", "0.33.0": "06d_stream_tool_qwen3_xml.v0.33.0.sse"}
    [call] = tool_calls_of(body(whole[version])["choices"][0]["message"])
    deltas = [c["choices"][0]["delta"] for c in chunks(stream[version]) if c.get("choices")]
    [merged] = merge_tool_call_deltas(deltas)
    assert (
        (call.name, call.parsed_arguments())
        == (merged.name, merged.parsed_arguments())
        == ("get_weather", {"city": "Paris"})
    )
    assert merged.id and merged.id.startswith("chatcmpl-tool-")


def test_arguments_that_are_not_a_json_object_parse_to_none():
    [call] = merge_tool_call_deltas(
        [{"tool_calls": [{"index": 0, "id": "x", "function": {"name": "f", "arguments": '{"city": "Bei'}}]}]
    )
    assert call.parsed_arguments() is None
    assert (
        merge_tool_call_deltas([{"tool_calls": [{"index": 0, "function": {"arguments": "[1]"}}]}])[0].parsed_arguments()
        is None
    )


def test_decode_figures_follow_vllm_bench_serve_on_a_recorded_stream():
    """05b: role chunk, 3 reasoning, 3 content, finish, usage (19 completion tokens); arrivals known."""
    recorded = chunks("05b_stream_reasoning_include_usage.v0.12.0.sse")
    times = [0.500 + 0.1 * i for i in range(len(recorded))]  # first chunk at 0.5 s, then every 100 ms
    m = decode_metrics(list(zip(times, recorded, strict=True)))
    assert m.ttft == pytest.approx(0.5)  # the first chunk that carries choices (the role chunk)
    assert m.latency == pytest.approx(times[-1])  # the usage chunk, the last before [DONE]
    assert m.output_tokens == 19
    assert m.tpot == pytest.approx((times[-1] - 0.5) / 18)  # (latency - TTFT) / (output tokens - 1)
    assert m.tokens_per_s == pytest.approx(19 / times[-1])
    assert len(m.itl) == len(recorded) - 2 and all(gap == pytest.approx(0.1) for gap in m.itl)


def test_a_stream_without_usage_or_tokens_has_no_decode_figures():
    recorded = chunks("05b_stream_reasoning_include_usage.v0.12.0.sse")
    with pytest.raises(ParseError, match="no usage chunk"):
        decode_metrics([(0.1 * i, c) for i, c in enumerate(recorded[:-1], 1)])
    with pytest.raises(ParseError, match="no chunk carried choices"):
        decode_metrics([(0.1, recorded[-1])])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("data: {}\n\n", "does not end with 'data: [DONE]'"),
        ("data: {}\ndata: {}\n\ndata: [DONE]\n\n", "one 'data: ' line per event"),
        ("event: x\n\ndata: [DONE]\n\n", "one 'data: ' line per event"),
        ("data: {not json\n\ndata: [DONE]\n\n", "not JSON"),
    ],
)
def test_sse_framing_errors_are_parse_errors(text, message):
    with pytest.raises(ParseError, match=re.escape(message)):
        sse_chunks(parse_sse(text))


def test_version_and_metrics():
    versions = json.loads((DATA / "vllm_api" / "08_health_version.v0.12.0.json").read_text())
    version_body = next(
        v for k, v in versions.items() if "version" in k.lower() and isinstance(v, dict) and "body" in v
    )
    assert parse_version(
        json.dumps(version_body["body"]) if not isinstance(version_body["body"], str) else version_body["body"]
    )
    with pytest.raises(ParseError):
        parse_version("<html>")
    m = parse_vllm_metrics((DATA / "vllm_api" / "09_metrics_vllm_only.v0.12.0.prom").read_text())
    assert (m.generation_tokens, m.running, m.kv_cache_metric, m.kv_cache_usage) == (
        19.0,
        1.0,
        "vllm:kv_cache_usage_perc",
        0.0123,
    )
    old = parse_vllm_metrics(
        "vllm:gpu_cache_usage_perc 0.5\nvllm:generation_tokens_total 3\nvllm:num_requests_running 0\n"
    )
    assert old.kv_cache_metric == "vllm:gpu_cache_usage_perc" and old.kv_cache_usage == 0.5
    with pytest.raises(ParseError, match="not vLLM's metrics"):
        parse_vllm_metrics("# HELP up x\n# TYPE up gauge\nup 1\n")
    with pytest.raises(ParseError):
        parse_vllm_metrics("<html><body>502</body></html>")


def _docker(lines: list[str]) -> str:
    start = datetime(2026, 2, 5, 22, 48, 52, tzinfo=UTC)
    return "".join(
        f"{(start + timedelta(seconds=i)):%Y-%m-%dT%H:%M:%S.%f}123Z {line}\n" for i, line in enumerate(lines)
    )


def test_milestones_of_a_real_gb10_start():
    """vLLM 0.13 on a GB10 (one node): its log reaches rank assignment, loading, KV cache, graphs."""
    raw = (DATA / "commands" / "vllm.v0.13.0.gb10.llm_offline_init.log").read_text().splitlines()
    lines = parse_docker_log(_docker(raw))
    assert "\x1b" not in "".join(line.text for line in lines)  # the ANSI colours are gone
    reached = [r.milestone for r in milestones(lines)]
    assert reached == ["rank assigned", "loading weights", "weights loaded", "KV cache memory", "KV cache sized",
                       "CUDA graphs captured"]  # fmt: skip
    assert graph_mode(lines) == "FULL_AND_PIECEWISE"
    missing = [m for m in expected_milestones(0, eager=False) if m not in reached]
    assert missing == ["API serving"]  # an offline LLM() run serves no API


def test_nccl_transport_and_version_lines():
    net = (DATA / "commands" / "nccl.dgx_spark.info_net_ib_lines.verbatim.txt").read_text().splitlines()
    found = nccl_transport(parse_docker_log(_docker([line for line in net if "NET/IB : Using" in line])))
    assert found is not None and (found.kind, found.devices) == ("IB", ("rocep1s0f1", "roceP2p1s0f1"))
    sockets = parse_docker_log(_docker(["host:1:1 [0] NCCL INFO NET/Socket : Using [0]enp1s0f0np0:169.254.94.252<0>"]))
    assert nccl_transport(sockets).kind == "Socket"
    assert (
        nccl_version(parse_docker_log(_docker(["INFO 12-03 09:00:09 [pynccl.py:111] vLLM is using nccl==2.28.9"])))
        == "2.28.9"
    )
    noise = parse_docker_log(_docker(["[transformers] ERROR: `min_frames` is not documented", "real error"]))
    assert meaningful_text(noise) == "real error"


@pytest.mark.parametrize("text", ["no stamp here\n", "<html>\n"])
def test_a_log_without_docker_timestamps_is_read_without_times(text):
    lines = parse_docker_log(text)
    assert [(line.at, line.text, line.number) for line in lines] == [(None, text.strip(), 1)]


GRAPH_LINES = [
    tuple(line.split("\t", 1))
    for line in (DATA / "commands" / "vllm.graph_mode_lines.from_source.txt").read_text().splitlines()
    if line and not line.startswith("#")
]


@pytest.mark.parametrize(("mode", "line"), GRAPH_LINES, ids=[f"{i}-{m}" for i, (m, _) in enumerate(GRAPH_LINES)])
def test_the_graph_mode_is_read_from_every_line_vllm_says_it_in(mode, line):
    """Not the config dump alone (rank 0's engine logs it; a headless follower does not): the
    overrides every process logs, each worker's own resolution, eager mode, a capture."""
    assert graph_mode(parse_docker_log(_docker([line]))) == mode


def test_the_last_word_on_the_graph_mode_is_the_one_in_force():
    dump, worker, override = (
        (line for mode, line in GRAPH_LINES if mode == "FULL_DECODE_ONLY" and "config" in line),
        [line for _, line in GRAPH_LINES if "setting cudagraph_mode=NONE" in line],
        [line for _, line in GRAPH_LINES if "0.Overriding to NONE" in line],
    )
    # the dump says what was asked; a worker that cannot capture full graphs resolves it afterwards
    assert graph_mode(parse_docker_log(_docker([next(dump), *worker]))) == "NONE"
    # vLLM 0.12.0 with -cc.mode=0: "Cudagraph mode FULL_DECODE_ONLY is ..." is an override to NONE, not a use
    assert graph_mode(parse_docker_log(_docker(override))) == "NONE"
    captured = [line for mode, line in GRAPH_LINES if mode.startswith("captured")]
    assert graph_mode(parse_docker_log(_docker([*captured, *override]))) == "NONE"
    assert graph_mode(parse_docker_log(_docker(["(APIServer pid=1) INFO:     Application startup complete."]))) is None


TIMEOUT_LINES = [
    tuple(line.split("\t", 2))
    for line in (DATA / "commands" / "vllm.rank_timeout_lines.from_source.txt").read_text().splitlines()
    if line and not line.startswith("#")
]


@pytest.mark.parametrize(
    ("kind", "what", "line"), TIMEOUT_LINES, ids=[f"{i}-{k}" for i, (k, _, _) in enumerate(TIMEOUT_LINES)]
)
def test_a_wedged_ranks_timeouts_are_read_from_their_format_strings_output(kind, what, line):
    (stop,) = stops(parse_docker_log(_docker(["(Worker_TP2 pid=88) INFO 12-04 10:42:00 [core.py:1] serving", line])))
    assert (stop.kind, stop.what, stop.index) == (kind, what, 1)
    assert stop.at == datetime(2026, 2, 5, 22, 48, 53, tzinfo=UTC)  # Docker's stamp: when the rank logged it


# PyTorch's c10::str pieces (WorkNCCL::checkTimeout, operator<<, createLogPrefix) and vLLM's f-string, filled
PREFIXES = ("[PG ID 0 PG GUID 0(default_pg) Rank 3] ", "[PG ID 1 PG GUID 5 Rank 3] ", "[PG 1 Rank 3] ", "[Rank 3] ")


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("op", ["ALLREDUCE", "ALLGATHER", "_ALLGATHER_BASE", "REDUCE_SCATTER", "SEND", "RECV"])
def test_every_watchdog_prefix_and_op_type(prefix, op):
    work = "".join(["WorkNCCL(", "SeqNum=", "77", ", OpType=", op, ", NumelIn=", "8", ", NumelOut=", "8",
                    ", Timeout(ms)=", "600000", ")"])  # fmt: skip
    line = "".join([prefix, "Watchdog caught collective operation timeout: ", work, " ran for ", "600042",
                    " milliseconds before timing out."])  # fmt: skip
    (stop,) = stops(parse_docker_log(_docker([line])))
    assert (stop.kind, stop.what) == ("collective", f"{op} SeqNum=77, 600042 ms")


@pytest.mark.parametrize("method", ["execute_model", "sample_tokens", "execute_dummy_batch", "take_draft_token_ids"])
def test_vllms_rpc_timeout(method):
    (stop,) = stops(parse_docker_log(_docker([f"RPC call to {method} timed out."])))
    assert (stop.kind, stop.what, stop.shown()) == ("rpc", method, f"RPC call to {method}")


def test_a_log_without_timeouts_has_no_stop():
    assert stops(parse_docker_log(_docker(["Watchdog thread started", "RPC call to execute_model returned"]))) == []


def test_a_rank_serves_from_its_kv_cache_on_and_a_start_out_of_view_served_all_along():
    start = ["(Worker_TP1 pid=88) INFO 12-03 09:00:00 [m.py:1] Starting to load model x...",
             "(Worker_TP1 pid=88) INFO 12-03 09:05:00 [g.py:1] Available KV cache memory: 6.78 GiB",
             "(Worker_TP1 pid=88) INFO 12-03 10:05:00 [x.py:1] later"]  # fmt: skip
    assert serving_since(parse_docker_log(_docker(start))) == 1
    assert serving_since(parse_docker_log(_docker(start[:1]))) == 1  # still starting: past its end
    assert serving_since(parse_docker_log(_docker(start[2:]))) == 0  # --tail cut the start off


TUNING_LINES = [
    line
    for line in (DATA / "commands" / "vllm.kernel_tuning_lines.from_source.txt").read_text().splitlines()
    if line and not line.startswith("#")
]
LOADED = (
    "(Worker_TP1 pid=88) INFO 12-04 09:05:00 [gpu_model_runner.py:3659] Model loading took 86.33 GiB memory and "
    "300.790000 seconds"
)


@pytest.mark.parametrize("line", TUNING_LINES, ids=[f"{i}" for i in range(len(TUNING_LINES))])
def test_a_start_compiling_or_tuning_kernels_is_read_from_vllms_lines(line):
    """After its weights, a start that logs torch.compile's or FlashInfer's work is compiling and tuning;
    the cache's own lines (its directory, a hit) are not."""
    found = tuning(parse_docker_log(_docker([LOADED, line.removeprefix("-")])))
    if line.startswith("-"):
        assert found is None
    else:
        assert found is not None and (found.index, found.line) == (1, line)


def test_tuning_ends_at_the_next_milestone():
    compiling = next(line for line in TUNING_LINES if "dynamic shape takes" in line)
    kv = "(Worker_TP1 pid=88) INFO 12-04 09:20:00 [gpu_worker.py:375] Available KV cache memory: 6.78 GiB"
    assert tuning(parse_docker_log(_docker([LOADED, compiling, kv]))) is None
    assert tuning(parse_docker_log(_docker([LOADED]))) is None
