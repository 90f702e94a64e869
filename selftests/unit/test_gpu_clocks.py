"""nvidia-smi's GPU state query (gb10check/reading/parsers/gpu_clocks.py): an idle GB10's line, reasons active,
fields the GPU does not report, and garbage (each a ParseError quoting the output)."""

from __future__ import annotations

import pytest

from gb10check.errors import ParseError
from gb10check.reading.parsers.gpu_clocks import FIELDS, QUERY, parse_gpu_clocks


def test_an_idle_gb10(capture):
    clocks = parse_gpu_clocks(capture("commands/nvidia_smi.query_gpu_clocks.gb10_idle.reconstructed.txt"))
    assert (clocks.pstate, clocks.temperature_c, clocks.power_w) == ("P8", 42, 4.45)
    assert clocks.idle and clocks.reported and clocks.active == []
    assert clocks.shown() == "P8, SM 208 of 2418 MHz, 4.45 W, 42 C; no clock event reason"


def test_a_gpu_too_hot_names_its_reasons():
    line = "P0, 1002, 2418, 31.20, 94, 0x0000000000000048, Active, Active, Not Active, Not Active, Not Active\n"
    clocks = parse_gpu_clocks(line)
    assert clocks.active == ["hw_slowdown", "hw_thermal_slowdown"] and clocks.mask == 0x48 and not clocks.idle


def test_what_the_gpu_does_not_report_is_none_never_a_number():
    line = "[N/A], [N/A], [N/A], 4.45, 42, [N/A], [N/A], [N/A], [N/A], [N/A], [Not Supported]\n"
    clocks = parse_gpu_clocks(line)
    assert clocks.pstate is None and clocks.sm_mhz is None and clocks.mask is None and clocks.idle is None
    assert not clocks.reported and clocks.shown() == "P-state not reported, 4.45 W, 42 C; reasons not reported"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "no GPU line"),
        ("P8, 208, 2418\n", "expected 11 comma-separated fields"),
        ("P8, fast, 2418, 4.45, 42, 0x1, Not Active, Not Active, Not Active, Not Active, Not Active\n", "clocks.sm"),
        ("Q8, 208, 2418, 4.45, 42, 0x1, Not Active, Not Active, Not Active, Not Active, Not Active\n", "pstate"),
        ("P8, 208, 2418, 4.45, 42, 1, Not Active, Not Active, Not Active, Not Active, Not Active\n", "bitmask"),
        ("P8, 208, 2418, 4.45, 42, 0x1, Yes, Not Active, Not Active, Not Active, Not Active\n", "hw_slowdown"),
        ('Field "clocks_event_reasons.active" is not a valid field to query.\n', "expected 11"),
    ],
)
def test_garbage_is_a_parse_error_quoting_the_output(text, why):
    with pytest.raises(ParseError, match=why):
        parse_gpu_clocks(text)


def test_the_query_names_every_field_once_in_order():
    assert f"nvidia-smi --query-gpu={','.join(FIELDS)} --format=csv,noheader,nounits" == QUERY
    assert len(set(FIELDS)) == len(FIELDS) == 11
