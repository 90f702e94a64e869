"""A node's launch script (inventory: `launch = { script, args, env }`), read with bash's grammar
(gb10check/deployment/shell/walk.py) over every path, and the rank's launch plan from the command that starts its
container: a `docker run` (gb10check/deployment/launch/docker_run.py), or a `docker compose up` whose launcher shell
(`NODE_RANK=1 docker compose up -d`) the compose is then read with.

Which `docker run` starts the rank, where a script runs several (a throwaway `docker run --rm IMAGE
nvidia-smi` first): the one that names the deployment's container, else the one whose command runs vLLM or
Ray, else the one of the deployment's image. Paths that start different containers (a head and a worker
branch on a condition only the start decides) are refused, naming the lines and the condition: the node's
`launch.args` or `launch.env` pick its branch. A node a head's script starts over ssh (`launch.runs_on`):
the head's script read with the head's arguments, and the command it sends the node (`ssh WORKER "docker
run ..."`) read as the node's login shell reads it, each value the head decides at start kept so. Pure.
"""

from __future__ import annotations

import dataclasses
import posixpath
from dataclasses import dataclass

from gb10check.deployment.launch.docker_run import DockerRun, docker_run_argv, parse_docker_run
from gb10check.deployment.shell.state import Ran
from gb10check.deployment.shell.values import Value
from gb10check.deployment.shell.walk import Files, Reading, read
from gb10check.errors import ParseError

__all__ = [
    "SHELL_UNKNOWN",
    "SSH_TAKES_VALUE",
    "ComposeUp",
    "ScriptStart",
    "read_script",
    "ssh_remote",
    "started_by",
    "started_remotely",
]

# the environment the operator's shell gives the script is not known: a variable it does not set is
# decided at start (never taken as unset), unless the inventory's launch env names it
SHELL_UNKNOWN = "the operator's shell environment when the script runs"


@dataclass(frozen=True)
class ComposeUp:
    """A `docker compose ... up` the script runs: the launcher's shell it runs with, and what it names."""

    ran: Ran
    env: dict[str, str]  # the shell's variables the command gets, known values only (Compose interpolates them)
    files: tuple[Value, ...]  # -f FILE, in order
    env_files: tuple[Value, ...]  # --env-file FILE
    service: Value | None  # `up -d SERVICE`


@dataclass(frozen=True)
class ScriptStart:
    """What a launch script starts the rank with: one `docker run`, or one `docker compose up`."""

    docker_run: tuple[Ran, DockerRun] | None
    compose_up: ComposeUp | None
    reading: Reading


def read_script(text: str, *, script: str, args: list[str], env: dict[str, str], files: Files | None) -> Reading:
    return read(
        text,
        what=script,
        env=dict(env),
        arguments=tuple(args),
        arg0=script,
        files=files,
        env_complete=False,
        env_missing=SHELL_UNKNOWN,
        cwd=posixpath.dirname(script) or "/",
    )


def _compose_up(r: Ran) -> ComposeUp | None:
    words = [str(w) for w in r.argv]
    if not words:
        return None
    name = posixpath.basename(words[0])
    if name == "docker-compose":
        rest = list(r.argv[1:])
    elif name == "docker" and len(words) > 1 and words[1] == "compose":
        rest = list(r.argv[2:])
    else:
        return None
    files: list[Value] = []
    env_files: list[Value] = []
    i = 0
    while i < len(rest) and str(rest[i]).startswith("-"):
        flag, eq, value = str(rest[i]).partition("=")
        takes = flag in ("-f", "--file", "--env-file", "-p", "--project-name", "--project-directory", "--profile")
        if takes and not eq and i + 1 < len(rest):
            value, i = str(rest[i + 1]), i + 1
        if flag in ("-f", "--file"):
            files.append(value)
        elif flag == "--env-file":
            env_files.append(value)
        i += 1
    if i >= len(rest) or str(rest[i]) != "up":
        return None
    positional = [w for w in rest[i + 1 :] if not str(w).startswith("-")]
    known = {k: v for k, v in r.env.items() if isinstance(v, str)}
    return ComposeUp(r, known, tuple(files), tuple(env_files), positional[0] if positional else None)


def _runs_vllm(run: DockerRun) -> bool:
    words = " ".join(str(w) for w in run.command)
    return any(k in words for k in ("vllm", "ray start", "ray ")) or any(
        "vllm" in str(v) for k, v in run.flags if k == "--entrypoint"
    )


def _throwaway(run: DockerRun) -> bool:
    """A run that checks something and is gone (`docker run --rm --gpus all nvidia/cuda nvidia-smi`): in the
    foreground, removed when it ends, its image and command known and neither vLLM's nor Ray's."""
    detached = run.has("-d") or run.has("--detach")
    known = isinstance(run.image, str) and all(isinstance(w, str) for w in run.command) and bool(run.command)
    return run.has("--rm") and not detached and known and not _runs_vllm(run)


def _pick(runs: list[tuple[Ran, DockerRun]], container: str, image: str) -> list[tuple[Ran, DockerRun]]:
    kept = [x for x in runs if not _throwaway(x[1]) or x[1].last("--name") == container]
    runs = kept or runs
    for chosen in (
        [x for x in runs if x[1].last("--name") == container],
        [x for x in runs if _runs_vllm(x[1])],
        [x for x in runs if x[1].image == image and not x[1].has("--rm")],
    ):
        if chosen:
            return chosen
    return runs


