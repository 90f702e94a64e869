"""The docker CLI of a simulated node: images, the deployment's container (inspect, ps, logs, exec, stop), a
throwaway `docker run`, Compose through the real binary, and the collective's containers (sim/collective_rank.py)."""

from __future__ import annotations

import json
import os
import sys
import time

__all__ = [
    "COLLECTIVE_MARK",
    "CONTAINER_ENV",
    "DAEMON_DOWN",
    "GPU_NO_RUNTIME",
    "GPU_NVML_MISMATCH",
    "INFO_NO_SERVER",
    "MLX5_MARK",
    "NCCL_MARK",
    "NO_SUCH",
    "PROCESSES_MARK",
    "STATE_FILE",
    "TYPE_CHECKING",
    "collective_containers",
    "docker",
    "hashlib_hex",
]

TYPE_CHECKING = False  # mypy reads it as True; importing typing would cost every stub call ~5 ms

if TYPE_CHECKING:  # stdlib-only and started often: no typing import at run time
    from typing import Any

# docker's own messages (docker CLI 28 / moby); JSON shapes follow the Engine API's types
NO_SUCH = "Error response from daemon: No such {what}: {ref}\n"
GPU_NO_RUNTIME = (
    'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].\n\n'
    "Run 'docker run --help' for more information\n"
)
GPU_NVML_MISMATCH = (
    "docker: Error response from daemon: failed to create task for container: failed to create shim task: "
    "OCI runtime create failed: runc create failed: unable to start container process: error during container "
    "init: error running prestart hook #0: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
    "nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown\n\n"
    "Run 'docker run --help' for more information\n"
)


DAEMON_DOWN = "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n"
# `docker info` with no daemon: the client's JSON, every server field empty (the keys a reader looks at)
INFO_NO_SERVER = {
    "ID": "", "Containers": 0, "Images": 0, "Driver": "", "CgroupDriver": "", "KernelVersion": "",
    "OperatingSystem": "", "Architecture": "", "NCPU": 0, "MemTotal": 0, "Name": "", "ServerVersion": "",
    "Runtimes": None, "DefaultRuntime": "", "Warnings": None,
    "ClientInfo": {"Debug": False, "Version": "28.2.2", "DefaultAPIVersion": "1.50", "Context": "default",
                   "Plugins": [], "Warnings": None},
}  # fmt: skip


def _daemon_down(words: list[str]) -> tuple[str, str, int]:
    """What docker 28.2.2 prints with no daemon (selftests/data/commands/docker.daemon_down.28.2.2.generated.toml):
    stdout that alone reads as healthy or as "no such image" (`[]`), and the reason on stderr."""
    if words[:1] == ["info"]:
        return json.dumps(INFO_NO_SERVER, separators=(",", ":")) + "\n", DAEMON_DOWN, 1
    if words[:1] == ["inspect"] or words[1:2] == ["inspect"]:
        return "[]\n", DAEMON_DOWN, 1
    if words[:1] == ["run"]:
        return "", f"docker: {DAEMON_DOWN}\nRun 'docker run --help' for more information\n", 125
    return "", DAEMON_DOWN, 1


def _image(state: dict[str, Any], ref: str) -> dict[str, Any] | None:
    ref = ref if ":" in ref.rsplit("/", 1)[-1] else ref + ":latest"
    return next((i for i in state["docker"]["images"] if ref in i["tags"]), None)


def _gpu_list(state: dict[str, Any]) -> tuple[str, str, int]:
    """`nvidia-smi -L` inside a container: the same driver, so a node whose nvidia-smi hangs hangs here too."""
    for override in state.get("stubs", []):
        if override["tool"] == "nvidia-smi" and override.get("delay"):
            time.sleep(float(override["delay"]))
            break
    docker, drv = state["docker"], state["driver"]
    if docker.get("gpu") == "no-runtime":
        return "", GPU_NO_RUNTIME, 125
    if drv.get("kernel") != drv.get("userspace"):
        return "", GPU_NVML_MISMATCH, 125
    return f"GPU 0: NVIDIA GB10 (UUID: {state['gpu_uuid']})\n", "", 0


