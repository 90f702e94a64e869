"""The sim's ib_write_bw reads -D as perftest does (perftest_parameters.c: strtol, refused when not above 0)."""

from __future__ import annotations

from sim.stubs import perftest as stub


def test_duration_is_read_as_strtol_reads_it():
    assert [stub._strtol(s) for s in ("5", "2.5", "0.5", "", "x", " 7")] == [5, 2, 0, 0, 0, 7]


def test_a_duration_under_one_second_is_refused_as_perftest_refuses_it():
    out, err, rc = stub.ib_write_bw({}, ["-d", "rocep1s0f0", "-D", "0.5", "-F", "--report_gbits"])
    assert (out, err, rc) == ("", " Duration period must be greater than 0\n", 1)
