"""The one-round-trip snapshot script, run by a real local shell."""

from __future__ import annotations

import subprocess

import pytest

from gb10check.reading.snapshot import Probe, build_script, new_boundary, split_output


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


@pytest.mark.slow
def test_a_flooding_probe_is_cut_on_the_node_and_costs_only_itself(tmp_path):
    """A tool that prints forever stops at the file limit (EFBIG, no core dump), a 20 MiB output is sent as
    its head and tail with its size; the probes beside them answer as ever, and the node keeps no copy."""
    import pytest

    from gb10check.errors import OutputCut
    from gb10check.reading.snapshot import PROBE_FILE_LIMIT, PROBE_KEEP, Snapshot

    size = 20 * 1024 * 1024
    probes = (
        Probe("forever", "yes gb10check-flood", timeout=20),
        Probe("big", f"head -c {size} /dev/zero | tr '\\0' x; echo the-end"),
        Probe("noisy", f"head -c {size} /dev/zero | tr '\\0' e >&2; echo 42"),
        Probe("small", "id -un"),
    )
    res = _run(probes, timeout=20)
    assert res["small"].ok and res["small"].stdout.strip() and res["small"].cut == ()
    assert res["forever"].cut == (("stdout", PROBE_FILE_LIMIT),) and not res["forever"].timed_out
    assert res["big"].cut == (("stdout", size + len("the-end\n")),)
    assert res["big"].stdout.startswith("x" * 1000) and res["big"].stdout.endswith("x" * 1000 + "the-end\n")
    assert f"\n[gb10check: output cut here; the probe printed {size + 8} bytes]\n" in res["big"].stdout
    assert len(res["big"].stdout) < PROBE_KEEP + 100
    assert res["noisy"].stdout == "42\n" and res["noisy"].cut == (("stderr", size),)

    snap = Snapshot("node-a", res)
    with pytest.raises(
        OutputCut,
        match=r"node-a: `yes gb10check-flood` printed more than 64 MiB on stdout \(the node stopped it there\)",
    ):
        snap.ran("forever")
    with pytest.raises(OutputCut, match=r"printed 20\.0 MiB on stdout \(20971528 bytes\): output cut to its first"):
        snap.ran("big")
    assert snap.ran("noisy").stdout == "42\n"  # stderr cut, stdout whole: what a parser reads is there


def test_the_kernel_log_is_streamed_and_a_failed_dmesg_is_no_empty_log(tmp_path):
    from types import SimpleNamespace

    from gb10check.reading import probes
    from gb10check.reading.parsers.kernel_log import parse_kernel_log

    dmesg = tmp_path / "dmesg"
    dmesg.write_text(
        "#!/bin/sh\n"
        "[ -n \"$FAIL\" ] && { echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1; }\n"
        "echo '[    1.0] Linux version 6.11'; echo '[    2.0] mlx5_core 0000:01:00.0 enp1s0f0np0: Link up'\n"
    )
    dmesg.chmod(0o755)
    command = probes.KERNEL_LOG.command(SimpleNamespace(node=SimpleNamespace(sudo=False)))  # type: ignore[arg-type]
    env = f"PATH={tmp_path}:$PATH"
    res = _run((Probe("ok", f"export {env}; {command}"), Probe("fails", f"export {env} FAIL=1; {command}")))
    log = parse_kernel_log(res["ok"].stdout)
    assert res["ok"].rc == 0 and log.lines == 2 and [e.what for e in log.events] == ["up"]
    assert res["fails"].rc == 1 and "kernel log lines" not in res["fails"].stdout
    assert "Operation not permitted" in res["fails"].stderr


def test_large_outputs_are_split_whole():
    """Tens of MB of output (the frames of 35 probes, two of 16 MiB) split back, each frame whole
    (split_output walks the markers once; bench_bad_day.py times it)."""
    boundary = new_boundary()
    probes = tuple(Probe(f"p{i}", "x") for i in range(35))
    big = "x" * 60 + "\n"
    text = "".join(
        f"{boundary} begin {p.name}\n{big * 275_000 if i in (3, 20) else 'small'}\n{boundary} stderr {p.name}\n"
        f"\n{boundary} end {p.name} 0\n"
        for i, p in enumerate(probes)
    )
    res = split_output(text, probes, boundary, 1.0)
    assert [r.stdout for r in res.values()].count("small") == 33 and res["p3"].stdout == big * 275_000
