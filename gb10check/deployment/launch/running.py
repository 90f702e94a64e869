"""A rank's launch plan read back from the running deployment: the truth, whatever started it.

The container's settings and environment come from `docker container inspect` (HostConfig, Config); what
runs from the processes inside it: a `vllm serve` (or a Ray node) with its real argv and environment
(/proc/PID/cmdline and /proc/PID/environ, read by one `docker exec` of PROCESSES_SCRIPT, printed as
base64 so that no value can break the frame). When vLLM has renamed its process (setproctitle) or the
processes cannot be read, the container's own command is read with its environment instead. A
container started by Docker Compose names its compose file in its labels: that is where to change it.
Pure: the texts in, the plan out.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from gb10check.deployment.launch.container_command import container_started
from gb10check.deployment.launch.plan import Container, LaunchPlan, Mount, Setting, Source
from gb10check.deployment.launch.process import Started
from gb10check.deployment.launch.vllm_args import parse_ray, parse_vllm
from gb10check.errors import ParseError
from gb10check.reading.parsers.docker import Container as Inspected

__all__ = ["MARK", "PROCESSES_SCRIPT", "Process", "parse_processes", "running_plan"]

MARK = "gb10check-proc"
# every process of the container that mentions vLLM or Ray, and its first: pid, argv and environment, base64
PROCESSES_SCRIPT = (
    "for p in /proc/[0-9]*; do "
    'c=$(tr "\\000" " " < "$p/cmdline" 2>/dev/null) || continue; '
    'case "${p#/proc/} $c" in "1 "*|*vllm*|*VLLM*|*ray*) ;; *) continue;; esac; '
    f'printf "{MARK} %s %s %s\\n" "${{p#/proc/}}" "$(base64 -w0 < "$p/cmdline")" '
    '"$(base64 -w0 < "$p/environ" 2>/dev/null)"; '
    "done"
)


@dataclass(frozen=True)
class Process:
    pid: int
    argv: tuple[str, ...]
    environ: dict[str, str] | None  # None: not readable


def parse_processes(text: str) -> list[Process]:
    """What PROCESSES_SCRIPT printed: one line per process."""
    out = []
    for row in text.splitlines():
        if not row.startswith(MARK + " "):
            continue
        fields = row.split(" ")
        if len(fields) < 3 or not fields[1].isdigit():
            raise ParseError("the container's processes", "a line is not `gb10check-proc PID ARGV ENVIRON`", row)
        try:
            argv = base64.b64decode(fields[2]).decode(errors="replace").split("\x00")
            environ_raw = (
                base64.b64decode(fields[3]).decode(errors="replace") if len(fields) > 3 and fields[3] else None
            )
        except (binascii.Error, ValueError) as exc:
            raise ParseError("the container's processes", f"not base64: {exc}", row) from exc
        argv = argv[:-1] if argv and argv[-1] == "" else argv
        environ = None
        if environ_raw is not None:
            environ = dict(e.partition("=")[::2] for e in environ_raw.split("\x00") if "=" in e)
        out.append(Process(int(fields[1]), tuple(argv), environ))
    return out


def _host_config(inspected: dict[str, Any], name: str) -> Container:
    hc = inspected.get("HostConfig")
    if not isinstance(hc, dict):  # Docker always prints it: without it nothing here is evidence
        raise ParseError(
            f"docker inspect {name}", "no HostConfig object: not the output of Docker's container inspect", name
        )
    src = Source(f"docker inspect {name}", what="HostConfig")
    memlock = next(
        ((int(u.get("Soft", 0)), int(u.get("Hard", 0))) for u in hc.get("Ulimits") or [] if u.get("Name") == "memlock"),
        None,
    )
    gpus = None
    for req in hc.get("DeviceRequests") or []:
        if any("gpu" in caps for caps in req.get("Capabilities") or []):
            gpus = "all" if req.get("Count") == -1 else str(req.get("Count") or ",".join(req.get("DeviceIDs") or []))
    mounts = tuple(
        Mount(
            str(m.get("Source", "")), str(m.get("Destination", "")), str(m.get("Type", "bind")), not m.get("RW", True)
        )
        for m in inspected.get("Mounts") or []
    )
    restart = (hc.get("RestartPolicy") or {}).get("Name") or None
    return Container(
        network=Setting(hc.get("NetworkMode"), src),
        ipc=Setting(hc.get("IpcMode") or None, src),
        shm_size=Setting(hc.get("ShmSize") or None, src),
        privileged=Setting(bool(hc.get("Privileged")), src),
        cap_add=Setting(tuple(str(c).upper().removeprefix("CAP_") for c in hc.get("CapAdd") or ()) or None, src),
        devices=Setting(tuple(str(d.get("PathOnHost", "")) for d in hc.get("Devices") or ()) or None, src),
        device_cgroup_rules=Setting(tuple(hc.get("DeviceCgroupRules") or ()) or None, src),
        memlock=Setting(memlock, src if memlock else None),
        restart=Setting(None if restart in (None, "no") else restart, src),
        memory=Setting(hc.get("Memory") or None, src),
        user=Setting((inspected.get("Config") or {}).get("User") or None, src),
        gpus=Setting(gpus, src),
        runtime=Setting(hc.get("Runtime") or None, src),
        mounts=mounts,
    )


def running_plan(inspected: Inspected, processes: list[Process] | None, *, node: str, rank: int) -> LaunchPlan:
    """The plan of a running container; `processes` as PROCESSES_SCRIPT read them (None: not read)."""
    raw = inspected.inspect
    config = raw.get("Config") or {}
    labels = config.get("Labels") or {}
    name = inspected.name
    compose_files = labels.get("com.docker.compose.project.config_files")
    where = (
        f"the compose file {compose_files} (service {labels.get('com.docker.compose.service')})"
        if compose_files
        else f"the command that started {name}"
    )
    env_src = Source(f"docker inspect {name}", what="Config.Env")
    container_env = dict(str(e).partition("=")[::2] for e in config.get("Env") or [] if "=" in str(e))
    found = _the_process(processes or [])
    read_by = f"docker inspect {name}"
    notes: list[str] = [f"started from {where}"]
    if found is not None:
        proc, launch = found
        environment = {}
        proc_src = Source(f"the running process (pid {proc.pid} in {name})", what="/proc/PID/environ")
        env = proc.environ if proc.environ is not None else container_env
        for k, v in env.items():
            environment[k] = Setting(v, env_src if container_env.get(k) == v else proc_src)
        read_by += f" and /proc/{proc.pid} (its cmdline{' and environ' if proc.environ is not None else ''})"
        command = Source(f"the running process (pid {proc.pid} in {name})", what="/proc/PID/cmdline")
        if proc.environ is None:
            notes.append(f"/proc/{proc.pid}/environ was not readable: the container's environment stands for it")
    else:
        argv = [*(config.get("Entrypoint") or []), *(config.get("Cmd") or [])]
        launch = container_started(
            [str(a) for a in argv] or None,
            dict(container_env),
            what=f"{name}'s command (docker inspect)",
            files=lambda _p: None,
            env_complete=True,
            env_missing="",
        )
        environment = {k: Setting(v, env_src) for k, v in launch.env.items()}
        command = Source(f"docker inspect {name}", what="Config.Entrypoint and Config.Cmd")
        if processes is not None:
            notes.append("no process in the container shows a `vllm serve` or Ray argv: its command was read instead")
    return LaunchPlan(
        node=node,
        rank=rank,
        launcher="running container",
        read_by=read_by,
        image=Setting(config.get("Image") or inspected.image, Source(f"docker inspect {name}", what="Config.Image")),
        container_name=Setting(name, Source(f"docker inspect {name}")),
        container=_host_config(raw, name),
        environment=environment,
        started=launch,
        command=command,
        notes=(*notes, *launch.notes),
    )


def _the_process(processes: list[Process]) -> tuple[Process, Started] | None:
    """The vLLM server (or Ray node) among the container's processes: `vllm serve` before a Ray node."""
    for proc in processes:
        vllm = parse_vllm(proc.argv)
        if vllm is not None:
            return proc, Started(vllm, None, dict(proc.environ or {}), None)
    for proc in processes:
        ray = parse_ray(proc.argv)
        if ray is not None:
            return proc, Started(None, ray, dict(proc.environ or {}), None)
    return None