def docker(state: dict[str, Any], args: list[str]) -> tuple[str, str, int]:
    d = state["docker"]
    if args[:1] == ["compose"]:  # the real Compose v2 (it reads files; it needs no daemon)
        if not d.get("compose"):
            return "", "docker: 'compose' is not a docker command.\nSee 'docker --help'\n", 1
        import os

        try:
            os.execv(d["compose"], [d["compose"], *args[1:]])
        except OSError as exc:  # the sim's own fault (see node_files._compose_binary), said plainly
            return "", f"gb10sim: cannot run the sim's Docker Compose {d['compose']}: {exc}\n", 126
    words = [a for a in args if not a.startswith("--format") and a != "{{json .}}"]
    if d.get("daemon") == "down":
        return _daemon_down(words)
    if words[:1] == ["info"]:
        info = {
            "ID": "6d2c1b9e-sim",
            "Containers": 1 if d.get("container") else 0,
            "Images": len(d["images"]),
            "Driver": "overlayfs",
            "CgroupDriver": d.get("cgroup_driver", "systemd"),
            "CgroupVersion": str(d.get("cgroup_version", "2")),
            "KernelVersion": "6.17.0-1014-nvidia",
            "OperatingSystem": "Ubuntu 24.04.3 LTS",
            "OSType": "linux",
            "Architecture": "aarch64",
            "NCPU": 20,
            "MemTotal": 127957729280,
            "ServerVersion": "28.2.2",
            "Runtimes": {"io.containerd.runc.v2": {"path": "runc"}, "runc": {"path": "runc"}}
            | ({} if d.get("gpu") == "no-runtime" else {"nvidia": {"path": "nvidia-container-runtime"}}),
            "DefaultRuntime": "runc",
        }
        return json.dumps(info) + "\n", "", 0
    if words[:2] == ["image", "ls"]:
        return "".join(f"{t}\n" for i in d["images"] for t in i["tags"]), "", 0
    if words[:2] == ["image", "inspect"]:
        image = _image(state, words[2])
        if image is None:
            return "[]\n", NO_SUCH.format(what="image", ref=words[2]), 1
        body = {
            "Id": image["id"],
            "RepoTags": image["tags"],
            "RepoDigests": [],
            "Created": "2026-10-02T08:14:51.123456789Z",
            "Architecture": image.get("arch", "arm64"),
            "Os": "linux",
            "Size": 21474836480,
            "RootFS": {"Type": "layers", "Layers": image["layers"]},
        }
        if "env" in image:  # docker.image_env: the image's own ENV
            body["Config"] = {"Env": image["env"], "Entrypoint": None, "Cmd": None, "User": ""}
        return json.dumps([body], indent=4) + "\n", "", 0
    if words[:2] == ["container", "inspect"]:
        c = _container(d, words[2])
        if c is None:
            return "[]\n", NO_SUCH.format(what="container", ref=words[2]), 1
        running = c.get("status", "running") == "running"
        body = {
            "Id": hashlib_hex(c["name"]),
            "Name": "/" + c["name"],
            "Args": c.get("args", []),
            "State": {
                "Status": c.get("status", "running"),
                "Running": running,
                "ExitCode": 0 if running else c.get("exit_code", 0),
                "StartedAt": "2026-12-02T09:00:00.000000000Z",
            },
            "Config": {"Image": c.get("image", ""), "Env": c.get("env", CONTAINER_ENV)},
        }
        body.update(_created(c).get("inspect", {}))  # as Docker created it from the compose (sim/container.py)
        return json.dumps([body], indent=4) + "\n", "", 0
    if words[:1] == ["run"] and COLLECTIVE_MARK in " ".join(words[:8]):
        return _collective(state, words)
    if words[:1] == ["rm"]:
        return _rm([w for w in words[1:] if not w.startswith("-")])
    if words[:1] == ["run"]:
        ref = next((w for w in words[1:] if _image(state, w)), None)
        if ref is None:
            return "", "docker: Error response from daemon: No such image: " + words[-2] + "\n", 125
        entrypoint = words[words.index("--entrypoint") + 1] if "--entrypoint" in words else None
        if entrypoint == "grep":
            return _grep(d.get("image_files", {}), words[words.index(ref) + 1 :])
        if entrypoint == "sh" and NCCL_MARK in " ".join(words):
            return _nccl_library(d, running=False)
        return _gpu_list(state)
    if words[:1] == ["ps"] and any(f"label={COLLECTIVE_MARK}" in w for w in words):
        return "".join(f"{name}\n" for name in collective_containers()), "", 0  # `--format {{.Names}}`
    if words[:1] == ["ps"] or words[:2] == ["container", "ls"]:
        return _ps(d), "", 0
    if words[:1] == ["logs"]:
        return _logs(d, args[1:])
    if words[:1] == ["stop"]:
        return _stop(d, [w for w in words[1:] if not w.startswith("-") and not w.isdigit()])
    if words[:1] == ["exec"]:
        words = ["exec", *_without_options(words[1:], takes_value=("-e", "--env", "-u", "--user", "-w", "--workdir"))]
        c = _container(d, words[1])
        if not c or c.get("status", "running") != "running":
            return "", f"Error response from daemon: container {words[1]} is not running\n", 1
        if words[2:3] == ["grep"]:
            return _grep(d.get("image_files", {}), words[3:])
        if words[2:3] == ["sh"] and NCCL_MARK in " ".join(words):
            return _nccl_library(d, running=True)
        if words[2:3] == ["sh"] and PROCESSES_MARK in " ".join(words):
            return _processes(c), "", 0
        return _gpu_list(state)
    return "", f"docker: '{' '.join(words[:1])}' is not a docker command.\n", 1


