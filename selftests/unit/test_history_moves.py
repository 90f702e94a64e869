"""Figures that name a place (gb10check/reporting/history.py MOVED_FIGURES: the GID index of a rail's member): a change
since the previous kept run is a move, named with both values; no previous value is no verdict."""

from __future__ import annotations

from pathlib import Path

from gb10check.reporting import history as hist

GID = "test_gid_index[thinkstationpgx-32-enP2p1s0f0np0]::gid_index"
BW = "test_rdma_bandwidth[enP2p1s0f0np0]::bandwidth_gbps"


def _run(figures: dict[str, float]) -> hist.Run:
    return hist.Run(Path("run-1.json"), "2026-12-03T02:00:00Z", {}, figures)


def test_a_gid_index_that_moved_is_named_with_both_values():
    [move] = hist.moves(_run({GID: 3.0, BW: 109.0}), {GID: 5.0, BW: 40.0})  # bandwidth is a trend's, not a move's
    assert (move.key, move.was, move.today, move.moved, move.since) == (GID, 3.0, 5.0, True, "2026-12-03T02:00:00Z")
    assert hist.moved_check(move.key) == (
        "test_figure_moved[test_gid_index-thinkstationpgx-32-enP2p1s0f0np0-gid_index]"
    )
    assert hist.MOVED_FIGURES["gid_index"] == "gid-index-moved"


def test_the_same_index_or_no_earlier_value_is_no_move():
    assert [m.moved for m in hist.moves(_run({GID: 3.0}), {GID: 3.0})] == [False]
    [first] = hist.moves(None, {GID: 3.0})
    assert (first.was, first.moved, first.since) == (None, False, "")
    [new] = hist.moves(_run({BW: 109.0}), {GID: 3.0})  # the previous run did not record it
    assert (new.was, new.moved) == (None, False)
