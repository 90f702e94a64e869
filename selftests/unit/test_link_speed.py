"""A figure far below the rate both ends negotiated is a degraded ConnectX-7 (gb10check/reading/bandwidth.py
`degraded`), apart from a slow link: NVIDIA/dgx-spark-playbooks PR #108's 13.23 Gb/s at 200G against a
healthy half's 92.57-111.7, a 100G port's ~46 and a loaded link's 40."""

from __future__ import annotations

import pytest

from gb10check.reading.bandwidth import DEGRADED_SHARE, degraded, degraded_node


@pytest.mark.parametrize(
    ("gbps", "rates", "declared", "verdict"),
    [
        (13.23, [200.0, 200.0], 200, True),  # PR #108: full rate shown, 13 Gb/s moved
        (8.0, [200.0, 200.0], 200, True),  # the low end of its 8-25 Gb/s
        (24.9, [200.0, 200.0], 200, True),
        (40.0, [200.0, 200.0], 200, False),  # a slow or loaded link: bw-low
        (92.57, [200.0, 200.0], 200, False),  # NVIDIA's healthy half
        (13.0, [100.0, 200.0], 200, False),  # an end at 100G: the rate check explains it first
        (10.0, [100.0, 100.0], 100, True),  # a declared 100G breakout: an eighth of 100
        (13.0, [200.0, None], 200, False),  # one end's rate unknown: not judged
        (13.0, [], 200, False),
    ],
)
def test_degraded_is_far_below_what_both_ends_negotiated(gbps, rates, declared, verdict):
    assert degraded(gbps, rates, declared) is verdict


def test_the_share_sits_between_the_degraded_card_and_a_slow_link():
    assert 13.23 < DEGRADED_SHARE * 200 < 40


def test_the_node_in_every_degraded_pair_of_a_rail_and_no_fast_one_is_named():
    # a 4-switch rail, rank 2's card degraded: its three pairs slow, the other three fast
    bad = [("n0", "n2"), ("n1", "n2"), ("n2", "n3")]
    good = [("n0", "n1"), ("n0", "n3"), ("n1", "n3")]
    assert degraded_node(bad, good) == "n2"
    assert degraded_node(bad[:1], good) is None  # one slow pair: either end's card
    assert degraded_node([("n0", "n2"), ("n1", "n3")], []) is None  # nothing common
    assert degraded_node([("n0", "n2"), ("n1", "n2")], [("n2", "n3")]) is None  # n2 also fast with n3
    assert degraded_node([], good) is None
