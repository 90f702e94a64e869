"""gb10check's own reading of a compose file, for nodes without the Docker Compose plugin.

Pure. It produces the shape `docker compose config --format json` prints (gb10check.deployment.compose) and
follows Compose v2 where the two could differ (selftests/unit/test_compose_differential.py runs
both on the same cases); what it cannot read the way Compose does, it refuses with a ParseError
naming the construct, never a guess:

- `parse_dotenv`: `.env` files as Compose reads them (quotes, escapes, multi-line values, comments,
  `export`, `${VAR}` references to earlier values).
- `Interpolation`: `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:?err}`, `${VAR:+alt}`,
  `$VAR` and `$$` (a literal `$` left for the container's shell).
- `load_service`: YAML read as Compose's Go parser reads it (`yes` is a string, `1e3` a number, a
  key written twice an error), checked against Compose's schema's keys, profiles applied,
  interpolated, env_file entries then environment:, bare names filled from the .env.
"""

from __future__ import annotations

import math
import posixpath
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import yaml

from gb10check.deployment.compose import ComposeService, choose_service, parse_size
from gb10check.errors import ParseError, excerpt
from gb10check.safe_text.redact import redact

__all__ = ["FALLBACK", "SERVICE_KEYS", "TOP_LEVEL_KEYS", "VAR", "Interpolation", "load_service", "parse_dotenv"]

FALLBACK = "gb10check's own reader"
VAR = r"[A-Za-z_][A-Za-z0-9_]*"  # a shell or Compose variable name

# Compose's schema (compose_spec.json inside Docker Compose v2.40.3): the keys it allows
TOP_LEVEL_KEYS = frozenset(
    ("version", "name", "include", "services", "models", "networks", "volumes", "secrets", "configs")
)
SERVICE_KEYS = frozenset((
    "annotations", "attach", "blkio_config", "build", "cap_add", "cap_drop", "cgroup", "cgroup_parent", "command",
    "configs", "container_name", "cpu_count", "cpu_percent", "cpu_period", "cpu_quota", "cpu_rt_period",
    "cpu_rt_runtime", "cpu_shares", "cpus", "cpuset", "credential_spec", "depends_on", "deploy", "develop",
    "device_cgroup_rules", "devices", "dns", "dns_opt", "dns_search", "domainname", "entrypoint", "env_file",
    "environment", "expose", "extends", "external_links", "extra_hosts", "gpus", "group_add", "healthcheck",
    "hostname", "image", "init", "ipc", "isolation", "label_file", "labels", "links", "logging", "mac_address",
    "mem_limit", "mem_reservation", "mem_swappiness", "memswap_limit", "models", "network_mode", "networks",
    "oom_kill_disable", "oom_score_adj", "pid", "pids_limit", "platform", "ports", "post_start", "pre_stop",
    "privileged", "profiles", "provider", "pull_policy", "pull_refresh_after", "read_only", "restart", "runtime",
    "scale", "secrets", "security_opt", "shm_size", "stdin_open", "stop_grace_period", "stop_signal", "storage_opt",
    "sysctls", "tmpfs", "tty", "ulimits", "use_api_socket", "user", "userns_mode", "uts", "volumes", "volumes_from",
    "working_dir",
))  # fmt: skip

# -- interpolation -----------------------------------------------------------------------------
_INTERP = re.compile(
    rf"\$(?:(?P<dollar>\$)|(?P<plain>{VAR})|\{{(?P<braced>{VAR})(?:(?P<op>:?[-?+])(?P<arg>[^${{}}]*))?\}})"
)


@dataclass
class Interpolation:
    env: dict[str, str]
    what: str = "compose interpolation"

    def __call__(self, text: str) -> str:
        def sub(m: re.Match[str]) -> str:
            if m["dollar"]:
                return "\0"  # a literal `$`, put back after the pass (never read as a reference)
            name = m["plain"] or m["braced"]
            op, arg, value = m["op"], m["arg"] or "", self.env.get(name)
            unset, empty = value is None, not value
            if op in (":-", "-"):
                return arg if (empty if op == ":-" else unset) else str(value)
            if op in (":+", "+"):
                return "" if (empty if op == ":+" else unset) else arg
            if op in (":?", "?") and (empty if op == ":?" else unset):
                raise ParseError(self.what, f"required variable {name} is not set: {redact(arg)}", m[0])
            return "" if value is None else value  # Compose: an unset variable is empty (with a warning)

        def literal(m: re.Match[str]) -> str:  # a value put in is not read again: its `$` stays a `$`
            return sub(m).replace("$", "\0")

        out = _INTERP.sub(literal, text)
        if "$" in out:  # ${A:-${B}}, ${A/x/y}, $1: Compose reads more than this reader follows
            raise ParseError(self.what, f"{FALLBACK} does not follow this interpolation (nested or unknown form)", text)
        return out.replace("\0", "$")

    def walk(self, node: Any) -> Any:
        if isinstance(node, str):
            return self(node)
        if isinstance(node, list):
            return [self.walk(v) for v in node]
        if isinstance(node, dict):
            return {k: self.walk(v) for k, v in node.items()}
        return node


