"""nccl-tests' output and the collective's floor per topology (check 7 of "what only three or more nodes need")."""

from pathlib import Path

import pytest

from gb10check import topology
from gb10check.inventory import parse_inventory
from gb10check.reading.parsers.nccl_tests import parse_nccl_test

DATA = Path(__file__).parent.parent / "data" / "commands"


def test_ranks_and_figures_in_the_current_layout():
    text = (DATA / "nccl_tests.all_gather_perf.4_ranks.v2.19.6.from_source.txt").read_text()
    result = parse_nccl_test(text)
    assert result.hosts == ("spark-a", "spark-b", "spark-c", "spark-d")
    assert result.avg_busbw == 21.9  # the footer followed by OK (NCCL_TESTS_MIN_BW set)
    assert (result.rows[0].size, result.rows[0].busbw_out, result.rows[0].busbw_in) == (1073741824, 21.92, 21.88)
    assert result.wrong == 0


def test_ranks_in_the_layout_before_groups():
    text = (DATA / "nccl_tests.all_gather_perf.2_ranks.v2.13.0.from_source.txt").read_text()
    result = parse_nccl_test(text)
    assert result.hosts == ("spark-a", "spark-b")
    assert result.avg_busbw == 21.875


def test_an_output_without_rank_lines_has_no_hosts():
    text = (DATA / "nccl_tests.all_gather_perf.4_ranks.v2.19.6.from_source.txt").read_text()
    body = "".join(line for line in text.splitlines(keepends=True) if "Rank" not in line)
    assert parse_nccl_test(body).hosts == ()


@pytest.mark.parametrize(
    ("shape", "size", "floor", "words"),
    [
        ("pair", 2, 21.875, "direct cables"),
        ("switch", 8, 21.875, "through a switch"),
        ("ring", 3, 10.0, "ring of 3, 80 Gb/s"),
        ("ring", 6, 10.0, "none is published for a ring of 6"),
    ],
)
def test_the_floor_is_the_topologys(shape, size, floor, words):
    gbs, source = topology.nccl_busbw_floor(shape, size)
    assert gbs == floor and words in source


RING4 = Path(__file__).resolve().parents[2] / "fixtures" / "cluster.ring.example.toml"


def test_the_inventory_takes_the_topologys_floor_unless_it_sets_one():
    text = RING4.read_text()
    inv = parse_inventory(text + '[nccl_tests]\ncommand = "all_gather_perf"\n', "ring4.toml")
    assert inv.nccl_busbw_floor() == topology.nccl_busbw_floor("ring", 4) and inv.size == 4
    inv = parse_inventory(text + '[nccl_tests]\ncommand = "all_gather_perf"\nmin_busbw_gbs = 15\n', "ring4.toml")
    assert inv.nccl_busbw_floor() == (15.0, "[nccl_tests] min_busbw_gbs")
