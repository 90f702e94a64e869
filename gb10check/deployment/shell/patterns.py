"""Small pure pieces of bash's meaning: glob patterns as regular expressions, $'...' escapes, the
arithmetic of `$(( ))` and `(( ))` on integers, and `test`'s comparisons."""

from __future__ import annotations

import re
from collections.abc import Callable

from gb10check.errors import ParseError

__all__ = [
    "FILE_TESTS",
    "INT64",
    "MAX_BRACE_WORDS",
    "NUMERIC_TESTS",
    "ansi_c",
    "binary",
    "brace",
    "glob_regex",
    "numeric",
    "parse_int",
    "wrap",
]

# -- patterns (case, [[ == ]], ${NAME#pattern}) ------------------------------------------------------------------


def glob_regex(pattern: str) -> str:
    """A bash glob (unquoted text) as a regular expression: `*`, `?`, `[...]` with `!` or `^`, `\\x`."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            end = _bracket_end(pattern, i)
            if end is None:
                out.append(re.escape(c))
            else:
                out.append(_bracket(pattern[i + 1 : end]))
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _bracket_end(pattern: str, start: int) -> int | None:
    i = start + 1
    if i < len(pattern) and pattern[i] in "!^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
            continue
        if pattern[i] == "[" and pattern[i + 1 : i + 2] == ":":
            close = pattern.find(":]", i + 2)
            if close >= 0:
                i = close + 2
                continue
        if pattern[i] == "]":
            return i
        i += 1
    return None


_CLASSES = {
    "alpha": "a-zA-Z",
    "digit": "0-9",
    "alnum": "a-zA-Z0-9",
    "upper": "A-Z",
    "lower": "a-z",
    "space": r" \t\n\r\f\v",
    "blank": r" \t",
    "xdigit": "0-9A-Fa-f",
    "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
    "word": r"\w",
}


def _bracket(body: str) -> str:
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    out, i = [], 0
    while i < len(body):
        if body.startswith("[:", i):
            close = body.find(":]", i + 2)
            if close >= 0:
                out.append(_CLASSES.get(body[i + 2 : close], ""))
                i = close + 2
                continue
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            out.append(re.escape(body[i + 1]))
            i += 2
            continue
        out.append(c if c == "-" and 0 < i < len(body) - 1 else re.escape(c))
        i += 1
    return "[" + ("^" if negate else "") + "".join(out) + "]"


def ansi_c(text: str) -> str:
    """The value of $'...': bash's backslash escapes (\\n \\t \\xHH \\NNN \\uHHHH \\e \\' ...)."""
    simple = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "e": "\x1b", "E": "\x1b"}
    simple |= {"\\": "\\", "'": "'", '"': '"', "?": "?"}
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 >= len(text):
            out.append(c)
            i += 1
            continue
        n = text[i + 1]
        if n in simple:
            out.append(simple[n])
            i += 2
        elif n == "x":
            m = re.match(r"[0-9A-Fa-f]{1,2}", text[i + 2 :])
            out.append(chr(int(m[0], 16)) if m else "\\x")
            i += 2 + (len(m[0]) if m else 0)
        elif n in "uU":
            m = re.match(r"[0-9A-Fa-f]{1,4}" if n == "u" else r"[0-9A-Fa-f]{1,8}", text[i + 2 :])
            out.append(chr(int(m[0], 16)) if m else "\\" + n)
            i += 2 + (len(m[0]) if m else 0)
        elif n in "01234567":
            m = re.match(r"[0-7]{1,3}", text[i + 1 :])
            assert m is not None
            out.append(chr(int(m[0], 8) & 0xFF))
            i += 1 + len(m[0])
        elif n == "c" and i + 2 < len(text):
            out.append(chr(ord(text[i + 2]) & 0x1F))
            i += 3
        else:
            out.append("\\" + n)
            i += 2
    return "".join(out)


# -- integers as bash reads them ---------------------------------------------------------------------------------
_NUMBER = re.compile(
    r"^\s*(?P<sign>[-+]?)(?:(?P<base>\d+)#(?P<digits>[0-9A-Za-z@_]+)|0[xX](?P<hex>[0-9a-fA-F]+)|(?P<oct>0[0-7]*)|(?P<dec>[1-9]\d*))\s*$"
)
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ@_"
INT64 = 1 << 64


def wrap(n: int) -> int:
    """bash's integers are 64-bit and wrap around."""
    n %= INT64
    return n - INT64 if n >= INT64 // 2 else n


def parse_int(text: str) -> int | None:
    """A bash integer constant (decimal, 0x hex, 0 octal, base#digits), or None when it is not one."""
    m = _NUMBER.match(text)
    if not m:
        return None
    sign = -1 if m["sign"] == "-" else 1
    if m["hex"]:
        return wrap(sign * int(m["hex"], 16))
    if m["oct"]:
        return wrap(sign * int(m["oct"], 8))
    if m["dec"]:
        return wrap(sign * int(m["dec"]))
    base = int(m["base"])
    if not 2 <= base <= 64:
        return None
    value = 0
    for ch in m["digits"]:
        digit = _DIGITS.index(ch) if base > 36 else _DIGITS.index(ch.lower()) if ch.isalpha() else _DIGITS.index(ch)
        if digit >= base:
            return None
        value = value * base + digit
    return wrap(sign * value)


