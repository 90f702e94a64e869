"""`docker run` as the Docker CLI reads it (its flags, `-e`, `--env-file`, the image and the command), and
the rank's launch plan from it.

Flags follow docker's own parser (spf13/pflag): `--flag value` and `--flag=value`, short flags joined
(`-it`, `-dit`), a boolean `--rm=false`; the first word that is no flag is the image, the rest is the
command. The environment is built as Docker builds it: the image's ENV, then each `--env-file` in order,
then each `-e` in order (`-e NAME` alone takes NAME from the docker client's environment, the launcher's
shell). Docker's env-file format is its own: `NAME=value` taken as written (quotes and all), `NAME` alone
from the client's environment, `#` comments. Pure.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass

from gb10check.deployment.compose import parse_size
from gb10check.deployment.launch.container_command import argv_of, container_started, host_files
from gb10check.deployment.launch.plan import Container, LaunchPlan, Mount, Setting, Source
from gb10check.deployment.shell.state import Ran
from gb10check.deployment.shell.values import Deferred, Value
from gb10check.errors import ParseError
from gb10check.reading.parsers.docker import Image

__all__ = [
    "BOOLEAN",
    "SHORT_VALUED",
    "VALUED",
    "DockerRun",
    "docker_run_argv",
    "parse_docker_run",
    "parse_env_file",
    "run_plan",
]

# docker run's flags that take a value (docker CLI 28: cli/command/container/opts.go, run.go)
VALUED = frozenset(
    [
        "--add-host",
        "--annotation",
        "--attach",
        "-a",
        "--blkio-weight",
        "--blkio-weight-device",
        "--cap-add",
        "--cap-drop",
        "--cgroup-parent",
        "--cgroupns",
        "--cidfile",
        "--cpu-period",
        "--cpu-quota",
        "--cpu-rt-period",
        "--cpu-rt-runtime",
        "--cpu-shares",
        "-c",
        "--cpus",
        "--cpuset-cpus",
        "--cpuset-mems",
        "--detach-keys",
        "--device",
        "--device-cgroup-rule",
        "--device-read-bps",
        "--device-read-iops",
        "--device-write-bps",
        "--device-write-iops",
        "--dns",
        "--dns-option",
        "--dns-search",
        "--domainname",
        "--entrypoint",
        "--env",
        "-e",
        "--env-file",
        "--expose",
        "--gpus",
        "--group-add",
        "--health-cmd",
        "--health-interval",
        "--health-retries",
        "--health-start-interval",
        "--health-start-period",
        "--health-timeout",
        "--hostname",
        "-h",
        "--ip",
        "--ip6",
        "--ipc",
        "--isolation",
        "--kernel-memory",
        "--label",
        "-l",
        "--label-file",
        "--link",
        "--link-local-ip",
        "--log-driver",
        "--log-opt",
        "--mac-address",
        "--memory",
        "-m",
        "--memory-reservation",
        "--memory-swap",
        "--memory-swappiness",
        "--mount",
        "--name",
        "--network",
        "--net",
        "--network-alias",
        "--net-alias",
        "--oom-score-adj",
        "--pid",
        "--pids-limit",
        "--platform",
        "--publish",
        "-p",
        "--pull",
        "--restart",
        "--runtime",
        "--security-opt",
        "--shm-size",
        "--stop-signal",
        "--stop-timeout",
        "--storage-opt",
        "--sysctl",
        "--tmpfs",
        "--ulimit",
        "--user",
        "-u",
        "--userns",
        "--uts",
        "--volume",
        "-v",
        "--volumes-from",
        "--workdir",
        "-w",
    ]
)
BOOLEAN = frozenset(
    [
        "--detach",
        "-d",
        "--init",
        "--interactive",
        "-i",
        "--no-healthcheck",
        "--oom-kill-disable",
        "--privileged",
        "--publish-all",
        "-P",
        "--quiet",
        "-q",
        "--read-only",
        "--rm",
        "--sig-proxy",
        "--tty",
        "-t",
        "--disable-content-trust",
        "--use-api-socket",
    ]
)
SHORT_VALUED = frozenset(f.lstrip("-") for f in VALUED if len(f) == 2)


@dataclass(frozen=True)
class DockerRun:
    """One `docker run`: its flags (each value with its place among them), the image, the command."""

    image: Value
    command: tuple[Value, ...]
    flags: tuple[tuple[str, Value | None], ...]  # ("--env", "A=1"), ("--rm", None) in the order given
    line: int = 0
    script: str = ""

    def all(self, *names: str) -> list[Value]:
        return [v for k, v in self.flags if k in names and v is not None]

    def last(self, *names: str) -> Value | None:
        values = self.all(*names)
        return values[-1] if values else None

    def has(self, *names: str) -> bool:
        return any(k in names and v in (None, "true") for k, v in self.flags)


def docker_run_argv(argv: tuple[Value, ...]) -> tuple[Value, ...] | None:
    """The words after `docker [global options] run` / `docker container run`, else None."""
    words = list(argv)
    if not words or not isinstance(words[0], str) or posixpath.basename(words[0]) != "docker":
        return None
    i = 1
    global_valued = {
        "--config",
        "-c",
        "--context",
        "-H",
        "--host",
        "-l",
        "--log-level",
        "--tlscacert",
        "--tlscert",
        "--tlskey",
    }
    while i < len(words) and isinstance(words[i], str) and str(words[i]).startswith("-"):
        i += 2 if words[i] in global_valued else 1
    if words[i : i + 1] == ["run"]:
        return tuple(words[i + 1 :])
    if words[i : i + 2] == ["container", "run"]:
        return tuple(words[i + 2 :])
    return None


def parse_docker_run(args: tuple[Value, ...], *, what: str, line: int = 0) -> DockerRun:
    flags: list[tuple[str, Value | None]] = []
    i = 0
    while i < len(args):
        word = args[i]
        text = str(word)
        if isinstance(word, Deferred) and word.splits and not text.startswith("-"):
            raise ParseError(what, f"the words of `docker run` are decided at start from {word.why}", text)
        if text == "--":
            i += 1
            break
        if not text.startswith("-") or text == "-":
            break
        if text.startswith("--"):
            name, eq, value = text.partition("=")
            if eq:
                flags.append((name, value if isinstance(word, str) else Deferred(word.why, value)))
            elif name in VALUED:
                if i + 1 >= len(args):
                    raise ParseError(what, f"`docker run {name}` without its value", text)
                flags.append((name, args[i + 1]))
                i += 1
            else:
                flags.append((name, None))
            i += 1
            continue
        letters = text[1:]  # -it, -e X, -eX, -p8000:8000
        for j, letter in enumerate(letters):
            if letter in SHORT_VALUED:
                rest = letters[j + 1 :]
                if rest:
                    flags.append((f"-{letter}", rest.removeprefix("=")))
                else:
                    if i + 1 >= len(args):
                        raise ParseError(what, f"`docker run -{letter}` without its value", text)
                    flags.append((f"-{letter}", args[i + 1]))
                    i += 1
                break
            flags.append((f"-{letter}", None))
        i += 1
    if i >= len(args):
        raise ParseError(what, "`docker run` names no image", " ".join(str(a) for a in args))
    return DockerRun(args[i], tuple(args[i + 1 :]), tuple(flags), line, what)


def parse_env_file(text: str, client_env: dict[str, Value], what: str) -> list[tuple[str, Value, int]]:
    """Docker's --env-file: (name, value, line) for each variable it sets."""
    out: list[tuple[str, Value, int]] = []
    for number, row in enumerate(text.splitlines(), 1):
        row = row.lstrip()
        if not row or row.startswith("#"):
            continue
        name, eq, value = row.partition("=")
        if re.search(r"\s", name):
            raise ParseError(what, f"line {number}: variable {name!r} contains whitespaces (docker refuses it)", row)
        if eq:
            out.append((name, value, number))
        elif name in client_env:
            out.append((name, client_env[name], number))
    return out


