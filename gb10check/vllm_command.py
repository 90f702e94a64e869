"""What a vLLM container's command runs on a given rank, read statically (never executed).

The command is usually a bash script that branches on NODE_RANK: `if/elif/else/fi` on
`[ "$NODE_RANK" = 0 ]`-style tests are evaluated for the rank with the container's environment,
the script's own `NAME=value` assignments are expanded, anything else is a ParseError that says
what could not be read. Pure.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass

from gb10check.compose import VAR as _VAR
from gb10check.compose import ComposeService
from gb10check.errors import ParseError

BOOLEAN_FLAGS = frozenset(
    {
        "headless",
        "enable-prefix-caching",
        "no-enable-prefix-caching",
        "enable-auto-tool-choice",
        "trust-remote-code",
        "enforce-eager",
        "disable-log-requests",
        "enable-log-requests",
        "disable-log-stats",
        "enable-chunked-prefill",
        "no-enable-chunked-prefill",
        "disable-custom-all-reduce",
        "enable-expert-parallel",
        "async-scheduling",
    }
)
_SEPARATORS = frozenset({";", "&&", "||", "|", "&"})
_CONDITION = re.compile(r"^(?P<a>\S*)\s*(?P<op>==|=|!=|-eq|-ne)\s*(?P<b>\S*)$")


@dataclass(frozen=True)
class VllmRun:
    """One `vllm serve` invocation: the model argument and the options, names normalised."""

    model: str | None
    options: dict[str, str | None]  # "--max-model-len" -> "262144"; flags -> None
    argv: tuple[str, ...]

    def has(self, option: str) -> bool:
        return option in self.options

    def value(self, option: str) -> str | None:
        return self.options.get(option)


def _tokens(script: str) -> list[str]:
    text = script.replace("\\\n", " ").replace("\n", " ; ")
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError as exc:
        raise ParseError("the container command", f"cannot split it into shell words: {exc}", script) from exc


def substitute(token: str, env: dict[str, str]) -> str:
    """Container-side `$VAR` / `${VAR}` from the container environment; unknown ones stay as written."""
    return re.sub(rf"\$\{{({_VAR})\}}|\$({_VAR})", lambda m: env.get(m[1] or m[2], m[0]), token)


_ASSIGNMENT = re.compile(rf"^(?P<name>{_VAR})=(?P<value>.*)$", re.DOTALL)


def _expand(words: list[str], env: dict[str, str], local: dict[str, str]) -> list[str]:
    """Arguments after substitution; an unquoted `$args` of the script's own splits into words, as sh does."""
    out: list[str] = []
    for word in words:
        whole = re.fullmatch(rf"\$\{{({_VAR})\}}|\$({_VAR})", word)
        name = whole and (whole[1] or whole[2])
        if name and name in local:
            out += local[name].split()
        else:
            out.append(substitute(word, {**env, **local}))
    return out


def _condition(tokens: list[str], env: dict[str, str], script: str) -> bool:
    words = [substitute(t, env) for t in tokens if t not in ("[", "]", "[[", "]]", "test")]
    match = _CONDITION.match(" ".join(words))
    if not match or "$" in match["a"] + match["b"]:
        raise ParseError(
            "the container command", f"cannot evaluate the condition `{' '.join(tokens)}` for this rank", script
        )
    a, op, b = match["a"], match["op"], match["b"]
    if op in ("-eq", "-ne"):
        try:
            equal = int(a) == int(b)
        except ValueError as exc:
            raise ParseError("the container command", f"`{' '.join(tokens)}` compares non-numbers", script) from exc
    else:
        equal = a == b
    return equal if op in ("=", "==", "-eq") else not equal


def _vllm_options(argv: list[str]) -> tuple[str | None, dict[str, str | None]]:
    model = None
    options: dict[str, str | None] = {}
    i = 0
    if argv and not argv[0].startswith("-"):
        model, i = argv[0], 1
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("--"):
            key, eq, value = arg.partition("=")
            key = "--" + key[2:].replace("_", "-")
            if eq:
                options[key] = value
            elif key[2:] in BOOLEAN_FLAGS or i + 1 >= len(argv) or argv[i + 1].startswith("--"):
                options[key] = None
            else:
                options[key] = argv[i + 1]
                i += 1
        elif arg.startswith("-") and "=" in arg:  # vLLM's dotted config args: -cc.mode=0, -O.level=3
            key, _, value = arg.partition("=")
            options[key] = value
        elif arg.startswith("-"):
            options[arg] = None
        elif model is None:
            model = arg
        i += 1
    if "--model" in options and model is None:
        model = options["--model"]
    return model, options