PROCESSES_MARK = "gb10check-proc"  # gb10check/deployment/launch/running.py's PROCESSES_SCRIPT, as it prints
COLLECTIVE_MARK = "gb10check-collective"  # gb10check/reading/collective.py's containers are named after it
STATE_FILE = ""  # the node's state file (main sets it): its folder holds the collective's containers


def _containers_dir() -> str:

    path = os.path.join(os.path.dirname(STATE_FILE), "containers")
    os.makedirs(path, exist_ok=True)
    return path


def _collective(state: dict[str, Any], words: list[str]) -> tuple[str, str, int]:
    """`docker run --rm --name gb10check-collective-... IMAGE -c PROGRAM`: the rank runs as a process of its
    own session (a container outlives the docker CLI that started it, until `docker rm -f`), sim/collective_rank.py
    standing in for the image's python3; the CLI waits for it and prints what it printed."""

    name = words[words.index("--name") + 1]
    env = dict(w.partition("=")[::2] for i, w in enumerate(words) if i and words[i - 1] in ("-e", "--env"))
    ref = next((w for w in words if _image(state, w)), None)
    if ref is None:
        image = words[words.index("--entrypoint") + 2] if "--entrypoint" in words else "?"
        return "", f"docker: Error response from daemon: No such image: {image}\n", 125
    folder = _containers_dir()
    pidfile, outfile = os.path.join(folder, name + ".pid"), os.path.join(folder, name + ".out")
    if os.path.exists(pidfile):
        return (
            "",
            (f'docker: Error response from daemon: Conflict. The container name "/{name}" is already in use.\n'),
            125,
        )
    child = os.fork()
    if child == 0:  # the container
        os.setsid()
        with open(pidfile, "w") as fh:
            fh.write(str(os.getpid()))
        code = 1
        try:
            sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # beside stub.py
            import collective_rank  # type: ignore[import-not-found]  # beside stub.py

            lines: list[str] = []
            with open(outfile, "w") as fh:
                os.dup2(fh.fileno(), 1)
                code = collective_rank.run(state, env, lines)
                sys.stdout.write("".join(f"{line}\n" for line in lines))
                sys.stdout.flush()
        finally:
            if os.path.exists(pidfile):  # --rm: gone when it ends
                os.unlink(pidfile)
            os._exit(code)
    _, status = os.waitpid(child, 0)
    text = ""
    if os.path.exists(outfile):
        with open(outfile) as fh:
            text = fh.read()
        os.unlink(outfile)
    return text, "", os.waitstatus_to_exitcode(status)