SSH_TAKES_VALUE = frozenset("BbcDEeFIiJLlmOoPpQRSWw")  # ssh's options that take a value (ssh(1))


def _ssh_words(words: list[Value]) -> tuple[Value, list[Value]] | None:
    """`ssh [options] [user@]HOST COMMAND...`: the host and the command's words; None for no ssh or no command."""
    if not words or not isinstance(words[0], str) or posixpath.basename(words[0]) != "ssh":
        return None
    i = 1
    while i < len(words):
        w = words[i]
        if not isinstance(w, str) or not w.startswith("-") or w == "-":
            break
        if w == "--":
            i += 1
            break
        if w[-1] in SSH_TAKES_VALUE and len(w) == 2:
            i += 1  # `-o X`, `-p 22`: its value is the next word
        i += 1
    if i + 1 >= len(words):
        return None
    host = words[i]
    return (host.rpartition("@")[2] if isinstance(host, str) else host), words[i + 1 :]


def ssh_remote(r: Ran) -> tuple[Value, str, dict[str, Value]] | None:
    """What an `ssh HOST COMMAND...` the script runs sends: the host, and the command line (ssh joins its
    words with spaces; the remote login shell reads it) with each value decided at start as a variable of
    its own, given in the dict, that the remote reading expands as decided at start (`-v <$HF_HOME>:/root`
    is sent as `-v ${__gb10_0}:/root`). None for no ssh, or an ssh with no command."""
    split = _ssh_words(list(r.argv))
    if split is None:
        return None
    host, words = split
    env: dict[str, Value] = {}
    out: list[str] = []
    for w in words:
        if isinstance(w, str):
            out.append(w)
            continue
        text = ""
        for part in w.parts or (w,):
            if isinstance(part, str):
                text += part
            else:
                name = f"__gb10_{len(env)}"
                env[name] = part
                text += "${" + name + "}"
        out.append(text)
    return host, " ".join(out), env


def started_remotely(reading: Reading, *, hosts: list[str], container: str, image: str) -> ScriptStart:
    """What a script that runs on another node starts on this one, named by any of `hosts`: each command it
    sends there (`ssh WORKER "docker run ..."`) read as the remote shell reads it; the starting command is then
    picked as started_by picks it, each shown at the script's own line."""
    sent: list[Ran] = []
    undecided: list[str] = []
    for r in reading.commands():
        remote = ssh_remote(r)
        if remote is None:
            continue
        host, command, deferred = remote
        if not isinstance(host, str):
            undecided.append(f"line {r.line}: the host `{host}`")
            continue
        if host not in hosts:
            continue
        inner = read(command, what=f"{r.script} line {r.line}: ssh {host}", env=deferred, files=None,
                     env_complete=False, env_missing="the login shell's environment on the node")  # fmt: skip
        for p in inner.paths:
            sent += [dataclasses.replace(x, line=r.line, script=r.script, taken=r.taken + x.taken) for x in p.ran]
    if not sent:
        also = f" ({'; '.join(undecided)} decided at start)" if undecided else ""
        raise ParseError(
            reading.what,
            f"no path through the script sends this node (by {', '.join(hosts)}) a command over ssh{also}: "
            "name the node's own launch.script, or check that the script's node list names it",
            ", ".join(hosts),
        )
    return _start(sent, Reading(reading.paths, reading.what), container, image)


def started_by(reading: Reading, *, container: str, image: str) -> ScriptStart:
    """The command on the script's paths that starts the rank's container; ParseError naming why not."""
    return _start(reading.commands(), reading, container, image)


def _start(commands: list[Ran], reading: Reading, container: str, image: str) -> ScriptStart:
    runs: list[tuple[Ran, DockerRun]] = []
    ups: list[ComposeUp] = []
    for r in commands:
        args = docker_run_argv(r.argv)
        if args is not None:
            runs.append((r, parse_docker_run(args, what=r.script, line=r.line)))
            continue
        up = _compose_up(r)
        if up is not None:
            ups.append(up)
    if runs:
        chosen = _pick(runs, container, image)
        distinct = {(r.line, tuple(str(a) for a in r.argv)) for r, _ in chosen}
        if len(distinct) > 1:
            lines = ", ".join(str(n) for n in sorted({n for n, _ in distinct}))
            why = "; ".join(dict.fromkeys(t for r, _ in chosen for t in r.taken)) or "the paths differ"
            raise ParseError(
                reading.what,
                f"the script starts different containers on different paths (lines {lines}), by {why}: give the "
                "node's launch.args (or launch.env) so that one path runs",
                lines,
            )
        return ScriptStart(chosen[0], None, reading)
    if ups:
        distinct_up = {(u.ran.line, tuple(sorted(u.env.items())), str(u.service)) for u in ups}
        if len(distinct_up) > 1:
            lines = ", ".join(str(u.ran.line) for u in ups)
            raise ParseError(
                reading.what,
                f"the script runs `docker compose up` differently on different paths (lines {lines}): give the "
                "node's launch.args (or launch.env) so that one path runs",
                lines,
            )
        return ScriptStart(None, ups[0], reading)
    ended = "; ".join(dict.fromkeys(p.ended for p in reading.paths))
    raise ParseError(
        reading.what,
        "no path through the script runs `docker run` or `docker compose up` (it ends: "
        f"{ended}); a launcher that starts the containers on other nodes (ssh HOST docker run ...) is read per "
        "node: give each node the script it runs (nodes' launch.script), or, on a node the script starts over ssh, "
        "launch.runs_on = the node it runs on",
        ended,
    )
