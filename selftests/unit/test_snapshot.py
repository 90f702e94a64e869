"""The one-round-trip snapshot script, run by a real local shell."""

from __future__ import annotations

import subprocess

from gb10check.snapshot import Probe, build_script, new_boundary, split_output


def _run(probes, timeout=5.0):
    boundary = new_boundary()
    script = build_script(probes, boundary, timeout)
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=60).stdout
    return split_output(out, probes, boundary, 0.1)


def test_each_probe_gets_its_own_stdout_stderr_and_rc():
    res = _run(
        (
            Probe("a", "printf 'one\\ntwo\\n'"),
            Probe("b", "echo oops >&2; exit 3"),
            Probe("c", "printf 'no newline'"),
            Probe("d", "command-that-does-not-exist-here"),
        )
    )
    assert (res["a"].stdout, res["a"].rc) == ("one\ntwo\n", 0)
    assert (res["b"].stdout, res["b"].stderr, res["b"].rc) == ("", "oops\n", 3)
    assert res["c"].stdout == "no newline"
    assert res["d"].rc == 127


def test_a_hung_probe_is_bounded_and_the_others_still_answer():
    res = _run((Probe("hang", "sleep 30", timeout=0.5), Probe("after", "echo fine")))
    assert res["hang"].timed_out and res["hang"].rc == 124
    assert res["after"].stdout == "fine\n"


def test_probes_run_concurrently_and_frames_keep_probe_order(tmp_path):
    # "first" waits for a file "second" creates: run one after the other, "first" would time out
    flag = tmp_path / "flag"
    res = _run(
        (
            Probe("first", f"while [ ! -e {flag} ]; do sleep 0.05; done; echo saw it", timeout=10),
            Probe("second", f"touch {flag}; echo made it"),
        )
    )
    assert (res["first"].stdout, res["first"].rc) == ("saw it\n", 0)
    assert (res["second"].stdout, res["second"].rc) == ("made it\n", 0)


def test_output_that_mimics_the_markers_cannot_spoof_another_probe():
    # the boundary is random per round trip, so a tool cannot print a marker that closes its frame
    assert new_boundary() != new_boundary()
    res = _run((Probe("a", "echo 'gb10-0000 end a 0'; echo 'gb10-0000 begin b'; echo fake"), Probe("b", "echo real")))
    assert res["a"].stdout == "gb10-0000 end a 0\ngb10-0000 begin b\nfake\n"
    assert res["b"].stdout == "real\n"


def test_a_cut_short_script_marks_the_missing_probes_timed_out():
    probes = (Probe("a", "echo x"), Probe("b", "echo y"))
    boundary = "gb10-test"
    out = f"{boundary} begin a\nx\n\n{boundary} stderr a\n\n{boundary} end a 0\n{boundary} begin b\npartial"
    res = split_output(out, probes, boundary, 1.0)
    assert res["a"].ok and res["a"].stdout == "x\n"
    assert res["b"].timed_out and res["b"].rc is None and res["b"].stdout == "partial"
