"""Stub tools of a simulated node (nvidia-smi, ibdev2netdev).

Run as `python3 -I -S stub.py STATE.json TOOL ARGS...` by the small wrappers the sim installs
in the node's /usr/local/bin. Standalone (stdlib only, no site): it prints what the real tools
print, in their formats (see selftests/data/SOURCES.md), from the node's state file. Live facts
are read live: ibdev2netdev takes each link's state from the netdev's real carrier, as the real
script does.
"""

from __future__ import annotations

import json
import re
import sys
import time

__all__ = [
    "BANNER",
    "COLLECTIVE_MARK",
    "COMPLETION_ERROR",
    "CONTAINER_ENV",
    "DAEMON_DOWN",
    "FS_TOOLS",
    "GB10_TABLE",
    "GPU_NO_RUNTIME",
    "GPU_NVML_MISMATCH",
    "INFO_NO_SERVER",
    "LANGUAGE_TOOLS",
    "MISMATCH",
    "MLX5_MARK",
    "NCCL_MARK",
    "NCCL_TABLE_HEAD",
    "NO_CONNECT",
    "NO_DRIVER",
    "NO_LISTEN",
    "NO_SOCKET",
    "NO_SUCH",
    "PERF_LINE",
    "PING_ZH_CN",
    "PROCESSES_MARK",
    "RTR",
    "STARS",
    "STATE_FILE",
    "TOOLS",
    "TYPE_CHECKING",
    "WC_FAILURE",
    "all_gather_perf",
    "collective_containers",
    "dmesg",
    "docker",
    "hashlib_hex",
    "ib_write_bw",
    "ibdev2netdev",
    "main",
    "modinfo",
    "nvidia_smi",
    "ping",
    "stat",
]

TYPE_CHECKING = False  # mypy reads it as True; importing typing would cost every stub call ~5 ms

if TYPE_CHECKING:  # stdlib-only and started often: no typing import at run time
    from typing import Any

# the real table has 7 trailing spaces after the date
GB10_TABLE = (
    "{date}       \n"
    + """\
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI {smi:<22}Driver Version: {drv:<15}CUDA Version: {cuda:<9}|
+-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
|   0  NVIDIA GB10                    On  |   0000000F:01:00.0 Off |                  N/A |
| N/A   42C    P8              4W /  N/A  | Not Supported          |      0%      Default |
|                                         |                        |                  N/A |
+-----------------------------------------+------------------------+----------------------+

+-----------------------------------------------------------------------------------------+
| Processes:                                                                              |
|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |
|        ID   ID                                                               Usage      |
|=========================================================================================|
|  No running processes found                                                             |
+-----------------------------------------------------------------------------------------+
"""
)
MISMATCH = "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: {lib}\n"
NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n\n"
)


def _nvml_short(version: str) -> str:
    # NVML prints major.minor of the userspace library: 580.173.02 -> 580.173
    return ".".join(version.split(".")[:2])


def nvidia_smi(state: dict[str, Any], args: list[str]) -> tuple[str, str, int]:
    drv = state["driver"]
    if not drv.get("kernel"):
        return NO_DRIVER, "", 9
    if drv["kernel"] != drv["userspace"]:
        return MISMATCH.format(lib=_nvml_short(drv["userspace"])), "", 18
    joined = " ".join(args)
    if "--query-gpu=" in joined:
        fields = joined.split("--query-gpu=", 1)[1].split()[0].split(",")
        values = {
            "driver_version": drv["kernel"],
            "name": "NVIDIA GB10",
            "memory.used": "[N/A]",
            "memory.total": "[N/A]",
            "uuid": state["gpu_uuid"],
            **_gpu_state(state["gpu"], units="nounits" not in joined),
        }
        unknown = [f for f in fields if f not in values]
        if unknown:
            return "", f'Field "{unknown[0]}" is not a valid field to query.\n', 2
        header = "" if "noheader" in joined else ", ".join(fields) + "\n"
        return header + ", ".join(values[f] for f in fields) + "\n", "", 0
    if args[:1] == ["-L"]:
        return f"GPU 0: NVIDIA GB10 (UUID: {state['gpu_uuid']})\n", "", 0
    if not args:
        date = time.strftime("%a %b %e %H:%M:%S %Y")
        return GB10_TABLE.format(date=date, smi=drv["kernel"], drv=drv["kernel"], cuda=drv["cuda"]), "", 0
    return "", f"Invalid combination of input arguments: {joined}\n", 2


