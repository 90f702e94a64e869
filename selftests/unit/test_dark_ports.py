"""Which check owns a dark port (gb10check/judging/dark_ports.py): one fault, one owner, on every topology."""

from __future__ import annotations

import pytest

from gb10check.judging.dark_ports import FOLLOWS, End, explaining, owners


def _ends(*states: tuple[str, str]) -> list[End]:
    return [End(node, "p0", state) for node, state in states]  # type: ignore[arg-type]


def test_an_end_that_is_down_owns_the_far_end_without_carrier_on_a_direct_cable():
    found = owners({"r1": _ends(("a", "no-carrier"), ("b", "down"))}, switched=False)
    assert {key: (o.end.node, o.end.state) for key, o in found.items()} == {
        ("a", "r1"): ("b", "down"),
        ("b", "r1"): ("b", "down"),
    }
    assert found[("a", "r1")].follows() == (
        f"{FOLLOWS}test_qsfp_netdev_up_with_its_address[b-p0]: b's p0 is administratively DOWN (rail r1)"
    )


def test_a_cable_dark_at_both_lit_ends_is_owned_by_its_first_end_naming_the_other():
    found = owners({"r1": _ends(("a", "no-carrier"), ("b", "no-carrier"))}, switched=False)
    assert found[("a", "r1")] == found[("b", "r1")]
    assert found[("b", "r1")].end.node == "a"
    assert "as b's p0 at the cable's other end" in found[("b", "r1")].found()


def test_behind_a_switch_every_dark_end_is_its_own():
    found = owners({"r1": _ends(("a", "up"), ("b", "no-carrier"), ("c", "down"), ("d", "up"))}, switched=True)
    assert {key: o.end.node for key, o in found.items()} == {("b", "r1"): "b", ("c", "r1"): "c"}


@pytest.mark.parametrize("far", ["unknown", "up"])
def test_a_far_end_not_known_explains_nothing_and_a_lit_far_end_leaves_the_dark_end_its_own(far):
    """A far node that cannot be asked: its own checks say so (no owner here); a far end with carrier
    while this one has none (a bad module on this side): this end owns it."""
    found = owners({"r1": _ends(("a", "no-carrier"), ("b", far))}, switched=False)
    assert found == ({} if far == "unknown" else {("a", "r1"): found[("a", "r1")]})
    if far == "up":
        assert found[("a", "r1")].end.node == "a"


def test_a_check_over_several_ends_follows_from_the_first_dark_one_and_lit_ends_explain_nothing():
    found = owners({"r1": _ends(("a", "up"), ("b", "up")), "r2": _ends(("a", "absent"), ("b", "no-carrier"))}, False)
    assert explaining(found, [("a", "r1"), ("b", "r1")]) is None
    owner = explaining(found, [("a", "r1"), ("b", "r1"), ("a", "r2"), ("b", "r2")])
    assert owner is not None and owner.end == End("a", "p0", "absent")
    assert "a's p0 is absent (rail r2)" in owner.found()


@pytest.mark.parametrize("switched", [False, True])
def test_a_node_that_cannot_be_reached_owns_its_ends_and_the_far_end_s_missing_carrier(switched):
    """A node that is off darkens every end of it: on a cable the far end's missing carrier follows from it;
    behind a switch the far port stays lit, and a check between the two follows from the node that is off."""
    far = "up" if switched else "no-carrier"
    found = owners({"r1": _ends(("a", far), ("b", "unreachable"))}, switched=switched)
    owner = found[("b", "r1")]
    assert owner.end.node == "b" and owner.found() == "b cannot be reached (off or hung: every end of it is dark)"
    assert (("a", "r1") in found) is not switched
    assert explaining(found, [("a", "r1"), ("b", "r1")]) == owner
