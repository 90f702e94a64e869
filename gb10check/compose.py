"""A docker-compose deployment read the way Docker Compose reads it, and what each rank runs.

Pure: text in, a typed view out, ParseError with the offending excerpt otherwise.

- `parse_dotenv`: the `.env` beside the compose file (KEY=VALUE, quotes, comments, `export`).
- `interpolate`: Compose's `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?err}`,
  `${VAR:+alt}`, `$VAR` and `$$` (a literal `$` left for the container's shell).
- `load_service`: YAML (a real parser) -> the vLLM service, interpolated with the node's .env.
- `VllmRun`: the `vllm serve` command a given rank runs. The command is usually a bash script
  that branches on NODE_RANK; it is read statically (never executed): `if/elif/else/fi` on
  `[ "$NODE_RANK" = 0 ]`-style tests are evaluated for the rank, container variables are
  substituted, anything else is a ParseError that says what could not be read.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

import yaml

from gb10check.errors import ParseError

# -- .env --------------------------------------------------------------------------------------
_ENV_LINE = re.compile(r"^\s*(?:export\s+)?(?P<key>[A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(?P<value>.*)$")


def parse_dotenv(text: str, what: str = ".env") -> dict[str, str]:
    out: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _ENV_LINE.match(line)
        if not match:
            raise ParseError(what, f"line {number} is not KEY=VALUE: {line!r}", text)
        value = match["value"].strip()
        if value[:1] in ("'", '"'):
            quote = value[0]
            end = value.find(quote, 1)
            if end < 0:
                raise ParseError(what, f"line {number}: unterminated {quote} quote", text)
            value = value[1:end]
        else:
            value = re.split(r"\s+#", value, maxsplit=1)[0].strip()
        out[match["key"]] = value
    return out


# -- interpolation -----------------------------------------------------------------------------
_VAR = r"[A-Za-z_][A-Za-z0-9_]*"
_INTERP = re.compile(
    rf"\$(?:(?P<dollar>\$)|(?P<plain>{_VAR})|\{{(?P<braced>{_VAR})(?:(?P<op>:?[-?+])(?P<arg>[^}}]*))?\}})"
)


@dataclass
class Interpolation:
    env: dict[str, str]
    missing: set[str] = field(default_factory=set)

    def __call__(self, text: str) -> str:
        def sub(m: re.Match[str]) -> str:
            if m["dollar"]:
                return "$"
            name = m["plain"] or m["braced"]
            op, arg, value = m["op"], m["arg"] or "", self.env.get(name)
            unset, empty = value is None, not value
            if op in (":-", "-"):
                return arg if (empty if op == ":-" else unset) else str(value)
            if op in (":+", "+"):
                return "" if (empty if op == ":+" else unset) else arg
            if op in (":?", "?") and (empty if op == ":?" else unset):
                raise ParseError("compose interpolation", f"required variable {name} is not set: {arg}", m[0])
            if value is None:
                self.missing.add(name)
                return ""
            return value

        return _INTERP.sub(sub, text)

    def walk(self, node: Any) -> Any:
        if isinstance(node, str):
            return self(node)
        if isinstance(node, list):
            return [self.walk(v) for v in node]
        if isinstance(node, dict):
            return {k: self.walk(v) for k, v in node.items()}
        return node


# -- the compose service -----------------------------------------------------------------------
_SIZE = re.compile(r"^\s*(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>[bkmgt]?)b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(value: object, what: str) -> int:
    """Compose byte sizes ("105G", "105gb", 112742891520): binary units, as Docker reads them."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    match = _SIZE.match(str(value))
    if not match:
        raise ParseError(what, "not a size like 105G", str(value))
    return int(float(match["n"]) * _UNITS[match["unit"].lower()])