def vllm_runs(script: str, env: dict[str, str]) -> list[VllmRun]:
    """The `vllm serve` invocations that run with this environment (NODE_RANK chooses branches)."""
    tokens = _tokens(script)
    frames: list[dict[str, bool]] = []  # per open `if`: active branch, some branch already taken
    local: dict[str, str] = {}  # the script's own variables (NAME=value)
    runs: list[VllmRun] = []

    def active() -> bool:
        return all(f["active"] for f in frames)

    def read_until(i: int, stop: str) -> tuple[list[str], int]:
        j = i
        while j < len(tokens) and tokens[j] != stop:
            j += 1
        if j == len(tokens):
            raise ParseError("the container command", f"`{tokens[i - 1]}` without `{stop}`", script)
        cond = [t for t in tokens[i:j] if t != ";"]
        return cond, j + 1

    i, at_start = 0, True
    while i < len(tokens):
        tok = tokens[i]
        if tok in _SEPARATORS:
            i, at_start = i + 1, True
            continue
        if at_start and tok == "if":
            cond, i = read_until(i + 1, "then")
            outer = active()
            taken = outer and _condition(cond, env, script)
            frames.append({"active": taken, "done": taken})
            continue
        if at_start and tok == "elif":
            if not frames:
                raise ParseError("the container command", "`elif` without `if`", script)
            cond, i = read_until(i + 1, "then")
            frame = frames.pop()
            outer = active()
            taken = outer and not frame["done"] and _condition(cond, env, script)
            frames.append({"active": taken, "done": frame["done"] or taken})
            continue
        if at_start and tok == "else":
            if not frames:
                raise ParseError("the container command", "`else` without `if`", script)
            frame = frames.pop()
            frames.append({"active": active() and not frame["done"], "done": True})
            i += 1
            continue
        if at_start and tok == "fi":
            if not frames:
                raise ParseError("the container command", "`fi` without `if`", script)
            frames.pop()
            i += 1
            continue
        # a simple command: its words up to the next separator
        j = i
        while j < len(tokens) and tokens[j] not in _SEPARATORS:
            j += 1
        words = tokens[i:j]
        if words and words[0] == "exec":
            words = words[1:]
        assignment = _ASSIGNMENT.match(words[0]) if len(words) == 1 else None
        if assignment and active():
            local[assignment["name"]] = substitute(assignment["value"], {**env, **local})
        if len(words) >= 2 and words[0].endswith("vllm") and words[1] == "serve" and active():
            argv = _expand(words[2:], env, local)
            model, options = _vllm_options(argv)
            runs.append(VllmRun(model, options, tuple(argv)))
        i, at_start = j, False
    if frames:
        raise ParseError("the container command", "`if` without `fi`", script)
    return runs


def rank_run(service: ComposeService, rank: int, what: str) -> VllmRun:
    """The one `vllm serve` this rank runs, read from the service's entrypoint and command.

    The service must have been loaded with this rank's .env: its NODE_RANK chooses the branch.
    """
    script = _script(service.script_argv)
    runs = vllm_runs(script, service.environment)
    if len(runs) != 1:
        found = "no `vllm serve`" if not runs else f"{len(runs)} `vllm serve` commands"
        raise ParseError(what, f"rank {rank} runs {found}; expected exactly one", script)
    return runs[0]


_SHELLS = frozenset({"sh", "bash", "dash", "ash", "ksh", "zsh"})
_SHORT_OPTIONS = re.compile(r"-[A-Za-z]+")


def _script(argv: list[str]) -> str:
    """The shell text of `bash -lc SCRIPT` / `sh -c SCRIPT`, or the argv itself when exec'd directly.

    Only a shell's own leading short options count: `vllm serve m -cc.cudagraph_mode=...` is no `-c`."""
    if argv and posixpath.basename(argv[0]) in _SHELLS:
        for i, arg in enumerate(argv[1:-1], 1):
            if not _SHORT_OPTIONS.fullmatch(arg):
                break
            if "c" in arg[1:]:
                return argv[i + 1]
    return " ".join(shlex.quote(a) for a in argv)
