"""The one redaction step: secrets never leave the node in an excerpt, a message or a report.

Every excerpt of raw output, every error message and every expected/found value passes
`redact()` before it is shown or written. Three kinds of secret are replaced by `***`:
- the value of a name that looks like a secret (`HF_TOKEN=...`, `"API_KEY": "..."`,
  `--api-key ...`, `Authorization: Bearer ...`), whatever the value looks like;
- strings shaped like well-known tokens (`hf_...`, `sk-...`), wherever they stand;
- literal values registered with `register()`: the API key the suite itself sends, and the
  values of secret-looking keys read from a node's .env or a container's environment, so that
  they are hidden even where they stand without their name (a command line, a URL).
Redacting too much costs a less useful message; redacting too little leaks a token into a
nightly JUnit file that is kept for months. The patterns lean towards too much.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable

MASK = "***"
# a name is secret-looking when one of its words (split at _ . - and camelCase) is one of these:
# HF_TOKEN, api_key, apiKey, --api-key, DB_PASSWORD; not "passed", "max_tokens" or "keyboard"
_SECRET_WORDS = frozenset(
    {"token", "key", "secret", "secrets", "password", "passwd", "pwd", "pass", "passphrase", "apikey"}
    | {"auth", "authorization", "credential", "credentials"}
)
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_IDENT = r"[A-Za-z0-9_.-]*[A-Za-z][A-Za-z0-9_.-]*"
# NAME=value, NAME: value, "NAME": "value", NAME="value"
_ASSIGNED = re.compile(
    rf"(?P<name>(?<![A-Za-z0-9_.-]){_IDENT})(?P<sep>[\"']?[ \t]*[=:][ \t]*[\"']?)(?P<value>[^\s\"'\\,;}}\]]+)"
)
# --api-key VALUE, --hf-token VALUE (a command line)
_OPTION = re.compile(
    rf"(?P<name>(?<![A-Za-z0-9_.-])--{_IDENT})(?P<sep>[ \t]+)(?P<value>[^\s\"'\\,;}}\]-][^\s\"'\\,;}}\]]*)"
)
# English words that are also secret words: "the key: ..." in a message is not a secret's name
_PLAIN_WORDS = {"key", "pass", "auth", "token", "password", "secret"}
# names that point at a secret or describe one, and hold none: host_key_policy, api_key_env, HF_TOKEN_FILE
_NOT_A_SECRET = re.compile(r"(?i)[_-](policy|env|file|path|dir|name|type|id)$")
# Authorization schemes: Bearer/Basic take any credential; "token" (GitHub's scheme) only a credential-like
# one, a long run or one with a digit, so that English ("no token generated for 6 s") stays readable
_BEARER = re.compile(
    r"(?P<name>\b(?:Bearer|Basic|token))(?P<sep>[ \t]+)"
    r"(?P<value>(?<=[Bb]earer )[A-Za-z0-9._~+/=-]{4,}|(?<=[Bb]asic )[A-Za-z0-9._~+/=-]{4,}"
    r"|[A-Za-z0-9._~+/=-]{16,}|[A-Za-z._~+/=-]*\d[A-Za-z0-9._~+/=-]{3,})",
    re.IGNORECASE,
)
_SHAPED = re.compile(r"\b(?:hf_[A-Za-z0-9]{8,}|sk-[A-Za-z0-9_-]{8,}|gh[pousr]_[A-Za-z0-9]{20,})")
_MIN_LITERAL = 4  # shorter registered values would mask ordinary text
_MIN_HARVESTED = 8  # values found in raw output: shorter ones are flags and words more often than secrets
# values no secret has: booleans, the mask itself (ssh -o PasswordAuthentication=no stays readable)
_NO_SECRET = re.compile(r"(?i)^(true|false|yes|no|on|off|null|none|\*+)$")
# nor worth hiding wherever they appear (a PIN-like number would mask every count)
_WORDLIKE = re.compile(r"(?i)^(true|false|yes|no|on|off|null|none|[0-9.]+|\*+)$")

_lock = threading.Lock()
_literals: set[str] = set()


def is_secret_name(name: str) -> bool:
    name = name.strip("._-")
    if _NOT_A_SECRET.search(name):
        return False
    return any(word.lower() in _SECRET_WORDS for word in _WORD.findall(name))


def register(values: Iterable[str | None]) -> None:
    """Values to hide wherever they appear from now on (for this process)."""
    with _lock:
        _literals.update(v for v in values if v and len(v) >= _MIN_LITERAL and v != MASK)


def register_secret_values(env: dict[str, str]) -> None:
    """The values of the secret-looking names of an environment (a .env file, a container's Env)."""
    register(value for name, value in env.items() if is_secret_name(name))


def register_assigned(text: str) -> None:
    """Every value assigned to a secret-looking name in raw output (.env, compose, docker inspect)."""
    register(
        m["value"]
        for m in _ASSIGNED.finditer(text)
        if is_secret_name(m["name"].strip("._-"))
        and len(m["value"]) >= _MIN_HARVESTED
        and not _WORDLIKE.match(m["value"])
    )


def _mask_value(match: re.Match[str]) -> str:
    name = match["name"].strip("._-")
    if not is_secret_name(name) or (name in _PLAIN_WORDS and ":" in match["sep"]) or _NO_SECRET.match(match["value"]):
        return match[0]  # not a secret's name, prose ("the key: ..."), or a value no secret has
    return f"{match['name']}{match['sep']}{MASK}"


def redact(text: str) -> str:
    if not text:
        return text
    with _lock:
        literals = sorted(_literals, key=len, reverse=True)
    for value in literals:
        if value in text:
            text = text.replace(value, MASK)
    text = _BEARER.sub(lambda m: f"{m['name']}{m['sep']}{MASK}", text)
    text = _ASSIGNED.sub(_mask_value, text)
    text = _OPTION.sub(_mask_value, text)
    return _SHAPED.sub(MASK, text)


def redact_tree(value: object) -> object:
    """Every string of a JSON-shaped structure, redacted (before it is serialised: escapes intact)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_tree(v) for v in value]
    return value


def forget() -> None:
    """Drop the registered values (between self-tests)."""
    with _lock:
        _literals.clear()
