"""One long line from a node (issue 17, item 1): every pattern the suite matches over a node's output
reads a bounded line (gb10check.reading.parsers.MAX_LINE), and says how much it left out."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

import pytest

from gb10check.judging.hints import Catalogue
from gb10check.reading import parsers
from gb10check.reading.parsers import docker, kernel_log, vllm_log
from gb10check.reading.parsers.docker import ContainerGpuFailure, parse_container_gpus
from gb10check.reading.parsers.kernel_log import parse_kernel_log
from gb10check.reading.parsers.vllm_log import MILESTONES, milestones, parse_docker_log
from selftests import adversarial, linear

# each is linear (selftests/linear.py: 16 times the text, at most 48 times the time); unbounded, the
# same inputs take hours (`Gloo.*timeout` over one line of 2.5 million "Gloo ")
SMALL = 128_000
STAMP = "2025-01-01T00:00:00.000000000Z"


def _timed(function, *args):
    start = time.perf_counter()
    result = function(*args)
    return result, time.perf_counter() - start


def _container_log(size: int) -> str:
    return f"{STAMP} Launching vLLM headless\n{STAMP} " + adversarial.fill("Launching vLLM ", size) + "\n"


@pytest.mark.slow
def test_a_long_container_log_line_is_read_as_its_head_saying_how_much_was_left_out():
    def read(text: str) -> tuple[list, list]:
        lines = parse_docker_log(text)
        return lines, milestones(lines)

    lines, reached = linear.assert_linear(read, _container_log, SMALL)
    assert [r.milestone for r in reached] == ["headless worker launched"]
    long = lines[1].text
    assert len(long) < parsers.MAX_LINE + 100 and long.startswith("Launching vLLM Launching")
    cut = len(STAMP) + 1 + SMALL * linear.FACTOR - parsers.MAX_LINE  # the stamp is part of the line docker printed
    assert long.endswith(f"[gb10check: {cut} more characters of this line not read]")
    assert lines[1].at == datetime(2025, 1, 1, tzinfo=UTC)


@pytest.mark.slow
def test_a_long_kernel_log_line_is_read_as_its_head():
    def make(size: int) -> str:
        return "gb10check: kernel log lines 2\n[ 1.0] " + adversarial.fill("NVRM: Xid (", size) + "\n"

    log = linear.assert_linear(parse_kernel_log, make, SMALL)
    assert log.lines == 2 and log.events == ()


@pytest.mark.slow
def test_a_long_line_of_a_container_gpu_failure_is_read_bounded():
    def make(size: int) -> str:
        return adversarial.fill('could not select device driver "', size) + "\nError: exit 1\n"

    result = linear.assert_linear(parse_container_gpus, make, SMALL)
    assert isinstance(result, ContainerGpuFailure) and result.kind == "other"


@pytest.mark.slow
@pytest.mark.parametrize("literal", ["Gloo", "c10d", "Unexpected keyword argument", "trees/", "The model `"])
def test_symptoms_are_matched_on_bounded_lines_of_a_long_text(literal):
    catalogue = Catalogue.load()

    def make(size: int) -> str:
        return adversarial.fill(literal + " ", size) + "\nGloo connectFullMesh failed\n"

    found = linear.assert_linear(catalogue.match, make, SMALL)
    assert "gloo-connect" in {h.id for h in found} or found, [h.id for h in found]


def _node_patterns() -> dict[str, re.Pattern[str]]:
    """The patterns the suite matches over what a node printed: the catalogue's symptoms, vLLM's log
    milestones, and the parsers' own."""
    catalogue = Catalogue.load()
    out = {f"symptom {h}[{i}]": p for h in sorted(catalogue.ids) for i, p in enumerate(catalogue[h].symptoms)}
    out.update({f"milestone {m.name}": m.pattern for m in MILESTONES})
    for module in (docker, kernel_log, vllm_log):
        out.update({f"{module.__name__}.{k}": v for k, v in vars(module).items() if isinstance(v, re.Pattern)})
    return out


PATTERNS = _node_patterns()


@pytest.mark.parametrize("name", list(PATTERNS))
def test_every_pattern_over_node_output_is_fast_on_an_adversarial_bounded_line(name):
    """At MAX_LINE characters, even a pattern that backtracks over its line (`A.*B` on "A A A ...") costs
    milliseconds; an exponential one would not."""
    pattern = PATTERNS[name]
    slowest, worst = 0.0, ""
    for what, line in adversarial.texts_for(pattern.pattern, size=parsers.MAX_LINE).items():
        _, seconds = _timed(pattern.search, line)
        if seconds > slowest:
            slowest, worst = seconds, what
    assert slowest < 1.0, f"{name}: {slowest:.2f} s on {worst}"
