"""Every output: a new file in its folder, renamed over the old one."""

from __future__ import annotations

import os

import pytest

from gb10check import atomic


def test_a_symlink_at_the_path_is_replaced_not_written_through(tmp_path):
    target = tmp_path / "the-operators-file"
    target.write_text("keep me\n")
    link = tmp_path / "junit.xml"
    link.symlink_to(target)
    atomic.write(link, "<testsuites/>")
    assert target.read_text() == "keep me\n"
    assert not link.is_symlink() and link.read_text() == "<testsuites/>"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junit.xml", "the-operators-file"]  # no temporary left


def test_the_mode_is_an_ordinary_files_and_bytes_are_taken(tmp_path):
    path = tmp_path / "gb10check.prom"
    old = os.umask(0o027)
    try:
        atomic.write(path, b"gb10check_checks 1\n")
    finally:
        os.umask(old)
    assert path.read_bytes() == b"gb10check_checks 1\n"
    assert path.stat().st_mode & 0o777 == 0o640


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "summary.json"
    path.write_text("the last run\n")
    with pytest.raises(UnicodeEncodeError):
        atomic.write(path, "\ud800")  # a lone surrogate is no UTF-8
    assert path.read_text() == "the last run\n" and [p.name for p in tmp_path.iterdir()] == ["summary.json"]
