"""The vLLM container as the node's Docker Engine creates it from the deployment's compose (the sim has no
engine): what `docker container inspect` and the processes inside it show.

The compose is read by the real Docker Compose (`config --format json`, with the node's env file and its
launcher's shell variables, as `docker compose up` reads it), and its service becomes the Engine's container
the way Compose creates it (compose-go's service fields to the Engine API's Config and HostConfig: image
ENV first, the service's environment over it; network_mode, ipc, shm_size, ulimits, cap_add, devices,
restart, mem_limit, volumes). The container's first process is what its entrypoint and command exec: the
command is run by the real shell it names, with a `vllm` on its PATH that prints the argv it was given
instead of serving (the login shell's `-l` is left out for this: a login profile would only reset PATH).
A `docker run` launcher's container is not created here (planned): its inspect keeps the sim's short form.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from gb10check.errors import SimError

__all__ = [
    "ARGV_PRINTER",
    "DOCKER_RECORDER",
    "DOCKER_SHM",
    "IMAGE_ENV",
    "compose_accepts",
    "compose_service",
    "created",
    "docker_run_service",
    "first_process",
    "run_launcher",
    "write_created",
    "write_run_created",
]

DOCKER_SHM = 64 * 1024**2  # the Engine's /dev/shm without --shm-size
IMAGE_ENV = [  # the image's own ENV when the scenario gives none (what NVIDIA's CUDA base images set)
    "PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "NVIDIA_VISIBLE_DEVICES=all",
    "NVIDIA_DRIVER_CAPABILITIES=compute,utility",
]
ARGV_PRINTER = '#!/bin/sh\nprintf "%s\\0" vllm "$@"\n'


def _on_node(root: Path, path: str) -> str:
    """A host path of the node's files as the node names it (/home/lenovo/vllm/... , not the sim's folder)."""
    prefix = str(root)
    return path[len(prefix) :] or "/" if path.startswith(prefix + "/") else path


def _compose_args(compose: Path, root: Path, compose_file: str, env_file: str | None) -> tuple[list[str], Path]:
    host_file = root / compose_file.lstrip("/")
    args = [str(compose), "-f", str(host_file)]
    if env_file is not None:
        args += ["--env-file", str(root / env_file.lstrip("/"))]
    return args, host_file


def _config(
    compose: Path, root: Path, compose_file: str, env_file: str | None, shell: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    args, host_file = _compose_args(compose, root, compose_file, env_file)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/root", **shell}
    try:
        return subprocess.run(
            [*args, "config", "--format", "json"],
            capture_output=True,
            text=True,
            timeout=30,
            cwd=host_file.parent,
            env=env,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SimError(f"the sim's Docker Compose could not read {compose_file}: {exc}") from exc


def compose_accepts(compose: Path, root: Path, compose_file: str, env_file: str | None, shell: dict[str, str]) -> bool:
    """Whether the node's Compose reads the deployment (a scenario's broken compose or .env: it does not)."""
    return _config(compose, root, compose_file, env_file, shell).returncode == 0


def compose_service(
    compose: Path, root: Path, compose_file: str, env_file: str | None, shell: dict[str, str], container: str
) -> tuple[str, dict[str, Any]] | None:
    """The project's name and the service of the compose (on the node: `compose_file`) whose container is
    `container`, as the node's Compose reads it (None: no service makes that container)."""
    done = _config(compose, root, compose_file, env_file, shell)
    if done.returncode != 0:
        raise SimError(f"the sim's Docker Compose refuses {compose_file}: {done.stderr.strip()[:400]}")
    config = json.loads(done.stdout)
    for name, service in (config.get("services") or {}).items():
        if service.get("container_name", name) == container:
            return str(config.get("name", "")), {"name": name, **service}
    return None


def _devices(service: dict[str, Any]) -> list[dict[str, str]]:
    out = []
    for d in service.get("devices") or []:
        if isinstance(d, dict):
            host, inside, perms = d.get("source", ""), d.get("target", ""), d.get("permissions", "rwm")
        else:
            host, _, rest = str(d).partition(":")
            inside, _, perms = rest.partition(":")
        out.append({"PathOnHost": host, "PathInContainer": inside or host, "CgroupPermissions": perms or "rwm"})
    return out