def _size(value: Value | None, what: str) -> int | Deferred | None:
    if value is None or isinstance(value, Deferred):
        return value
    return parse_size(value, what)


def _memlock(values: list[Value]) -> tuple[int, int] | Deferred | None:
    found: tuple[int, int] | Deferred | None = None
    for v in values:
        if isinstance(v, Deferred):
            found = v if str(v).startswith("memlock") or "memlock" in v.why else found
            continue
        name, _, limits = v.partition("=")
        if name != "memlock":
            continue
        soft, _, hard = limits.partition(":")
        try:
            found = (int(soft), int(hard or soft))
        except ValueError:
            continue
    return found


def _mounts(run: DockerRun, cwd: Value) -> tuple[Mount, ...]:
    mounts = []
    for v in run.all("-v", "--volume"):
        if isinstance(v, Deferred):
            continue
        parts = v.split(":")
        if len(parts) >= 2:
            source = parts[0]
            if source.startswith(".") and isinstance(cwd, str) and cwd:
                source = posixpath.normpath(posixpath.join(cwd, source))
            kind = "bind" if source.startswith("/") else "volume"
            mounts.append(Mount(source, parts[1], kind, len(parts) > 2 and "ro" in parts[2].split(",")))
    for m in run.all("--mount"):
        if isinstance(m, Deferred):
            continue
        fields = dict(f.partition("=")[::2] for f in m.split(","))
        target = fields.get("target") or fields.get("dst") or fields.get("destination") or ""
        source = fields.get("source") or fields.get("src") or ""
        mounts.append(
            Mount(source, target, fields.get("type", "volume"), "readonly" in fields or fields.get("ro") == "true")
        )
    return tuple(mounts)


