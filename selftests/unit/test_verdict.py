"""Evidence: how a check states its result."""

from __future__ import annotations

import pytest

from gb10check.judging.verdict import CheckFailed, Comparison, Evidence


def test_a_pass_is_recorded_with_what_was_found():
    ev = Evidence(node="n1")
    ev.expect(True, what="MemFree", expected=">= 100 GiB", found="110 GiB")
    assert ev.items == [Comparison("MemFree", ">= 100 GiB", "110 GiB", True)]


def test_a_failure_says_expected_found_where_and_carries_its_hints():
    ev = Evidence(node="n1")
    with pytest.raises(CheckFailed) as info:
        ev.expect(False, what="MemFree", expected=">= 100 GiB", found="20 GiB", detail="drop caches", hints=("x",))
    assert str(info.value) == "MemFree on n1: expected >= 100 GiB, found 20 GiB; drop caches"
    assert info.value.hint_ids == ("x",)
    assert ev.items[-1].ok is False


@pytest.mark.parametrize("ok", [True, False])
def test_nothing_found_is_a_bug_of_the_check_not_a_verdict(ok):
    with pytest.raises(ValueError, match="`found` is empty"):
        Evidence().expect(ok, what="x", expected="y", found="  ")


def test_a_long_tool_error_keeps_what_failed_and_why():
    from gb10check.errors import clip

    runc = (
        "docker: Error response from daemon: failed to create shim task: OCI runtime create failed: runc create "
        "failed: unable to start container process: error during container init: error running hook #0: error "
        "running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
        "nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown."
    )
    short = clip(runc, 200)
    assert len(short) <= 205
    assert short.startswith("docker: Error response from daemon:")  # what failed
    assert short.endswith("driver/library version mismatch: unknown.")  # why
    head, tail = short.split(" ... ")
    assert runc.startswith(head) and runc.endswith(tail)
    assert runc[len(runc) - len(tail) - 1] in " \n" and runc[len(head)] in " \n"  # cut between words


@pytest.mark.parametrize("found", ["cgroup vNone, driver ", "None", "userspace None"])
def test_pythons_none_in_a_message_is_a_bug_of_the_check_not_a_verdict(found):
    """A value the check did not have must be said ("not reported"), never printed as Python's None."""
    with pytest.raises(ValueError, match="Python's None"):
        Evidence().expect(False, what="x", expected="y", found=found)


def test_words_that_merely_contain_none_are_not_refused():
    Evidence().expect(True, what="x", expected="none", found="NoneType is not a GPU; none listed")


class _Skipped(Exception):
    pass


def _skip(reason: str):
    raise _Skipped(reason)


def test_a_check_explained_by_another_failure_skips_naming_it_and_keeps_what_still_passes():
    """One fault, one failure: once another check owns the fault, a comparison that fails skips with the
    owner's words; those that pass are still recorded, and the check's own faults before it still fail."""
    ev = Evidence(node="n1", skip=_skip)
    with pytest.raises(CheckFailed):
        ev.expect(False, what="own", expected="a", found="b")
    ev.explained_by("follows from test_x[n2]: n2's p0 is administratively DOWN")
    ev.expect(True, what="still judged", expected="a", found="a")
    with pytest.raises(_Skipped, match=r"^follows from test_x\[n2\]"):
        ev.expect(False, what="ping", expected="answers", found="none")
    assert [(c.what, c.ok) for c in ev.items] == [("own", False), ("still judged", True)]


def test_no_reason_or_no_way_to_skip_still_fails():
    """An empty reason changes nothing; evidence without a skip (outside pytest) never hides a failure."""
    with_skip = Evidence(skip=_skip)
    with_skip.explained_by("")
    with pytest.raises(CheckFailed):
        with_skip.expect(False, what="x", expected="y", found="z")
    without = Evidence()
    without.explained_by("follows from elsewhere")
    with pytest.raises(CheckFailed):
        without.expect(False, what="x", expected="y", found="z")
