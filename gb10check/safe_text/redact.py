"""The one masking step: secrets never leave in an excerpt, a message or a report.

Two passes, by where the text comes from:
- `redact(text)` for what a node said (a tool's output, a log line, a file, a value found; an
  excerpt of it, errors.excerpt and errors.clip, is made with it): everything below is masked;
- `redact_known(text)` for the suite's own messages and reports, as the last line of defence:
  registered values and shaped tokens only. The suite's own words are never rewritten ("line 2 is
  not KEY=VALUE" stays so); what they quote from a node was masked when it was quoted.

What is replaced by `***`:
- literal values registered with `register()`: the API key the suite itself sends, and the values
  of secret-looking names read from a node's .env, compose or container environment, so that they
  are hidden where they stand without their name (a command line, a URL);
- strings shaped like a known kind of token, wherever they stand (gb10check/safe_text/secret_shapes.py):
  detect-secrets' token plugins (AWS key ids, JWTs, Slack, GitHub and GitLab tokens, private keys,
  credentials in a URL...) and the shapes this field's users hold that it lacks (NGC `nvapi-...`,
  Hugging Face `hf_...`, `sk-...`), both passes;
- in `redact` only, the value of a name that looks like a secret (`HF_TOKEN=...`, `"API_KEY": "..."`,
  `--api-key ...`, `Authorization: Bearer ...`, `password ...`), whatever the value looks like.
Redacting too much costs a less useful message; redacting too little leaks a token into a nightly
JUnit file kept for months. The patterns lean towards too much. The suite's own identifiers (node,
check, rail and hint names, `protect()`) are never masked, and never registered as a secret.

Linear in its input, and never long in one piece: every pattern is linear in Python's backtracking
engine (possessive runs after a name; every token shape, detect-secrets' included, runs on long
adversarial text in selftests/unit/test_redact.py), and no regex call sees more than WINDOW characters: a regex runs in
C holding the GIL, and a signal's handler (SIGTERM, Ctrl-C) waits for it to return.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator
from functools import cache

from gb10check.safe_text import secret_shapes

__all__ = [
    "MASK",
    "MAX_HARVESTED",
    "MAX_REGISTERED",
    "OVERLAP",
    "WINDOW",
    "forget",
    "is_secret_name",
    "protect",
    "redact",
    "redact_known",
    "redact_tree",
    "register",
    "register_assigned",
    "register_secret_values",
]

MASK = "***"
WINDOW = 1 << 16  # the most text one regex call sees: about a millisecond per rule
OVERLAP = 1 << 12  # a line longer than WINDOW is cut; the next stretch starts this much before the cut
# a name is secret-looking when one of its words (split at _ . - and camelCase) is one of these:
# HF_TOKEN, api_key, apiKey, --api-key, DB_PASSWORD; not "passed", "max_tokens" or "keyboard"
_SECRET_WORDS = frozenset(
    {"token", "key", "secret", "secrets", "password", "passwd", "pwd", "pass", "passphrase", "apikey"}
    | {"auth", "authorization", "credential", "credentials"}
)
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
# a name: a whole run of letters, digits and _.- (possessive: one attempt per run, never quadratic)
_NAME = r"(?P<name>(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]++)"
_VALUE = r"[^\s\"'\\,;}\]]"
# NAME=value, NAME: value, "NAME": "value", NAME="value"
_ASSIGNED = re.compile(rf"{_NAME}(?P<sep>[\"']?[ \t]*+[=:][ \t]*+[\"']?)(?P<value>{_VALUE}++)")
# --api-key VALUE, --hf-token VALUE (a command line)
_OPTION = re.compile(
    r"(?P<name>(?<![A-Za-z0-9_.-])--[A-Za-z0-9_.-]++)(?P<sep>[ \t]++)"
    rf"(?P<value>[^\s\"'\\,;}}\]-]{_VALUE}*+)"
)
# password VALUE, passphrase: VALUE, password is VALUE (a log line, a kernel message); a lowercase word
# after it is prose ("a password is required"), a value with a digit, a capital or a sign is not
_SPOKEN = re.compile(
    r"(?P<name>\bpass(?:word|wd|phrase)\b)(?P<sep>(?:[ \t]*+:[ \t]*+|[ \t]++)(?:(?:is|was)[ \t]++)?)"
    rf"(?P<value>(?!(?-i:[a-z]{{1,15}})(?![^\s\"'\\,;}}\]]))[^\s\"'\\,;}}\](<\[{{]{_VALUE}*+)",
    re.IGNORECASE,
)
# English words that are also secret words: "the key: ..." in a node's prose is not a secret's name
_PLAIN_WORDS = {"key", "pass", "auth", "token", "password", "secret"}
# names that point at a secret or describe one, and hold none: host_key_policy, api_key_env, HF_TOKEN_FILE
_NOT_A_SECRET = re.compile(r"(?i)[_-](policy|env|file|path|dir|name|type|id)$")
# Authorization schemes: Bearer/Basic take any credential; "token" (GitHub's scheme) only a credential-like
# one, a long run or one with a digit, so that English ("no token generated for 6 s") stays readable
_BEARER = re.compile(
    r"(?P<name>\b(?:Bearer|Basic|token))(?P<sep>[ \t]++)"
    r"(?P<value>(?<=[Bb]earer )[A-Za-z0-9._~+/=-]{4,}|(?<=[Bb]asic )[A-Za-z0-9._~+/=-]{4,}"
    r"|[A-Za-z0-9._~+/=-]{16,}|[A-Za-z._~+/=-]*\d[A-Za-z0-9._~+/=-]{3,})",
    re.IGNORECASE,
)
# a private key, masked whole by a linear scan: from a line detect-secrets' PrivateKeyDetector knows a key
# starts with (`BEGIN RSA PRIVATE KEY`...) to the key's end
_PEM_MIN_BODY = 64
_RUN = re.compile(r"\S*+")  # the rest of a value a window's cut fell into
_MIN_LITERAL = 4  # shorter registered values would mask ordinary text
# each registered value is searched for in every text masked: a node printing 20,000 secret assignments
# must not make every message cost 20,000 searches. At most this many values from one output (the
# first), so that a flooding log leaves room for every other output's, and this many in all
MAX_HARVESTED = 64
MAX_REGISTERED = 1024
_MIN_HARVESTED = 8  # values found in raw output: shorter ones are flags and words more often than secrets
# values no secret has: booleans, the mask itself (ssh -o PasswordAuthentication=no stays readable)
_NO_SECRET = re.compile(r"(?i)^(true|false|yes|no|on|off|null|none|\*+)$")
# nor worth hiding wherever they appear (a PIN-like number would mask every count)
_WORDLIKE = re.compile(r"(?i)^(true|false|yes|no|on|off|null|none|[0-9.]+|\*+)$")

_lock = threading.Lock()
_literals: set[str] = set()
_protected: set[str] = set()


def is_secret_name(name: str) -> bool:
    name = name.strip("._-")
    if _NOT_A_SECRET.search(name):
        return False
    return any(word.lower() in _SECRET_WORDS for word in _WORD.findall(name))


def _identifier(value: str) -> bool:
    """The suite's own identifier, or part of one (masking it would blank a node's name in every report)."""
    return any(value in name for name in _protected)


def register(values: Iterable[str | None]) -> None:
    """Values to hide wherever they appear from now on (for this process); never a word no secret
    is (true, none), nor one of the suite's own identifiers; at most MAX_REGISTERED, the first."""
    with _lock:
        for v in values:
            if len(_literals) >= MAX_REGISTERED:
                return
            if v and len(v) >= _MIN_LITERAL and not _NO_SECRET.match(v) and not _identifier(v):
                _literals.add(v)