# NVML's nvmlClocksEventReason* bits (nvml.h), as clocks_event_reasons.active prints their sum
_REASON_BITS = {
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80,
}


def _gpu_state(gpu: dict[str, Any], units: bool) -> dict[str, str]:
    """The query's GPU-state fields as nvidia-smi prints them (with units unless `nounits`)."""
    active = set(gpu["reasons"])
    if active & {"hw_thermal_slowdown", "hw_power_brake_slowdown"}:
        active.add("hw_slowdown")  # nvidia-smi: either is a HW slowdown
    mask = sum(_REASON_BITS[r] for r in active) or 0x1  # nothing holds the clocks: the GPU is idle
    mhz, watts = (" MHz", " W") if units else ("", "")
    out = {
        "pstate": gpu["pstate"],
        "clocks.sm": f"{gpu['sm_mhz']:.0f}{mhz}",
        "clocks.max.sm": f"{gpu['max_sm_mhz']:.0f}{mhz}",
        "power.draw": f"{gpu['power_w']:.2f}{watts}",
        "temperature.gpu": f"{gpu['temperature_c']:.0f}",
        "clocks_event_reasons.active": f"0x{mask:016X}" if gpu["reported"] else "[N/A]",
    }
    for reason in _REASON_BITS:
        said = ("Active" if reason in active else "Not Active") if gpu["reported"] else "[N/A]"
        out[f"clocks_event_reasons.{reason}"] = said
    return out


def ibdev2netdev(state: dict[str, Any], args: list[str]) -> tuple[str, str, int]:
    lines = []
    for port in state["rdma_ports"]:
        try:
            with open(f"/sys/class/net/{port['netdev']}/carrier") as fh:
                up = fh.read().strip() == "1"
        except OSError:  # reading carrier of an admin-down netdev fails (EINVAL); the script says Down
            up = False
        lines.append(f"{port['rdma_device']} port 1 ==> {port['netdev']} ({'Up' if up else 'Down'})")
    return "\n".join(lines) + "\n", "", 0


def modinfo(state: dict[str, Any], args: list[str]) -> tuple[str, str, int]:
    """`modinfo -F version nvidia`: the module installed on disk (what the next boot loads)."""
    installed = state["driver"].get("installed") or state["driver"].get("userspace")
    if args[-1:] != ["nvidia"] or not installed:
        name = args[-1] if args else ""
        return "", f"modinfo: ERROR: Module {name} not found.\n", 1
    if "-F" in args and args[args.index("-F") + 1] == "version":
        return installed + "\n", "", 0
    return (
        f"filename:       /lib/modules/6.17.0-1014-nvidia/updates/dkms/nvidia.ko.zst\nversion:        {installed}\n",
        "",
        0,
    )


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


PROCESSES_MARK = "gb10check-proc"  # gb10check/launch/running.py's PROCESSES_SCRIPT, as it prints
COLLECTIVE_MARK = "gb10check-collective"  # gb10check/collective.py's containers are named after it
STATE_FILE = ""  # the node's state file (main sets it): its folder holds the collective's containers


def _containers_dir() -> str:
    import os

    path = os.path.join(os.path.dirname(STATE_FILE), "containers")
    os.makedirs(path, exist_ok=True)
    return path


def _collective(state: dict[str, Any], words: list[str]) -> tuple[str, str, int]:
    """`docker run --rm --name gb10check-collective-... IMAGE -c PROGRAM`: the rank runs as a process of its
    own session (a container outlives the docker CLI that started it, until `docker rm -f`), sim/collective_rank.py
    standing in for the image's python3; the CLI waits for it and prints what it printed."""
    import os

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
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I leaves the stub's folder out
            import collective_rank  # type: ignore[import-not-found]  # beside this stub

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
    import os
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
    import os

    return sorted(f[: -len(".pid")] for f in os.listdir(_containers_dir()) if f.endswith(".pid"))


def _created(c: dict[str, Any]) -> dict[str, Any]:
    """The container as Docker created it (sim/container.py wrote it), {} where the sim did not create one."""
    import os

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


NCCL_MARK = "gb10check-nccl"  # gb10check/parsers/nccl_library.py's script, as that script prints it
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
    import os

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