def _rm(names: list[str]) -> tuple[str, str, int]:
    """`docker rm -f NAME...`: a collective's container killed and removed, its name printed; any other name
    is no container here."""
    import signal

    out, err, rc = "", "", 0
    for name in names:
        pidfile = os.path.join(_containers_dir(), name + ".pid")
        if not name.startswith(COLLECTIVE_MARK) or not os.path.exists(pidfile):
            err += f"Error response from daemon: No such container: {name}\n"
            rc = 1
            continue
        try:
            with open(pidfile) as fh:
                os.killpg(int(fh.read().strip()), signal.SIGKILL)
        except (OSError, ValueError):
            pass
        if os.path.exists(pidfile):
            os.unlink(pidfile)
        out += name + "\n"
    return out, err, rc


def collective_containers() -> list[str]:
    """The collective's containers this node runs now (their pid files)."""

    return sorted(f[: -len(".pid")] for f in os.listdir(_containers_dir()) if f.endswith(".pid"))


def _created(c: dict[str, Any]) -> dict[str, Any]:
    """The container as Docker created it (sim/container.py wrote it), {} where the sim did not create one."""

    path = c.get("created_file")
    if not path or not os.path.exists(path):  # none was created (a compose its Compose refuses)
        return {}
    with open(path, encoding="utf-8") as f:
        created: dict[str, Any] = json.load(f)
    return created


def _processes(c: dict[str, Any]) -> str:
    """What PROCESSES_SCRIPT prints in the container: its pid 1 (the only process the sim's container has),
    argv and environment NUL-separated, base64."""
    import base64

    proc = _created(c).get("process")
    if proc is None:
        return ""
    argv = base64.b64encode("".join(f"{a}\0" for a in proc["argv"]).encode()).decode()
    environ = base64.b64encode("".join(f"{k}={v}\0" for k, v in proc["environ"].items()).encode()).decode()
    return f"{PROCESSES_MARK} 1 {argv} {environ}\n"


NCCL_MARK = "gb10check-nccl"  # gb10check/reading/parsers/nccl_library.py's script, as that script prints it
MLX5_MARK = "gb10check-mlx5"  # its first line: the container's libmlx5, with or without the dma-buf symbol


def _nccl_library(d: dict[str, Any], running: bool) -> tuple[str, str, int]:
    """What the suite's NCCL-library script prints in the container: the libnccl a running vLLM has mapped,
    else where torch finds it (its wheel) or the system's (ldconfig); sha256sum's line; NCCL's version string."""
    lib = d["nccl_library"]
    how = "loaded" if running else "torch" if "/nvidia/nccl/lib/" in lib["path"] else "ldconfig"
    mlx5 = (
        f"{MLX5_MARK} {'dmabuf' if d.get('mlx5_dmabuf', True) else 'no-dmabuf'} /usr/lib/aarch64-linux-gnu/libmlx5.so.1"
    )
    nccl = f"{NCCL_MARK} {how} {lib['path']}\n{lib['sha256']}  {lib['path']}\nNCCL version {lib['version']}\n"
    return f"{mlx5}\n{nccl}", "", 0


def _without_options(words: list[str], takes_value: tuple[str, ...]) -> list[str]:
    """`docker exec`'s words from the container on: its options (and their values) left out."""
    skip = False
    for i, word in enumerate(words):
        if skip:
            skip = False
        elif word in takes_value:
            skip = True
        elif not word.startswith("-"):
            return words[i:]
    return []


