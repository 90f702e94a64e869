"""Files the suite is given: any bytes in, a clear error out."""

from __future__ import annotations

import pytest

from gb10check.errors import InputFileError
from gb10check.textfile import decode, read_text


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"# caf\xe9\n", "not UTF-8 at byte 5 (line 1: 0xe9)"),
        (b"a = 1\nb = '\xff'\n", "not UTF-8 at byte 11 (line 2: 0xff)"),
        ("a = 1\n".encode("utf-16"), "UTF-16"),
        ("a = 1\n".encode("utf-16-le"), "UTF-16"),
        (b"a = 1\x00\n", "NUL byte"),
    ],
)
def test_undecodable_bytes_are_named(data, message):
    with pytest.raises(InputFileError) as err:
        decode(data, "x.toml", "the inventory")
    assert str(err.value).startswith("x.toml: the inventory ") and message in str(err.value)


def test_a_bom_is_dropped():
    assert decode(b"\xef\xbb\xbfa = 1\n", "x.toml", "the inventory") == "a = 1\n"


def test_a_huge_file_is_not_read(tmp_path):
    big = tmp_path / "big.toml"
    with big.open("wb") as fh:
        fh.truncate(50 * 1024 * 1024)
    with pytest.raises(InputFileError, match="larger than 1024 KiB"):
        read_text(big, "the inventory")