def protect(names: Iterable[str]) -> None:
    """The suite's own identifiers (node, check, rail and hint names): never masked, never registered
    (a value registered before is dropped)."""
    with _lock:
        _protected.update(n for n in names if n)
        _literals.difference_update({v for v in _literals if _identifier(v)})


def register_secret_values(env: dict[str, str]) -> None:
    """The values of the secret-looking names of an environment (a .env file, a container's Env)."""
    register(value for name, value in env.items() if is_secret_name(name))


def register_assigned(text: str) -> None:
    """Every value assigned to a secret-looking name in raw output (.env, compose, docker inspect): the
    first MAX_HARVESTED of them (each is masked where it stands, with its name, whatever the count)."""
    values: dict[str, None] = {}
    for start, end, _ in _windows(text):
        for m in _ASSIGNED.finditer(text, start, end):
            if is_secret_name(m["name"]) and len(m["value"]) >= _MIN_HARVESTED and not _WORDLIKE.match(m["value"]):
                values[m["value"]] = None
        if len(values) >= MAX_HARVESTED:
            break
    register(list(values)[:MAX_HARVESTED])


def _named_value(m: re.Match[str]) -> bool:
    """A value to mask: its name is a secret's (not prose such as "the key: ..."), the value one a secret has."""
    name = m["name"].strip("._-")
    prose = name in _PLAIN_WORDS and ":" in m["sep"]
    return is_secret_name(name) and not prose and not _NO_SECRET.match(m["value"])