def _ps(d: dict[str, Any]) -> str:
    """`docker ps --no-trunc --format '{{json .}}'`: the running container, as docker CLI 28's formatter
    prints it (cli/command/formatter/container.go: Labels as k=v joined by commas, Command quoted)."""
    c = d.get("container")
    c = _container(d, c["name"]) if c else None
    if not c or c.get("status", "running") != "running":
        return ""
    created = _created(c).get("inspect", {})
    labels = (created.get("Config") or {}).get("Labels") or {}
    command = " ".join(created.get("Args") or c.get("args") or [])
    line = {
        "Command": f'"{command}"', "CreatedAt": "2026-12-02 09:00:00 +0000 UTC", "ID": hashlib_hex(c["name"]),
        "Image": c.get("image", ""), "Labels": ",".join(f"{k}={v}" for k, v in sorted(labels.items())),
        "LocalVolumes": "0", "Mounts": "", "Names": c["name"], "Networks": "host", "Ports": "",
        "RunningFor": "2 hours ago", "Size": "0B", "State": "running", "Status": "Up 2 hours",
    }  # fmt: skip
    return json.dumps(line) + "\n"


def _container(d: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The container by name, as it is now (a `docker stop` of the suite's watchdog has exited it)."""

    c: dict[str, Any] | None = d.get("container")
    if not c or c["name"] != name:
        return None
    if d.get("stopped_file") and os.path.exists(d["stopped_file"]):
        return {**c, "status": "exited", "exit_code": 143}  # SIGTERM: vLLM's workers exit 128 + 15
    return c


def _logs(d: dict[str, Any], args: list[str]) -> tuple[str, str, int]:
    """docker logs [--tail N] [--timestamps|-t] NAME: the container's log file, stamped as docker stamps it."""
    name = args[-1] if args else ""
    if _container(d, name) is None:
        return "", f"Error response from daemon: No such container: {name}\n", 1
    tail = int(args[args.index("--tail") + 1]) if "--tail" in args else None
    with open(d["log_file"], encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    lines = lines[-tail:] if tail is not None and tail > 0 else lines
    if "--timestamps" not in args and "-t" not in args:
        lines = [line.split(" ", 1)[1] if " " in line else line for line in lines]
    return "".join(f"{line}\n" for line in lines), "", 0


def _stop(d: dict[str, Any], names: list[str]) -> tuple[str, str, int]:
    """docker stop NAME...: the container exits; the stop is recorded (the sim's self-tests read it)."""
    out, err = [], []
    for name in names:
        if _container(d, name) is None:
            err.append(f"Error response from daemon: No such container: {name}")
            continue
        with open(d["stopped_file"], "a", encoding="utf-8") as fh:
            fh.write(f"stop {name} {time.time():.3f}\n")
        out.append(name)
    return "".join(f"{n}\n" for n in out), "".join(f"{e}\n" for e in err), 1 if err else 0


def _grep(files: dict[str, str], args: list[str]) -> tuple[str, str, int]:
    """grep [-H] [-s] PATTERN FILE... over the image's files (a fixed-string pattern is all the suite asks)."""
    letters = "".join(a.lstrip("-") for a in args if a.startswith("-"))
    pattern, *paths = [a for a in args if not a.startswith("-")]
    out, err, missing = [], [], False
    for path in paths:
        if path not in files:
            missing = True
            if "s" not in letters:
                err.append(f"grep: {path}: No such file or directory")
            continue
        out += [f"{path}:{line}" if "H" in letters else line for line in files[path].splitlines() if pattern in line]
    rc = 2 if missing else 0 if out else 1
    return "".join(f"{line}\n" for line in out), "".join(f"{line}\n" for line in err), rc


# what docker puts into a vLLM image's container besides the compose's own environment
CONTAINER_ENV = [
    "PATH=/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "NVIDIA_VISIBLE_DEVICES=all",
    "NVIDIA_DRIVER_CAPABILITIES=compute,utility",
]


def hashlib_hex(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()