# -- .env --------------------------------------------------------------------------------------
_KEY = re.compile(r"[ \t]*(?:export[ \t]+)?(?P<key>[A-Za-z_][A-Za-z0-9_.-]*)[ \t]*=[ \t]*")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "$": "$$"}


def parse_dotenv(text: str, what: str = ".env", outer: dict[str, str] | None = None) -> dict[str, str]:
    """KEY=VALUE lines; values may refer to earlier keys (and to `outer`) as Compose's do."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n")
    out: dict[str, str] = {}
    pos, number = 0, 1
    while pos < len(text):
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        line = text[pos:end]
        if not line.strip() or line.lstrip().startswith("#"):
            pos, number = end + 1, number + 1
            continue
        match = _KEY.match(line)
        if not match:
            raise ParseError(what, f"line {number} is not KEY=VALUE: {excerpt(line, 120)}", text)
        start = pos + match.end()
        quote = text[start : start + 1]
        interp = Interpolation({**(outer or {}), **out}, what)
        if quote in ("'", '"'):
            close = _closing_quote(text, start + 1, quote)
            if close < 0:
                raise ParseError(what, f"line {number}: unterminated {quote} quote", text)
            body = text[start + 1 : close]
            rest_end = text.find("\n", close)
            rest_end = len(text) if rest_end < 0 else rest_end
            rest = text[close + 1 : rest_end].strip()
            if rest and not rest.startswith("#"):
                raise ParseError(what, f"line {number}: text after the closing quote: {excerpt(rest, 120)}", text)
            if quote == "'":
                value = body  # literal: no escapes, no interpolation
            else:
                unescaped = re.sub(r"\\(.)", lambda m: _ESCAPES.get(m[1], "\\" + m[1]), body)
                value = interp(unescaped)
            number += text.count("\n", pos, rest_end)
            pos = rest_end + 1
        else:
            raw = re.split(r"[ \t]+#", line[match.end() :], maxsplit=1)[0].strip()
            value = interp(raw)
            pos = end + 1
        out[match["key"]] = value
        number += 1
    return out


def _closing_quote(text: str, i: int, quote: str) -> int:
    while i < len(text):
        if text[i] == "\\" and quote == '"':
            i += 2
            continue
        if text[i] == quote:
            return i
        i += 1
    return -1


# -- YAML as Compose's Go parser reads it ----------------------------------------------------------
class _Yaml12Loader(yaml.SafeLoader):  # type: ignore[misc]
    """PyYAML speaks YAML 1.1 (`yes`/`on` are booleans, `1:30` a base-60 number); Compose's parser
    reads those as strings. Booleans are only true/false, numbers have no base-60 form."""


_Yaml12Loader.yaml_implicit_resolvers = {
    first: [
        (tag, rx)
        for tag, rx in resolvers
        if tag not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
    ]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:int",
    re.compile(r"^(?:[-+]?0b[0-1_]+|[-+]?0o?[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+)$"),
    list("-+0123456789"),
)
_Yaml12Loader.add_implicit_resolver(  # Go's YAML: 1e3 is a float too (PyYAML's 1.1 wants a dot)
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:\.[0-9_]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)


def _mapping(loader: _Yaml12Loader, node: yaml.MappingNode) -> dict[Any, Any]:
    """Compose's parser refuses a key written twice in one mapping (PyYAML keeps the last)."""
    seen: dict[object, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"mapping key {key!r} already defined at line {seen[key] + 1}", key_node.start_mark
            )
        seen[key] = key_node.start_mark.line
    return yaml.SafeLoader.construct_yaml_map(loader, node)  # type: ignore[no-any-return]


_Yaml12Loader.add_constructor("tag:yaml.org,2002:map", _mapping)


def _go_float(value: float) -> str:
    """A float as Go's strconv formats it ('g', shortest): 1e+06, 1.5, 0.0001, 1e-05, +Inf."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    sign = "-" if value < 0 else ""
    _, digit_tuple, exponent = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    point = len(digits) + int(exponent)  # where the decimal point falls among the digits
    if not -4 <= point - 1 < 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{point - 1:+03d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _scalar(value: object) -> str:
    """An environment value as Compose writes it: true/false lower-case, numbers as Go prints them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _go_float(value)
    return str(value)


# -- the service ---------------------------------------------------------------------------------
def _environment(raw: object, dotenv: dict[str, str]) -> dict[str, str | None]:
    """environment: as a list or a mapping; a bare name takes its value from the .env (None: unset)."""
    items: list[tuple[str, object]] = []
    if isinstance(raw, dict):
        items = [(str(k), v) for k, v in raw.items()]
    elif isinstance(raw, list):
        for item in raw:
            key, eq, value = str(item).partition("=")
            items.append((key, value if eq else None))
    return {k: dotenv.get(k) if v is None else _scalar(v) for k, v in items}