def _ulimits(service: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for name, value in (service.get("ulimits") or {}).items():
        soft, hard = (value, value) if isinstance(value, int) else (value.get("soft"), value.get("hard"))
        out.append({"Name": name, "Soft": int(soft), "Hard": int(hard)})
    return out


def _unescaped(value: Any) -> Any:
    """`config` keeps Compose's `$$` (so that its output reads back the same); the container gets `$`."""
    if isinstance(value, str):
        return value.replace("$$", "$")
    if isinstance(value, list):
        return [_unescaped(v) for v in value]
    return value


def _bytes(value: object) -> int:
    return int(value) if value not in (None, "") else 0  # type: ignore[call-overload]


def created(
    service: dict[str, Any],
    *,
    root: Path,
    project: str,
    compose_file: str,
    image_env: list[str] | None,
    image_id: str,
) -> dict[str, Any]:
    """`docker container inspect`'s object for the container Compose creates from `service`."""
    env = dict(e.partition("=")[::2] for e in (image_env if image_env is not None else IMAGE_ENV))
    env.update({k: "" if v is None else _unescaped(str(v)) for k, v in (service.get("environment") or {}).items()})
    mounts = [
        {
            "Type": v.get("type", "bind"),
            "Source": _on_node(root, str(v.get("source", ""))),
            "Destination": v.get("target", ""),
            "RW": not v.get("read_only", False),
        }
        for v in service.get("volumes") or []
    ]
    network = service.get("network_mode") or f"{project}_default"
    gpus = [
        {"Driver": d.get("driver", ""), "Count": d.get("count", -1), "Capabilities": [d.get("capabilities") or []]}
        for d in ((service.get("deploy") or {}).get("resources") or {}).get("reservations", {}).get("devices") or []
    ]
    return {
        "Image": image_id,
        "Config": {
            "Image": service.get("image", ""),
            "Env": [f"{k}={v}" for k, v in env.items()],
            "Entrypoint": _unescaped(service.get("entrypoint")),
            "Cmd": _unescaped(service.get("command")),
            "User": service.get("user", ""),
            "Labels": {
                "com.docker.compose.project": project,
                "com.docker.compose.service": service["name"],
                "com.docker.compose.project.config_files": compose_file,
                "com.docker.compose.project.working_dir": os.path.dirname(compose_file),
            },
        },
        "HostConfig": {
            "NetworkMode": network,
            "IpcMode": service.get("ipc") or "private",
            "ShmSize": _bytes(service.get("shm_size")) or DOCKER_SHM,
            "Privileged": bool(service.get("privileged", False)),
            "CapAdd": service.get("cap_add"),
            "Devices": _devices(service),
            "DeviceCgroupRules": service.get("device_cgroup_rules"),
            "Ulimits": _ulimits(service),
            "RestartPolicy": {"Name": service.get("restart") or "no", "MaximumRetryCount": 0},
            "Memory": _bytes(service.get("mem_limit")),
            "DeviceRequests": gpus or None,
            "Runtime": service.get("runtime") or "runc",
        },
        "Mounts": mounts,
    }


# a recorder standing in for `docker` while the sim runs a launch script with real bash: each `docker run`'s
# argv, NUL-separated, one record per line of the file it names; every other docker command does nothing
DOCKER_RECORDER = (
    '#!/bin/sh\nif [ "$1" = run ]; then shift; printf "%s\\0" "$@" >> "$GB10SIM_DOCKER_RUNS"; '
    'printf "\\n" >> "$GB10SIM_DOCKER_RUNS"; fi\n'
)
# `docker run`'s options the sim's launchers use, and whether each takes a value
_RUN_FLAGS = {
    "-d": False, "--detach": False, "--rm": False, "-it": False, "-i": False, "-t": False, "--init": False,
    "--privileged": False,
    "--name": True, "--network": True, "--net": True, "--ipc": True, "--restart": True, "--device": True,
    "--cap-add": True, "--ulimit": True, "--memory": True, "-m": True, "-v": True, "--volume": True, "-e": True,
    "--env": True, "--entrypoint": True, "--shm-size": True, "--gpus": True, "--runtime": True, "--user": True,
    "-u": True, "--env-file": True, "-w": True, "--workdir": True,
}  # fmt: skip
_SIZE = {"b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def _size(text: str) -> int:
    unit = text[-1].lower()
    return int(float(text[:-1]) * _SIZE[unit]) if unit in _SIZE else int(text)


def run_launcher(script: Path, args: list[str], root: Path) -> list[list[str]]:
    """Each `docker run` the node's launch script makes, its argv as real bash expands it (the script run
    with `docker` a recorder: nothing is started), in order."""
    with tempfile.TemporaryDirectory(prefix="gb10sim-run-") as tmp:
        recorder, runs = Path(tmp) / "docker", Path(tmp) / "runs"
        recorder.write_text(DOCKER_RECORDER)
        recorder.chmod(0o755)
        env = {"PATH": f"{tmp}:/usr/bin:/bin", "GB10SIM_DOCKER_RUNS": str(runs), "HOME": str(root)}
        try:
            subprocess.run(["bash", str(script), *args], capture_output=True, text=True, timeout=15, env=env)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SimError(f"the launch script {script} could not be followed: {exc}") from exc
        if not runs.exists():
            return []
        words = runs.read_text().split("\0")
    out: list[list[str]] = []
    current: list[str] = []
    for word in words:  # the recorder ends each run's argv with a line feed after its last NUL
        if word.startswith("\n"):
            out.append(current)
            current, word = [], word[1:]
        if word:
            current.append(word)
    if current:
        out.append(current)
    return out


def docker_run_service(argv: list[str]) -> dict[str, Any]:
    """The container a `docker run` argv creates, in the normalised compose shape `created` takes (the
    options the sim's launchers use; an unknown one is the sim's error, never guessed)."""
    service: dict[str, Any] = {"environment": {}, "volumes": [], "devices": [], "cap_add": [], "ulimits": {}}
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        flag, eq, inline = argv[i].partition("=")
        if flag not in _RUN_FLAGS:
            raise SimError(f"docker run {argv[i]}: an option the sim's docker run does not know")
        value = None
        if _RUN_FLAGS[flag]:
            value = inline if eq else argv[i + 1]
            i += 0 if eq else 1
        i += 1
        if flag == "--name":
            service["container_name"] = value
        elif flag in ("--network", "--net"):
            service["network_mode"] = value
        elif flag == "--ipc":
            service["ipc"] = value
        elif flag == "--restart":
            service["restart"] = value
        elif flag == "--device":
            service["devices"].append(value)
        elif flag == "--cap-add":
            service["cap_add"].append(value)
        elif flag == "--privileged":
            service["privileged"] = True
        elif flag == "--ulimit":
            name, _, limits = str(value).partition("=")
            soft, _, hard = limits.partition(":")
            service["ulimits"][name] = {"soft": int(soft), "hard": int(hard or soft)}
        elif flag in ("--memory", "-m"):
            service["mem_limit"] = _size(str(value))
        elif flag == "--shm-size":
            service["shm_size"] = _size(str(value))
        elif flag in ("-v", "--volume"):
            source, _, rest = str(value).partition(":")
            target, _, mode = rest.partition(":")
            service["volumes"].append({"type": "bind", "source": source, "target": target, "read_only": mode == "ro"})
        elif flag in ("-e", "--env"):
            name, eq2, val = str(value).partition("=")
            service["environment"][name] = val if eq2 else None
        elif flag == "--entrypoint":
            service["entrypoint"] = [value]
        elif flag == "--runtime":
            service["runtime"] = value
        elif flag in ("--user", "-u"):
            service["user"] = value
    if i >= len(argv):
        raise SimError("docker run: no image")
    service["image"], service["command"] = argv[i], argv[i + 1 :]
    service["name"] = service.get("container_name", "")
    return service


def write_run_created(
    path: Path, *, script: Path, args: list[str], root: Path, container: str, image_env: list[str] | None, image_id: str
) -> None:
    """The container the node's `docker run` launcher creates (its last `docker run` of `container`), where the
    node's docker stub reads it: inspect's object, with no Compose labels, and its first process."""
    runs = [docker_run_service(argv) for argv in run_launcher(script, args, root)]
    mine = [r for r in runs if r.get("container_name") == container]
    if not mine:
        return
    body = created(mine[-1], root=root, project="", compose_file="", image_env=image_env, image_id=image_id)
    body["Config"]["Labels"] = {}
    path.write_text(json.dumps({"inspect": body, "process": first_process(body)}))


def first_process(body: dict[str, Any]) -> dict[str, Any]:
    """pid 1 of the running container: the argv its entrypoint and command exec, and its environment."""
    config = body["Config"]
    argv = [*(config.get("Entrypoint") or []), *(config.get("Cmd") or [])]
    env = dict(e.partition("=")[::2] for e in config["Env"])
    env.setdefault("HOME", "/root")
    if argv[:1] == ["vllm"] or not argv:
        return {"argv": argv, "environ": env}
    shell = [a for a in argv[:2] if a != "-l"]
    shell = [shell[0], *(["-c"] if argv[1:2] in (["-lc"], ["-c"]) else shell[1:])]
    with tempfile.TemporaryDirectory(prefix="gb10sim-argv-") as bin_dir:
        printer = Path(bin_dir) / "vllm"
        printer.write_text(ARGV_PRINTER)
        printer.chmod(0o755)
        run_env = {**env, "PATH": f"{bin_dir}:/usr/bin:/bin"}
        try:
            done = subprocess.run(
                [*shell, *argv[2:]], capture_output=True, text=True, timeout=15, env=run_env, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SimError(f"the container's command could not be followed: {exc}") from exc
    words = done.stdout.split("\0")[:-1]
    if not words:  # it ran nothing the sim knows: pid 1 is its entrypoint as given
        return {"argv": argv, "environ": env}
    return {"argv": ["/usr/bin/python3", "/usr/local/bin/vllm", *words[1:]], "environ": env}  # its console script


def write_created(
    path: Path,
    *,
    compose: Path,
    root: Path,
    compose_file: str,
    env_file: str | None,
    shell: dict[str, str],
    container: str,
    image_env: list[str] | None,
    image_id: str,
) -> None:
    """The created container (inspect's object and its first process) where the node's docker stub reads it."""
    found = compose_service(compose, root, compose_file, env_file, shell, container)
    if found is None:  # the compose makes another container: the deployment's is not created from it
        return
    project, service = found
    body = created(
        service, root=root, project=project, compose_file=compose_file, image_env=image_env, image_id=image_id
    )
    path.write_text(json.dumps({"inspect": body, "process": first_process(body)}))