# -- perftest's ib_write_bw: a real TCP exchange between the nodes' namespaces ----------------------
# Layout and messages from perftest's source (selftests/data/SOURCES.md): the exchange goes over
# the link's veth to the peer's address, so ufw, a down link and a missing server act on it as on
# the real tool; the bandwidth is the one the scenario gives the port.
PERF_LINE = "-" * 87
NO_SOCKET = "Unable to open file descriptor for socket connection\n Unable to init the socket connection\n"
NO_CONNECT = "Couldn't connect to {host}:{port}\n" + NO_SOCKET
NO_LISTEN = "Couldn't listen to port {port}\n" + NO_SOCKET
STARS = "************************************"
BANNER = f"\n{STARS}\n* Waiting for client to connect... *\n{STARS}\n"
RTR = "Failed to modify QP 1001 to RTR\n Unable to Connect the HCA's through the link\n"
# the scenario's bw_failure -> the work-completion status the client reports (libibverbs' number and text)
WC_FAILURE = {
    "retry-exceeded": (12, "transport retry counter exceeded"),
    "rnr-retry-exceeded": (13, "RNR retry counter exceeded"),
    "remote-access": (10, "remote access error"),
    "remote-operation": (11, "remote operation error"),
}
# NOTIFY_COMP_ERROR_SEND as each perftest prints it: the status's number, or (26.01 on) its text and number
COMPLETION_ERROR = {
    "24.01": " Completion with error at client\n Failed status {code}: wr_id 0 syndrom 0x81\nscnt=128, ccnt=0\n",
    "26.04": " Completion with error at client\n Failed status-{text} ({code}): wr_id 0 syndrom 0x81\n"
    " scnt=128, ccnt=0\n",
}


def _strtol(text: str) -> int:
    """C's strtol(text, NULL, 0) as perftest reads -D: the leading integer, 0 when there is none ("0.5" -> 0)."""
    digits = re.match(r"\s*[-+]?\d*", text)
    try:
        return int(digits[0]) if digits else 0
    except ValueError:
        return 0


def _perf_args(args: list[str]) -> dict[str, Any]:
    """perftest's options that the stub acts on (the others are accepted and ignored)."""
    import argparse  # only ib_write_bw pays for it

    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("-d", "--ib-dev", dest="dev")
    parser.add_argument("-i", "--ib-port")
    parser.add_argument("-x", "--gid-index", dest="gid", type=int, default=0)
    parser.add_argument("-p", "--port", type=int, default=18515)
    parser.add_argument("-D", "--duration", dest="seconds", type=_strtol, default=5)
    parser.add_argument("--report_gbits", dest="gbits", action="store_true")
    parser.add_argument("host", nargs="?")
    known, _ = parser.parse_known_args(args)
    return vars(known)


def _sysfs(dev: str, name: str) -> str | None:
    try:
        with open(f"/sys/class/infiniband/{dev}/ports/1/{name}") as fh:
            return fh.read().strip()
    except OSError:
        return None


def _gid_usable(dev: str, index: int, address: str) -> bool:
    """What moving the queue pair to RTR needs: the GID at `index` is RoCE v2 for `address`, the
    address this end of the exchange really uses on the link (another address's GID routes elsewhere)."""
    gid = (_sysfs(dev, f"gids/{index}") or "").replace(":", "")
    if not gid.startswith("0" * 20 + "ffff") or _sysfs(dev, f"gid_attrs/types/{index}") != "RoCE v2":
        return False
    return ".".join(str(int(gid[i : i + 2], 16)) for i in range(24, 32, 2)) == address


def _gid_decimal(dev: str, index: int) -> str:
    gid = (_sysfs(dev, f"gids/{index}") or "0000:" * 7 + "0000").replace(":", "")
    return ":".join(f"{int(gid[i : i + 2], 16):02d}" for i in range(0, 32, 2))