def run_plan(
    run: DockerRun,
    ran: Ran,
    *,
    node: str,
    rank: int,
    image: Image | None,
    host_file: Callable[[str], str | None],
    launcher: str = "docker run",
    read_by: str = "",
) -> LaunchPlan:
    """The rank's plan from its `docker run`: `ran` is the command as the launcher runs it (its line, the
    client's environment for `-e NAME` and --env-file's bare names)."""
    here = Source(ran.script, ran.line, "docker run")
    client = ran.env
    environment: dict[str, Setting[str]] = {}
    ref = run.image
    if image is not None:
        for k, v in image.environment.items():
            environment[k] = Setting(v, Source(f"image ENV ({ref})"))
    for path in run.all("--env-file"):
        if isinstance(path, Deferred):
            raise ParseError(ran.script, f"line {ran.line}: the --env-file is decided at start ({path.why})", str(path))
        full = (
            path
            if path.startswith("/") or not isinstance(ran.cwd, str)
            else posixpath.normpath(posixpath.join(ran.cwd, path))
        )
        text = host_file(full)
        if text is None:
            environment_missing = f"the --env-file {full}, which the suite has not read"
            return _plan(
                run, ran, node, rank, image, host_file, environment, False, environment_missing, launcher, read_by
            )
        for name, value, number in parse_env_file(text, client, full):
            environment[name] = Setting(value, Source(full, number, "--env-file"))
    for item in run.all("-e", "--env"):
        text = str(item)
        name, eq, value = text.partition("=")
        if eq:
            environment[name] = Setting(
                value if isinstance(item, str) else Deferred(item.why, value),
                Source(ran.script, ran.line, "docker run -e"),
            )
        elif name in client:
            environment[name] = Setting(
                client[name], Source(ran.script, ran.line, f"docker run -e {name}, from the launcher's shell")
            )
    env_complete = image is not None
    missing = "" if env_complete else f"the ENV of {ref}, which is not on this node"
    return _plan(run, ran, node, rank, image, host_file, environment, env_complete, missing, launcher, read_by, here)


def _plan(  # type: ignore[no-untyped-def]
    run, ran, node, rank, image, host_file, environment, env_complete, missing, launcher, read_by, here=None
) -> LaunchPlan:
    here = here or Source(ran.script, ran.line, "docker run")
    user = run.last("-u", "--user")
    if "HOME" not in environment and user is None and not (image and image.user):
        environment["HOME"] = Setting("/root", Source("Docker's default (the container runs as root)"))
    caps = tuple(str(c).upper().removeprefix("CAP_") for c in run.all("--cap-add"))
    devices = tuple(str(d).split(":")[0] for d in run.all("--device"))
    rules = tuple(str(r) for r in run.all("--device-cgroup-rule"))
    memlock = _memlock(run.all("--ulimit"))
    container = Container(
        network=Setting(run.last("--network", "--net"), here if run.last("--network", "--net") is not None else None),
        ipc=Setting(run.last("--ipc"), here if run.last("--ipc") is not None else None),
        shm_size=Setting(_size(run.last("--shm-size"), "--shm-size"), here),
        privileged=Setting(True if run.has("--privileged") else None, here),
        cap_add=Setting(caps or None, here),
        devices=Setting(devices or None, here),
        device_cgroup_rules=Setting(rules or None, here),
        memlock=Setting(memlock, here if memlock is not None else None),
        restart=Setting(run.last("--restart"), here if run.last("--restart") is not None else None),
        memory=Setting(_size(run.last("-m", "--memory"), "--memory"), here),
        user=Setting(user, here if user is not None else None),
        gpus=Setting(run.last("--gpus"), here),
        runtime=Setting(run.last("--runtime"), here),
        mounts=_mounts(run, ran.cwd),
    )
    entry = run.last("--entrypoint")
    values: dict[str, Value] = {k: s.value for k, s in environment.items() if s.value is not None}
    argv = argv_of(
        [str(entry)] if entry is not None else None,
        [str(c) for c in run.command] or None,
        image.entrypoint if image else None,
        image.cmd if image else None,
    )
    launch = container_started(
        argv,
        values,
        what=f"{ran.script}: line {ran.line}: docker run {run.image} command",
        files=host_files(container.mounts, host_file),
        env_complete=env_complete,
        env_missing=missing,
    )
    out: dict[str, Setting[str]] = {}
    for k, v in launch.env.items():
        given = environment.get(k)
        out[k] = (
            given
            if given is not None and given.value == v
            else Setting(v, Source(ran.script, ran.line, "exported by the command"))
        )
    return LaunchPlan(
        node=node,
        rank=rank,
        launcher=launcher,
        read_by=read_by or f"gb10check's reader of {ran.script}",
        image=Setting(run.image, here),
        container_name=Setting(run.last("--name"), here if run.last("--name") is not None else None),
        container=container,
        environment=out,
        started=launch,
        command=here,
        env_complete=env_complete,
        env_missing=missing,
        notes=tuple(launch.notes),
    )
