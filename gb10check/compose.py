"""A docker-compose deployment read the way Docker Compose reads it.

Pure: text in, a typed view out, ParseError with the offending excerpt otherwise.

- `parse_dotenv`: the `.env` beside the compose file (KEY=VALUE, quotes, comments, `export`).
- `Interpolation`: Compose's `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?err}`,
  `${VAR:+alt}`, `$VAR` and `$$` (a literal `$` left for the container's shell).
- `load_service`: YAML (a real parser) -> the vLLM service, interpolated with the node's .env.

What the service's command runs on each rank is gb10check.vllm_command's job.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass
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
VAR = r"[A-Za-z_][A-Za-z0-9_]*"  # a shell or Compose variable name
_INTERP = re.compile(
    rf"\$(?:(?P<dollar>\$)|(?P<plain>{VAR})|\{{(?P<braced>{VAR})(?:(?P<op>:?[-?+])(?P<arg>[^}}]*))?\}})"
)


@dataclass
class Interpolation:
    env: dict[str, str]

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
            return "" if value is None else value  # Compose: an unset variable is empty (with a warning)

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
class ComposeService:
    name: str
    raw: dict[str, Any]  # interpolated
    environment: dict[str, str]

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
) -> ComposeService:
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
    return ComposeService(str(name), raw, env)


# -- what a rank runs ----------------------------------------------------------------------------
# vLLM flags that take no value (the rest take one: `--x v` or `--x=v`)