def _perf_header(dev: str, gid: int, server: bool) -> str:
    lines = [
        PERF_LINE,
        "                    RDMA_Write BW Test",
        f" Dual-port       : OFF\t\tDevice         : {dev}",
        " Number of qps   : 1\t\tTransport type : IB",
        " Connection type : RC\t\tUsing SRQ      : OFF",
        " PCIe relax order: ON",
        " ibv_wr* API     : ON",
        *([] if server else [" TX depth        : 128"]),
        " CQ Moderation   : 1",
        " Mtu             : 1024[B]",
        " Link type       : Ethernet",
        f" GID index       : {gid}",
        " Max inline data : 0[B]",
        " rdma_cm QPs\t : OFF",
        " Data ex. method : Ethernet",
        PERF_LINE,
    ]
    return "\n".join(lines) + "\n"


def _perf_addresses(dev: str, gid: int, peer_gid: str) -> str:
    return (
        " local address: LID 0000 QPN 0x01b8 PSN 0x6c40bb RKey 0x184300 VAddr 0x00f3c34c74d000\n"
        f" GID: {_gid_decimal(dev, gid)}\n"
        " remote address: LID 0000 QPN 0x01c1 PSN 0xef8f64 RKey 0x184300 VAddr 0x00fc043705d000\n"
        f" GID: {peer_gid}\n{PERF_LINE}\n"
    )


def _toward(port: dict[str, Any], peer: str) -> tuple[float, str | None]:
    """What this end of the rail carries toward `peer` (an address), Gb/s, and the completion error its
    writes end in (a WC_FAILURE key), if they fail."""
    failure = port.get("failure")
    return float(port.get("to", {}).get(peer, port.get("gbps", 0.0))), failure if failure in WC_FAILURE else None


def ib_write_bw(state: dict[str, Any], args: list[str]) -> tuple[str, str, int]:
    import socket

    o = _perf_args(args)
    if o["seconds"] <= 0:  # perftest_parameters.c, case 'D'
        return "", " Duration period must be greater than 0\n", 1
    perf = state["perftest"]
    dev = o["dev"] or (perf["ports"] and sorted(perf["ports"])[0])
    if not dev or _sysfs(dev, "state") is None:
        return "", f"IB device {dev} not found\n Unable to find the Infiniband/RoCE device\n", 1
    port_state = _sysfs(dev, "state") or ""
    if not port_state.endswith("ACTIVE"):
        word = port_state.split(":", 1)[-1].strip().capitalize()
        return (
            "",
            f" Port number 1 state is {word}\n Couldn't set the link layer\n Couldn't get context for the device\n",
            1,
        )
    warn = " WARNING: BW peak won't be measured in this run.\n"
    me = perf["ports"].get(dev, {})
    if o["host"] is None:  # the server
        out = warn + BANNER
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind(("0.0.0.0", o["port"]))
            listener.listen(1)
        except OSError:
            return out, NO_LISTEN.format(port=o["port"]), 1
        listener.settimeout(o["seconds"] + 60)
        conn, _ = listener.accept()
        with conn, conn.makefile("rw") as peer:
            hello = peer.readline().split()  # "<gid usable 0|1> <the client's GID, decimal>"
            ok = _gid_usable(dev, o["gid"], conn.getsockname()[0])
            # this end's GID, then what this end carries toward the client and whether its writes fail
            gbps, failing = _toward(me, conn.getpeername()[0])
            peer.write(f"{int(ok)} {_gid_decimal(dev, o['gid'])} {gbps} {failing or '-'}\n")
            peer.flush()
            out += _perf_header(dev, o["gid"], server=True)
            if not ok or hello[:1] != ["1"]:
                return out, RTR, 1
            out += _perf_addresses(dev, o["gid"], hello[1])
            peer.readline()  # the client's "done" (or its end)
        unit = "Gb" if o["gbits"] else perf["mb_label"]
        return (
            out + f" #bytes     #iterations    BW peak[{unit}/sec]    BW average[{unit}/sec]   MsgRate[Mpps]\n",
            "",
            0,
        )
    try:
        conn = socket.create_connection((o["host"], o["port"]), timeout=120)  # the kernel's SYN retries
    except OSError:
        return warn, NO_CONNECT.format(host=o["host"], port=o["port"]), 1
    with conn, conn.makefile("rw") as peer:
        ok = _gid_usable(dev, o["gid"], conn.getsockname()[0])
        peer.write(f"{int(ok)} {_gid_decimal(dev, o['gid'])}\n")
        peer.flush()
        answer = peer.readline().split()
        out = warn + _perf_header(dev, o["gid"], server=False)
        if not ok or answer[:1] != ["1"]:
            return out, RTR, 1
        out += _perf_addresses(dev, o["gid"], answer[1])
        # the run is as fast as its slower end, and fails when either end's writes do (with its status)
        mine, failing = _toward(me, o["host"])
        theirs = answer[3] if len(answer) > 3 and answer[3] in WC_FAILURE else None
        gbps = min(mine, float(answer[2])) if len(answer) > 3 else mine
        failure = failing or theirs
        if failure:
            code, text = WC_FAILURE[failure]
            time.sleep(min(o["seconds"], 0.5))
            return out, COMPLETION_ERROR[perf["version"]].format(code=code, text=text), 1
        time.sleep(o["seconds"])
        peer.write("done\n")
        peer.flush()
    rate = gbps * 1e9 / 8 / 65536 / 1e6  # Mpps of 64 KiB messages
    average = gbps if o["gbits"] else gbps / (2**20 * 8 / 1e9)
    unit = "Gb" if o["gbits"] else perf["mb_label"]
    table = (
        f" #bytes     #iterations    BW peak[{unit}/sec]    BW average[{unit}/sec]   MsgRate[Mpps]\n"
        f" {65536:<7}    {int(rate * 1e6 * o['seconds']):<10}       {0.0:<7.2f}            {average:<7.2f}\t\t     "
        f"{rate:<7.6f}\n{PERF_LINE}\n"
    )
    return out + table, "", 0


