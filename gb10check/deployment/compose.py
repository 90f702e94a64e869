"""The deployment's vLLM service, as the node's Docker Compose will create its container.

Pure: text in, a typed view out, ParseError with the offending excerpt otherwise.

The authoritative reading is the node's own `docker compose config --format json` (its merging of
override files and env_file lists, its interpolation and validation): `parse_compose_config`.
Where the node has no Compose plugin, gb10check.deployment.compose_fallback reads the file itself into the same
shape, says so in `ComposeService.reader`, and refuses what it cannot read the way Compose does.
What the service's command runs on each rank is gb10check/deployment/launch's job (the launch plan).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import Any

from gb10check.errors import ParseError

__all__ = ["NO_PLUGIN", "ComposeService", "choose_service", "parse_compose_config", "parse_size"]

# -- sizes -------------------------------------------------------------------------------------
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


# -- the service -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ComposeService:
    """One service in Compose's normalised shape (`config --format json`), `$$` already a `$`."""

    name: str
    raw: dict[str, Any]
    environment: dict[str, str]  # what the container gets: env_file entries, then environment:
    reader: str  # who read it: "docker compose 2.40.3" or "gb10check's own reader"
    why_fallback: str = ""  # why the fallback read it (the node's docker has no Compose plugin)

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)

    @property
    def image(self) -> str | None:
        value = self.raw.get("image")
        return str(value) if value is not None else None

    @property
    def privileged(self) -> bool:
        """privileged: true hands the container every host device and every capability."""
        return self.raw.get("privileged") is True

    @property
    def restart(self) -> str | None:
        value = self.raw.get("restart")
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

    @property
    def all_capabilities(self) -> bool:
        return self.privileged or "ALL" in self.cap_add

    def ulimit(self, name: str) -> tuple[int | None, int | None] | None:
        value = (self.raw.get("ulimits") or {}).get(name)
        if value is None:
            return None
        if isinstance(value, dict):
            return _int_or_none(value.get("soft")), _int_or_none(value.get("hard"))
        return _int_or_none(value), _int_or_none(value)

    @property
    def memory_limit(self) -> int | None:
        """The limit Docker will apply: mem_limit or deploy.resources.limits.memory (Compose refuses
        two different values, so either is the one)."""
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


def _names_container(service: str, spec: object, container: str | None) -> bool:
    """Whether `container` is this service's container: its container_name, or without one the name
    Compose gives it (`<project>-<service>-<n>`; v1 wrote `_`), or the service's own name."""
    if not isinstance(spec, dict) or container is None:
        return False
    if spec.get("container_name") is not None:
        return bool(spec["container_name"] == container)
    return container == service or re.fullmatch(rf".+[-_]{re.escape(service)}[-_]\d+", container) is not None


def choose_service(
    services: dict[str, Any],
    container: str | None,
    what: str,
    text: str,
    *,
    left_out: str = "",
    service: str | None = None,
) -> str:
    """The deployment's service: the one the inventory (or the launcher's `docker compose up SERVICE`) names,
    else the one whose container is the inventory's; without a container to look for, the only service.
    Never a guess between services that do not name it."""
    if service is not None:
        if service not in services:
            raise ParseError(what, f"no service {service!r} (the services are {', '.join(map(str, services))})", text)
        return service
    chosen = [n for n, s in services.items() if _names_container(str(n), s, container)]
    if container is None and len(services) == 1:
        chosen = list(services)
    if len(chosen) != 1:
        why = "more than one" if chosen else "no"
        raise ParseError(
            what,
            f"{why} service whose container is {container!r} among {', '.join(map(str, services))} "
            f"({left_out or 'a service behind profiles: is left out unless COMPOSE_PROFILES names one of them'})",
            text,
        )
    return str(chosen[0])


# -- Docker Compose's own reading ----------------------------------------------------------------
# `docker compose version --short` then `config --format json`, in one probe (gb10check/reading/probes.py)
_VERSION = re.compile(r"^v?(?P<version>\d+\.\d+[\w.+-]*)\s*$")
# a docker without the plugin, or a Compose too old for `config --format json`: the fallback reads
NO_PLUGIN = re.compile(
    r"'compose' is not a docker command|unknown (?:flag|shorthand flag).*(?:format|short)|unknown command \"compose\""
)


def _unescape(value: Any) -> Any:
    """`config` writes a literal `$` as `$$` (its output is itself a compose file): undo that."""
    if isinstance(value, str):
        return value.replace("$$", "$")
    if isinstance(value, list):
        return [_unescape(v) for v in value]
    if isinstance(value, dict):
        return {k: _unescape(v) for k, v in value.items()}
    return value


def parse_compose_config(text: str, *, container: str | None, what: str, service: str | None = None) -> ComposeService:
    """The output of `docker compose version --short; docker compose config --format json`."""
    first, _, body = text.partition("\n")
    version = _VERSION.match(first)
    if not version:
        raise ParseError(what, "expected Compose's version, then its JSON", text)
    try:
        doc = json.loads(body)
    except ValueError as exc:
        raise ParseError(what, f"docker compose config printed no JSON: {exc}", text) from exc
    services = doc.get("services") if isinstance(doc, dict) else None
    if not isinstance(services, dict) or not services:
        raise ParseError(what, "docker compose config lists no services", text)
    name = choose_service(services, container, what, text, service=service)
    raw = _unescape(services[name])
    env = {str(k): str(v) for k, v in (raw.get("environment") or {}).items() if v is not None}  # null: not set
    return ComposeService(name, raw, env, f"docker compose {version['version']}")
