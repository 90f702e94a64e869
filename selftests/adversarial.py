"""Text shaped to make a regex backtrack: shared by the self-tests (selftests/unit/test_redact.py,
test_hints.py) and the figures command (benchmarks/bench_bad_day.py).

A pattern that is quadratic in its input (`[\\w.-]*[a-z][\\w.-]*=`, `A.*B`) costs the square of the
length of the right text: for each pattern, that text is built from its own literals and keywords,
repeated with what could follow them (a letter, a digit, `=`, `:`, a space...), and from long runs
of the characters names and tokens are made of.
"""

from __future__ import annotations

import re

# the issue's own: one long run of letters, digits and _.- (the old masking took 33 s on 40,000)
RUN = "abc_DEF.123-"
_BASES = ("a", "A", "0", "aA0_.-", " ", "=", ":", "/", "-", ".", "a=", "a:", "a ", "a@", "a:b@", "://a", "://a:")
_TAILS = ("", "a", "A0", "=", " ", ":", "-", "_", ".", "0", "(", '"', "a" * 20, "0" * 20, "a" * 20 + ".")


def fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def run_of_name_characters(size: int) -> str:
    return fill(RUN, size)


def literals(pattern: str) -> set[str]:
    """The literal words a pattern's source holds (roughly: classes, escapes and operators taken out)."""
    text = re.sub(r"\\[a-zA-Z]|\[[^\]]*\]|\{[^}]*\}|\(\?[^:)]*[:)]|[()|*+?^$]", " ", pattern).replace("\\", "")
    return {word for word in text.split() if len(word) >= 2}


def texts_for(pattern: str, keywords: tuple[str, ...] = (), size: int = 64_000) -> dict[str, str]:
    """Inputs of `size` characters that make `pattern` do the most work per character, by name."""
    seeds = {*keywords, *(k.upper() for k in keywords), *literals(pattern)}
    out = {f"run of {base!r}": fill(base, size) for base in _BASES}
    for seed in sorted(seeds):
        for tail in _TAILS:
            out[f"{seed!r} + {tail[:6]!r}"] = fill(seed + tail, size)
    return out


def keyword_dense(size: int) -> str:
    """What starts every token shape's work (gb10check/safe_text/secret_shapes.toml's samples: detect-secrets'
    anchors and the field's prefixes) and every secret word of the masking, each followed by what a
    secret's name or value could be, over and over: every shape runs on every stretch of it."""
    from gb10check.safe_text import secret_shapes  # here: the e2e scenarios use the rest of this module on any checkout

    words = sorted({shape.sample for shape in secret_shapes.load()})
    unit = "".join(f"{k}{k.upper()}_A0-{k}=x{k}: " for k in words)
    unit += "token key=key HF_TOKEN= password --api-key Bearer -----BEGIN RSA PRIVATE KEY----- "
    return fill(unit, size)