@dataclass(frozen=True)
class Service:
    name: str
    raw: dict[str, Any]  # interpolated
    environment: dict[str, str]
    missing_variables: frozenset[str]

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)

    @property
    def image(self) -> str | None:
        value = self.raw.get("image")
        return str(value) if value is not None else None

    @property
    def restart(self) -> str | None:
        value = self.raw.get("restart")
        if value is False:  # YAML 1.1 reads a bare `no` as false; Compose (YAML 1.2) as the string "no"
            return "no"
        return None if value is None else str(value)

    @property
    def devices(self) -> list[str]:
        out = []
        for dev in self.raw.get("devices") or []:
            out.append(str(dev.get("source", "")) if isinstance(dev, dict) else str(dev).split(":")[0])
        return out

    @property
    def cap_add(self) -> list[str]:
        return [str(c).upper().removeprefix("CAP_") for c in self.raw.get("cap_add") or []]

    def ulimit(self, name: str) -> tuple[int | None, int | None] | None:
        value = (self.raw.get("ulimits") or {}).get(name)
        if value is None:
            return None
        if isinstance(value, dict):
            return _int_or_none(value.get("soft")), _int_or_none(value.get("hard"))
        return _int_or_none(value), _int_or_none(value)

    @property
    def memory_limit(self) -> int | None:
        limit = self.raw.get("mem_limit")
        if limit is None:
            limit = ((self.raw.get("deploy") or {}).get("resources") or {}).get("limits", {}).get("memory")
        return None if limit is None else parse_size(limit, f"service {self.name} memory limit")

    @property
    def script_argv(self) -> list[str]:
        """entrypoint + command as Docker will exec them (Compose shell-splits string forms)."""
        return _argv(self.raw.get("entrypoint")) + _argv(self.raw.get("command"))


def _int_or_none(value: object) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


def _argv(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    return shlex.split(str(value))


def _environment(raw: object) -> dict[str, str]:
    if isinstance(raw, dict):
        return {str(k): "" if v is None else str(v) for k, v in raw.items()}
    out = {}
    for item in raw if isinstance(raw, list) else []:
        key, _, value = str(item).partition("=")
        out[key] = value
    return out


def load_service(
    text: str,
    dotenv: dict[str, str],
    *,
    container: str | None,
    what: str,
    compose_dir: str = "/",
    env_files: dict[str, dict[str, str]] | None = None,
) -> Service:
    """The vLLM service of a compose file, interpolated with `dotenv`.

    `env_files` maps the absolute paths of env files the suite has read to their variables; the
    container's environment is the service's `env_file:` entries (relative to `compose_dir`) that
    are among them, then `environment:`, as Docker builds it.
    """
    env_files = env_files or {}
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ParseError(what, f"not valid YAML: {exc}".replace("\n", " "), text) from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("services"), dict) or not doc["services"]:
        raise ParseError(what, "no 'services:' mapping", text)
    services: dict[str, Any] = doc["services"]
    chosen = [n for n, s in services.items() if isinstance(s, dict) and s.get("container_name") == container]
    if not chosen and len(services) == 1:
        chosen = list(services)
    if len(chosen) != 1:
        raise ParseError(
            what, f"no service with container_name {container!r} among {', '.join(map(str, services))}", text
        )
    name = chosen[0]
    interp = Interpolation(dict(dotenv))
    raw = interp.walk(services[name])
    if not isinstance(raw, dict):
        raise ParseError(what, f"service {name} is not a mapping", text)
    env: dict[str, str] = {}
    files = raw.get("env_file") or []
    for entry in [files] if isinstance(files, str | dict) else files:
        path = str(entry.get("path") if isinstance(entry, dict) else entry)
        env.update(env_files.get(posixpath.normpath(posixpath.join(compose_dir, path)), {}))
    env.update(_environment(raw.get("environment")))
    return Service(str(name), raw, env, frozenset(interp.missing))


# -- what a rank runs ----------------------------------------------------------------------------
# vLLM flags that take no value (the rest take one: `--x v` or `--x=v`)
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

    def text(self) -> str:
        return " ".join(shlex.quote(a) for a in self.argv)


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


def rank_run(service: Service, rank: int, what: str) -> VllmRun:
    """The one `vllm serve` this rank runs, read from the service's entrypoint and command.

    The service must have been loaded with this rank's .env: its NODE_RANK chooses the branch.
    """
    script = _script(service.script_argv)
    runs = vllm_runs(script, service.environment)
    if len(runs) != 1:
        found = "no `vllm serve`" if not runs else f"{len(runs)} `vllm serve` commands"
        raise ParseError(what, f"rank {rank} runs {found}; expected exactly one", script)
    return runs[0]


def _script(argv: list[str]) -> str:
    """The shell text of `bash -lc SCRIPT` / `sh -c SCRIPT`, or the argv itself when exec'd directly."""
    for i, arg in enumerate(argv[:-1]):
        if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:] and i >= 1:
            return argv[i + 1]
    return " ".join(shlex.quote(a) for a in argv)