def load_service(
    text: str,
    dotenv: dict[str, str],
    *,
    container: str | None,
    what: str,
    compose_dir: str = "/",
    env_files: dict[str, dict[str, str]] | None = None,
    overrides: tuple[str, ...] = (),
    why: str = "no Docker Compose plugin on the node",
    service: str | None = None,
) -> ComposeService:
    """The vLLM service of a compose file, interpolated with `dotenv`.

    `env_files` maps the absolute paths of env files the suite has read to their variables; an
    `env_file:` entry that is not among them is refused (its values are unknown). `overrides`: the
    override files Compose would merge; this reader refuses them rather than merge them its way.
    """
    env_files = env_files or {}
    if overrides:
        raise ParseError(
            what, f"{FALLBACK} does not merge override files and Compose would merge {', '.join(overrides)}", text
        )
    try:
        doc = yaml.load(text.removeprefix("\ufeff"), Loader=_Yaml12Loader)
    except yaml.YAMLError as exc:
        raise ParseError(what, f"not valid YAML: {redact(str(exc))}".replace("\n", " "), text) from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("services"), dict) or not doc["services"]:
        raise ParseError(what, "no 'services:' mapping", text)
    _check_keys(doc, what, text)
    interp = Interpolation(dict(dotenv), what)
    services = {name: interp.walk(svc) for name, svc in doc["services"].items()}
    services, left_out = _active_services(services, dotenv)
    name = choose_service(services, container, what, text, left_out=left_out, service=service)
    raw = services[name]
    env: dict[str, str | None] = {}
    files = raw.get("env_file") or []
    for entry in [files] if isinstance(files, str | dict) else files:
        path = posixpath.normpath(
            posixpath.join(compose_dir, str(entry.get("path") if isinstance(entry, dict) else entry))
        )
        if path not in env_files:
            raise ParseError(
                what, f"{FALLBACK} has not read the env_file {path} (only {', '.join(env_files) or 'none'})", text
            )
        env.update(env_files[path])
    env.update(_environment(raw.get("environment"), dotenv))
    _check_memory(raw, name, what, text)
    raw = {**raw, "environment": env}
    return ComposeService(name, raw, {k: v for k, v in env.items() if v is not None}, FALLBACK, why)


def _active_services(services: dict[str, Any], dotenv: dict[str, str]) -> tuple[dict[str, Any], str]:
    """The services Compose runs, and what it leaves out: a service with `profiles:` none of which
    COMPOSE_PROFILES (in the .env) activates ("*" activates all)."""
    active = {p for p in dotenv.get("COMPOSE_PROFILES", "").split(",") if p}
    hidden = {
        name: [str(p) for p in svc.get("profiles") or []]
        for name, svc in services.items()
        if svc.get("profiles") and "*" not in active and not active.intersection(map(str, svc["profiles"]))
    }
    if not hidden:
        return services, ""
    left_out = ", ".join(f"{n} is behind profiles {', '.join(p)}" for n, p in hidden.items())
    left_out += f", not active (COMPOSE_PROFILES in the .env: {','.join(sorted(active)) or 'unset'})"
    return {n: svc for n, svc in services.items() if n not in hidden}, left_out


def _check_keys(doc: dict[str, Any], what: str, text: str) -> None:
    """Compose validates against its schema: a misspelt key (`enviroment:`) is an error there, not a
    setting silently missing. `extends` and `include` merge other definitions in Compose's way: refused."""
    for key in doc:
        if key not in TOP_LEVEL_KEYS and not str(key).startswith("x-"):
            raise ParseError(
                what,
                f"additional property {excerpt(str(key), 80)} not allowed at the top level (Compose's schema)",
                text,
            )
    if "include" in doc:
        raise ParseError(what, f"{FALLBACK} does not follow `include:` (Compose merges the included files)", text)
    for name, service in doc["services"].items():
        if not isinstance(service, dict):
            raise ParseError(what, f"service {name} is not a mapping", text)
        unknown = [str(k) for k in service if k not in SERVICE_KEYS and not str(k).startswith("x-")]
        if unknown:
            raise ParseError(
                what, f"services.{name}: additional property {', '.join(map(repr, unknown))} not allowed", text
            )
        if "extends" in service:
            raise ParseError(what, f"services.{name}: {FALLBACK} does not follow `extends` (Compose merges it)", text)


def _check_memory(raw: dict[str, Any], name: str, what: str, text: str) -> None:
    """Compose refuses two different limits; so does this reader."""
    mem = raw.get("mem_limit")
    deploy = ((raw.get("deploy") or {}).get("resources") or {}).get("limits", {}).get("memory")
    if mem is not None and deploy is not None and parse_size(mem, what) != parse_size(deploy, what):
        raise ParseError(
            what,
            f"services.{name}: can't set distinct values on 'mem_limit' and 'deploy.resources.limits.memory'",
            text,
        )