def dmesg(state: dict[str, Any], args: list[str]) -> tuple[str, str, int]:
    """The kernel ring buffer as `dmesg` prints it (the node's boot log and the scenario's lines)."""
    return "".join(f"{line}\n" for line in state["kernel_log"]), "", 0


NCCL_TABLE_HEAD = (
    "#" + " " * 62 + "out-of-place" + " " * 23 + "in-place\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
    "            (us)  (GB/s)  (GB/s)\n"
)


def all_gather_perf(state: dict[str, Any], args: list[str]) -> tuple[str, str, int]:
    """nccl-tests' all_gather_perf across the cluster's nodes, one rank each (its layout; the figure the
    scenario gives)."""
    size = int(args[args.index("-b") + 1]) if "-b" in args else 1 << 30
    nccl = state.get("nccl_tests") or {}
    nodes = state.get("nodes") or [state["node"]]
    nodes = nodes[: int(nccl.get("ranks", len(nodes)))]  # a launcher that names only some of the nodes
    busbw = float(nccl.get("busbw_gbs", 22.5))
    n = len(nodes)
    algbw = busbw * n / (n - 1) if n > 1 else busbw  # all_gather over n ranks: busbw = algbw * (n - 1) / n
    usec = size / (algbw * 1e9) * 1e6
    wrong = int(nccl.get("wrong", 0))
    ranks = "".join(
        f"#  Rank {rank:2d} Group  0 Pid {41337 + 7919 * rank:6d} on {name} device  0 [0x01] NVIDIA GB10\n"
        for rank, name in enumerate(nodes)
    )
    head = (
        f"# nThread 1 nGpus 1 minBytes {size} maxBytes {size} step: 2(factor) warmup iters: 5 iters: 20 "
        f"agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n{ranks}#\n"
    )
    row = (
        f"  {size:>10}  {size // 4:>12}     float    none      -1  {usec:7.1f}  {algbw:6.2f}  {busbw:6.2f}  {wrong:>5}"
        f"  {usec:7.1f}  {algbw:6.2f}  {busbw:6.2f}  {wrong:>5}\n"
    )
    tail = (
        f"# Out of bounds values : {wrong} {'OK' if not wrong else 'FAILED'}\n# Avg bus bandwidth    : {busbw:g} \n#\n"
    )
    return head + NCCL_TABLE_HEAD + row + tail, "", 0