def binary(op: str, x: int, y: int, what: str) -> int:
    """One of bash's binary arithmetic operators on 64-bit integers."""
    if op in ("/", "%") and y == 0:
        raise ParseError(what, "division by 0 in an arithmetic expansion (bash stops the command there)", what)
    table: dict[str, Callable[[], int]] = {
        "+": lambda: x + y,
        "-": lambda: x - y,
        "*": lambda: x * y,
        "/": lambda: int(x / y),  # C's division: toward zero
        "%": lambda: x - int(x / y) * y,
        "**": lambda: x**y if y >= 0 else 0,
        "<<": lambda: x << (y & 63),
        ">>": lambda: x >> (y & 63),
        "&": lambda: x & y,
        "|": lambda: x | y,
        "^": lambda: x ^ y,
        "==": lambda: int(x == y),
        "!=": lambda: int(x != y),
        "<": lambda: int(x < y),
        ">": lambda: int(x > y),
        "<=": lambda: int(x <= y),
        ">=": lambda: int(x >= y),
        "&&": lambda: int(bool(x) and bool(y)),
        "||": lambda: int(bool(x) or bool(y)),
        ",": lambda: y,
    }
    if op == "**" and y > 4096:  # a script's own arithmetic never needs more; bash wraps, this refuses
        raise ParseError(what, f"{x} ** {y} is larger than a launch script computes", what)
    return wrap(table[op]())


# -- test / [ ] / [[ ]] ---------------------------------------------------------------------------------------
NUMERIC_TESTS = {"-eq", "-ne", "-lt", "-gt", "-le", "-ge"}
FILE_TESTS = frozenset(
    [
        "-a",
        "-b",
        "-c",
        "-d",
        "-e",
        "-f",
        "-g",
        "-h",
        "-k",
        "-p",
        "-r",
        "-s",
        "-t",
        "-u",
        "-w",
        "-x",
        "-G",
        "-L",
        "-N",
        "-O",
        "-S",
    ]
)


def numeric(op: str, a: int, b: int) -> bool:
    return {"-eq": a == b, "-ne": a != b, "-lt": a < b, "-gt": a > b, "-le": a <= b, "-ge": a >= b}[op]


MAX_BRACE_WORDS = 4096  # more words than a launch script's loop over node numbers makes


def brace(text: str) -> tuple[int, int, list[str]] | None:
    """The first brace expansion bash makes of an unquoted literal: (start, end, the alternatives), a
    `{A,B}` list or a `{X..Y[..STEP]}` sequence of integers or letters; None when there is none (`{}`,
    `{a}`, an escaped brace, `${`)."""
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == "{" and not (i and text[i - 1] == "$"):
            end = _brace_end(text, i)
            if end is not None:
                body = text[i + 1 : end]
                alternatives = _alternatives(body)
                if alternatives is None:
                    alternatives = _sequence(body)
                if alternatives is not None:
                    return i, end + 1, alternatives
        i += 1
    return None


def _brace_end(text: str, start: int) -> int | None:
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _alternatives(body: str) -> list[str] | None:
    out, depth, current, i = [], 0, "", 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            current += body[i : i + 2]
            i += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        if c == "," and depth == 0:
            out.append(current)
            current = ""
        else:
            current += c
        i += 1
    out.append(current)
    return out if len(out) > 1 else None


_SEQUENCE = re.compile(r"(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?")


def _sequence(body: str) -> list[str] | None:
    m = _SEQUENCE.fullmatch(body)
    if m is None:
        return None
    a, b, step_text = m[1], m[2], m[3]
    step = abs(int(step_text)) if step_text else 1
    step = step or 1
    if a.lstrip("-").isdigit() != b.lstrip("-").isdigit():
        return None  # bash leaves {1..z} as it is
    if a.lstrip("-").isdigit():
        x, y = int(a), int(b)
        if abs(y - x) // step + 1 > MAX_BRACE_WORDS:
            return None
        width = (
            max(len(a), len(b))
            if (a.lstrip("-").startswith("0") and len(a.lstrip("-")) > 1)
            or (b.lstrip("-").startswith("0") and len(b.lstrip("-")) > 1)
            else 0
        )
        values = range(x, y + 1, step) if x <= y else range(x, y - 1, -step)
        return [f"{v:0{width}d}" if width else str(v) for v in values]
    x, y = ord(a), ord(b)
    values = range(x, y + 1, step) if x <= y else range(x, y - 1, -step)
    return [chr(v) for v in values]
