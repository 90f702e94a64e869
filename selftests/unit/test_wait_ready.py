"""How --wait-ready reads a start whose budget ran out: a node compiling and tuning its kernels (the first
start after a topology change does it all again) is progressing, not a hang."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gb10check.judging.fit import GIB
from gb10check.reading.parsers.vllm_log import parse_docker_log, tuning
from gb10check.service.watchdog import NodeState, not_ready

START = datetime(2026, 12, 4, 9, 0, tzinfo=UTC)
LOADED = "(Worker_TP1 pid=88) INFO 12-04 09:05:00 [gpu_model_runner.py:3659] Model loading took 86.33 GiB memory"
# vllm/compilation/backends.py:289 (0.12.0), selftests/data/commands/vllm.kernel_tuning_lines.from_source.txt
COMPILING = (
    "(Worker_TP1 pid=88) INFO 12-04 09:17:02 [backends.py:289] Compiling a graph for dynamic shape takes 698.41 s"
)


def _state(node: str, *lines: str) -> NodeState:
    stamped = "".join(
        f"{START + timedelta(minutes=i):%Y-%m-%dT%H:%M:%S}.000000000Z {ln}\n" for i, ln in enumerate(lines)
    )
    log = parse_docker_log(stamped)
    return NodeState(node, 40 * GIB, None, "weights loaded", tuning=tuning(log))


def test_a_late_health_without_tuning_is_not_ready():
    why, hint = not_ready({"a": _state("a", LOADED), "b": _state("b", LOADED)}, 600)
    assert (why, hint) == ("/health did not answer 200 within 600 s", "service-not-ready")


def test_a_start_compiling_kernels_is_progressing_and_says_why_it_is_long():
    states = {"a": _state("a", LOADED), "b": _state("b", LOADED, COMPILING)}
    why, hint = not_ready(states, 600)
    assert hint == "startup-retuning"
    assert why.startswith("/health did not answer 200 within 600 s, but the start is progressing, not hung")
    assert "b after weights loaded, at 09:01:00: " + COMPILING in why  # the node, when, and its line
    assert "a after" not in why  # a node not tuning is not named as tuning
    assert "first start after a topology change" in why and "36 minutes" in why
    assert states["b"].shown() == "b 40.0 GiB (weights loaded, compiling and tuning kernels)"