# -- ping in the node's language ----------------------------------------------------------------------
# iputils' translations (po/zh_CN.po of github:iputils/iputils at 092d36fde0b9; an empty msgstr stays
# English, as the rtt line does): Debian's iputils here is built without gettext, so the stub runs the
# real ping in C and translates its lines as a gettext-enabled build prints them.
PING_ZH_CN = (
    (r"(\d+\(\d+\)) bytes of data\.$", r"\1 字节的数据。"),
    (r"^(\d+) bytes from ([^:]+):", r"\1 字节，来自 \2:"),
    (r" time=([\d.]+) ms", r" 时间=\1 毫秒"),
    (r"^--- (\S+) ping statistics ---$", r"--- \1 ping 统计 ---"),
    (r"^(\d+) packets transmitted, ", r"已发送 \1 个包， "),
    (r"(?<=个包， )(\d+) received", r"已接收 \1 个包"),
    (r", \+(\d+) errors", r", +\1 错误"),
    (r", ([\d.]+)% packet loss", r", \1% 包丢失"),
    (r", time (\d+)ms$", r", 耗时 \1 毫秒"),
    (r"^From (\S+) icmp_seq=(\d+) Destination Host Unreachable$", r"来自 \1 icmp_seq=\2 目标主机不可达"),
)


def _message_languages(env: dict[str, str]) -> list[str]:
    """The languages GNU gettext translates into: none when the locale in force is C (LC_ALL, else
    LC_MESSAGES, else LANG; LANGUAGE is then ignored), else LANGUAGE's list or that locale's language."""
    locale = env.get("LC_ALL") or env.get("LC_MESSAGES") or env.get("LANG") or "C"
    if locale.split(".")[0] in ("C", "POSIX"):
        return []
    return [lang.split(".")[0] for lang in (env.get("LANGUAGE") or locale).split(":") if lang]


def ping(state: dict[str, Any], args: list[str]) -> tuple[str, str, int]:
    """The real ping (iputils), in the node's language when it is one iputils translates."""
    import os
    import subprocess

    proc = subprocess.run(["/usr/bin/ping", *args], capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"})
    out = proc.stdout
    if next(iter(_message_languages(dict(os.environ))), None) in ("zh_CN", "zh"):
        for pattern, replacement in PING_ZH_CN:
            out = re.sub(pattern, replacement, out, flags=re.M)
    return out, proc.stderr, proc.returncode


def stat(state: dict[str, Any], args: list[str]) -> tuple[str, str, int]:
    """The real stat, but for `stat -f -c %T` of the HF cache on a node whose cache the scenario puts on
    another filesystem (nodes.<name>.hf.filesystem: "nfs4", a folder shared by the nodes), which it names."""
    import subprocess

    fs = state.get("hf_filesystem")
    if fs and args[:3] == ["-f", "-c", "%T"] and len(args) == 4 and args[3].rstrip("/") == state["hf_cache"]:
        return f"{fs}\n", "", 0
    proc = subprocess.run(["/usr/bin/stat", *args], capture_output=True, text=True)
    return proc.stdout, proc.stderr, proc.returncode


FS_TOOLS = {"stat": stat}  # installed on a node whose HF cache the scenario puts on another filesystem
LANGUAGE_TOOLS = {"ping": ping}  # installed on a node whose login_env names a language (sim/language.py)

TOOLS = {
    "all_gather_perf": all_gather_perf,
    "dmesg": dmesg,
    "nvidia-smi": nvidia_smi,
    "ibdev2netdev": ibdev2netdev,
    "modinfo": modinfo,
    "docker": docker,
    "ib_write_bw": ib_write_bw,
}


def _repeat(out: str, err: str, times: int) -> None:
    """The verbatim output `times` times (0: until killed), in blocks of about 1 MiB: a flooding tool."""
    if not out and not err:
        return
    per_block = max(1, (1 << 20) // max(len(out), len(err), 1))
    left = times if times > 0 else -1
    while left != 0:
        n = per_block if left < 0 else min(per_block, left)
        sys.stdout.write(out * n)
        sys.stderr.write(err * n)
        left = left - n if left > 0 else left


def main(argv: list[str]) -> int:
    global STATE_FILE
    state_file, tool, args = argv[1], argv[2], argv[3:]
    STATE_FILE = state_file
    with open(state_file) as fh:
        state = json.load(fh)
    joined = " ".join(args)
    for override in state.get("stubs", []):
        if override["tool"] == tool and override.get("match", "") in joined:
            time.sleep(float(override.get("delay", 0)))
            _repeat(override.get("stdout", ""), override.get("stderr", ""), int(override.get("repeat", 1)))
            return int(override.get("rc", 0))
    out, err, rc = {**TOOLS, **LANGUAGE_TOOLS, **FS_TOOLS}[tool](state, args)
    sys.stdout.write(out)
    sys.stderr.write(err)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