def _windows(text: str) -> Iterator[tuple[int, int, bool]]:
    """(start, end, cut): stretches of at most WINDOW characters, ending at a line's end where there is
    one in their second half; a longer line is cut (cut: True) and the next stretch starts OVERLAP
    characters before the cut, so a secret shorter than that is seen whole in one of them."""
    pos, n = 0, len(text)
    while n - pos > WINDOW:
        end = pos + WINDOW
        newline = text.rfind("\n", pos + WINDOW // 2, end)
        if newline >= 0:
            yield pos, newline + 1, False
            pos = newline + 1
        else:
            yield pos, end, True
            pos = end - OVERLAP
    yield pos, n, False


def _spans_in(window: str, everything: bool) -> Iterator[tuple[int, int]]:
    yield from secret_shapes.spans(window)
    if everything:
        for pattern in (_ASSIGNED, _OPTION):
            yield from (m.span("value") for m in pattern.finditer(window) if _named_value(m))
        yield from (m.span("value") for m in _SPOKEN.finditer(window) if not _NO_SECRET.match(m["value"]))
        yield from (m.span("value") for m in _BEARER.finditer(window))


@cache
def _key_starts() -> re.Pattern[str]:
    return re.compile("|".join(re.escape(start) for start in secret_shapes.private_key_starts()))


def _private_keys(text: str) -> Iterator[tuple[int, int]]:
    """A private key in one pass: from its BEGIN line (with the `-----` before it) to the first KEY-----
    (or KEY BLOCK-----) at least 64 characters on, else to the end of the text (a key cut short is still
    a key); the search goes on after it."""
    pos = 0
    while (m := _key_starts().search(text, pos)) is not None:
        dashes = text.rfind("-----", max(0, m.start() - 5), m.start())
        start = dashes if dashes >= 0 else m.start()
        end = _pem_end(text, m.end() + _PEM_MIN_BODY)
        yield start, end
        pos = max(end, m.end())


def _pem_end(text: str, start: int) -> int:
    at = start + 3
    while (at := text.find("-----", at)) >= 0:
        if text[at - 3 : at].upper() == "KEY" or text[max(start, at - 9) : at].upper() == "KEY BLOCK":
            return at + 5
        at += 1
    return len(text)


def _spans(text: str, everything: bool) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    reached = 0  # how far a value cut by a window's end was already followed
    for start, end, cut in _windows(text):
        for s, e in _spans_in(text[start:end], everything):
            s, e = s + start, e + start
            if cut and e == end and e > reached:  # the value goes on past the window: to its end
                run = _RUN.match(text, e)
                e = reached = run.end() if run else e
            spans.append((s, e))
    spans += _private_keys(text)
    return spans


def _shown(text: str, start: int, end: int, protected: tuple[str, ...], joined: str) -> bool:
    """The stretch lies within one of the suite's own identifiers where it stands: shown as it is."""
    piece = text[start:end]
    if piece not in joined:  # one search in C: most stretches are in no identifier
        return False
    for name in protected:
        if piece in name:
            at = text.find(name, max(0, end - len(name)), start + len(name))
            if 0 <= at <= start:
                return True
    return False


def _mask(text: str, everything: bool) -> str:
    if not text:
        return text
    with _lock:
        literals = sorted(_literals, key=len, reverse=True)
        protected = tuple(sorted(_protected))
    joined = "\n".join(protected)
    for value in literals:
        if value in text:
            text = text.replace(value, MASK)
    spans = sorted(s for s in _spans(text, everything) if s[0] < s[1] and not _shown(text, *s, protected, joined))
    merged: list[list[int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out, pos = [], 0
    for start, end in merged:
        out += [text[pos:start], MASK]
        pos = end
    return "".join([*out, text[pos:]])


def redact(text: str) -> str:
    """What a node said, fit to be shown: every secret the module knows of masked."""
    return _mask(text, everything=True)


def redact_known(text: str) -> str:
    """The suite's own message or report: registered values and shaped tokens masked, its words left."""
    return _mask(text, everything=False)


def redact_tree(value: object) -> object:
    """Every string of a JSON-shaped structure through `redact_known` (before it is serialised: the
    escapes stay intact): the reports' last line of defence."""
    if isinstance(value, str):
        return redact_known(value)
    if isinstance(value, dict):
        return {k: redact_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_tree(v) for v in value]
    return value


def forget() -> None:
    """Drop the registered values and the protected names (between self-tests)."""
    with _lock:
        _literals.clear()
        _protected.clear()
