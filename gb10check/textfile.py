"""Reading the files the suite is given (inventory, hints, scenarios): any bytes in, a clear error out.

A file in another encoding, a binary or a huge file is a mistake of the operator's set-up; it
gets one line naming the file, what is wrong and where (never an INTERNALERROR, never a 200 MB
read). A UTF-8 byte order mark, as some Windows editors write, is accepted.
"""

from __future__ import annotations

import codecs
from pathlib import Path

from gb10check.errors import InputFileError

__all__ = ["MAX_BYTES", "decode", "read_text"]

MAX_BYTES = 1024 * 1024  # an inventory, a hints file or a scenario is a few kB


def decode(data: bytes, source: str, what: str) -> str:
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or (len(data) > 1 and b"\x00" in data[:2]):
        raise InputFileError(f"{source}: {what} is UTF-16 (or another wide encoding); save it as UTF-8")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputFileError(
            f"{source}: {what} is not UTF-8 at byte {exc.start} (line {line}: 0x{data[exc.start]:02x}); "
            "save it as UTF-8 (a Latin-1 comment is the usual cause)"
        ) from exc
    if "\x00" in text:
        raise InputFileError(f"{source}: {what} holds a NUL byte at character {text.index(chr(0))}: not a text file")
    return text


def read_text(path: Path, what: str, limit: int = MAX_BYTES) -> str:
    """The file as text; OSError (not found, unreadable) passes through for the caller to word."""
    with Path(path).open("rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise InputFileError(f"{path}: {what} is larger than {limit // 1024} KiB: not the file you meant?")
    return decode(data, str(path), what)
