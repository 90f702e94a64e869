"""Read-only, proven: every command a healthy run of all markers sends to a node is a read.

The suite records what it ran on each node, probe by probe (summary.json, transports.<node>.sent);
each must be one of the forms below. The documented exceptions: the snapshot's temp dir with its
trap (tested on build_script itself), `docker run --rm --network none` of the container-GPU
check, before start the collective's own throwaway container and its `docker rm -f` (is_collective_command),
and the bandwidth test's own short-lived processes (is_bandwidth_process: exactly the
commands gb10check/reading/bandwidth.py writes). The opt-in `docker stop` of --stop-on-low-memory is not
sent by such a run (selftests/e2e/test_service.py proves it is sent only with the flag).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from types import SimpleNamespace

import pytest

from gb10check.commands import init as init_command
from gb10check.commands import plan as plan_command
from gb10check.deployment.launch import running
from gb10check.inventory import load_inventory
from gb10check.reading import bandwidth, collective, probes
from gb10check.reading.parsers import nccl_library
from gb10check.reading.snapshot import Probe, build_script
from selftests.e2e.runner import run_suite

PATH = r"[\w./+-]+"
C_LOCALE = r"--env LC_ALL=C --env LANGUAGE="  # docker run / exec: the command inside in the C locale too
QUOTED = r"'[^']*'"
READS = [
    rf"cat {PATH}",
    rf'(cat|head -c \d+) {PATH}/snapshots/"\$\(cat {PATH}/refs/main\)"/{PATH}',
    rf"find {PATH} -printf {QUOTED}",
    # the model's small files hashed in its snapshot folder (the loop as written), the HF cache's filesystem
    rf'cd {PATH}/snapshots/"\$\(cat {PATH}/refs/main\)" && for f in [\w. ]+; do if \[ -e "\$f" \]; then '
    r'sha256sum -- "\$f"; fi; done',
    rf"stat -f -c %T {PATH}",
    r"modinfo -F version nvidia",
    r"nvidia-smi --query-gpu=[\w,.]+ --format=csv,noheader(,nounits)?",
    r"ibdev2netdev",
    r"ip -j -d addr",
    r"ip -j route",
    r"id -un",
    r'getent ahostsv4 "\$\(hostname\)"',  # what Gloo's hostname resolves to (a loopback first is a fault)
    r"id -Gn",
    r"systemctl is-enabled [\w.-]+",
    r"ufw status verbose",
    rf"docker (info|image ls) --format {QUOTED}",
    rf"docker ps --no-trunc --format {QUOTED}",  # `gb10check init`: the containers that run
    rf"docker (image|container) inspect {PATH}(:{PATH})?",
    rf"docker exec {C_LOCALE} {PATH} nvidia-smi -L",
    # Compose prints its view of the files, with the launcher's shell variables and the service it starts;
    # `config` creates nothing
    rf"cd {PATH} && docker compose version --short && (\w+=([\w@%+=:,./-]+|{QUOTED}) )*docker compose( -f {PATH})?"
    rf"( --env-file {PATH})? config --format json( {PATH})?",
    r"ssh -n -o BatchMode=yes -o ConnectTimeout=\d+ -o StrictHostKeyChecking=yes -o PasswordAuthentication=no "
    rf"{PATH} true",
    rf"ping -n -c \d+ -i [\d.]+ -W \d+ -M do -s \$\(\( \$\(cat /sys/class/net/{PATH}/mtu\) - 28 \)\) -I {PATH} {PATH}",
    # the RDMA ports: a loop of `ls` and `grep -H .` over /sys/class/infiniband (reviewed as written)
    re.escape(probes.RDMA_PORTS.command(None)),  # type: ignore[arg-type]
    # the kernel log: dmesg (as root) into a temp file it removes, its count and matching lines (reviewed as written)
    *(re.escape(probes.KERNEL_LOG.command(SimpleNamespace(node=SimpleNamespace(sudo=s)))) for s in (True, False)),  # type: ignore[arg-type]
    re.escape(probes.LINGER.command(None)),  # type: ignore[arg-type]
    re.escape(probes.HOST_NCCL_CONF.command(None)),  # type: ignore[arg-type]
    rf"docker exec {C_LOCALE} {PATH} grep -Hs = {PATH} {PATH}",
    rf"docker logs --tail \d+ --timestamps {PATH}",
    # skew across the nodes: the BIOS's two DMI files and every RDMA device's firmware (reviewed as written)
    re.escape(probes.BIOS.command(None)),  # type: ignore[arg-type]
    re.escape(probes.CX_FIRMWARE.command(None)),  # type: ignore[arg-type]
    # the known issues: DGX OS's release file, where there is one (reviewed as written)
    re.escape(probes.DGX_RELEASE.command(None)),  # type: ignore[arg-type]
    # the NCCL library the running container loads: /proc/*/maps, ldconfig -p, sha256sum, grep (reviewed as written)
    rf"docker exec {C_LOCALE} {PATH} sh -c " + re.escape(shlex.quote(nccl_library.SCRIPT)),
    # `gb10check plan --running`: the running container's processes, /proc/PID/cmdline and environ, base64
    rf"docker exec {C_LOCALE} {PATH} sh -c " + re.escape(shlex.quote(running.PROCESSES_SCRIPT)),
    # the wire: one one-packet ping per peer address out of the rail's netdev (when it does not answer, one
    # per address of every other node out of that netdev), then the neighbour tables
    rf"((ping -n -c 1 -W 1 -I {PATH} {PATH} >/dev/null 2>&1|\{{ ping -n -c 1 -W 1 -I {PATH} {PATH} >/dev/null "
    rf'2>&1 \|\| for a in( {PATH})+; do ping -n -c 1 -W 1 -I {PATH} "\$a" >/dev/null 2>&1 & done; wait; \}}) & )+'
    r"wait; ip -j neigh show",
    r"iptables -S (FORWARD|DOCKER-USER)",  # the address plan: the chains forwarded fabric traffic meets
    # `gb10check init`: the node's name, and the compose files naming vLLM at the usual places (reviewed as written)
    r"hostname",
    re.escape(init_command.COMPOSE_FILES.command(None)),  # type: ignore[arg-type]
    re.escape(init_command.LAUNCH_SCRIPTS.command(None)),  # type: ignore[arg-type]
    # `gb10check init` with no node named: a ping sweep of each fabric port's subnet, then the neighbour table;
    # a ring's far node asked its addresses through its neighbour
    rf'(for a in( {PATH})+; do ping -n -c 1 -W 1 -I {PATH} "\$a" >/dev/null 2>&1 & done; )+wait; ip -j neigh show',
    r"ssh -n -o BatchMode=yes -o ConnectTimeout=\d+ -o StrictHostKeyChecking=yes -o PasswordAuthentication=no "
    rf"{PATH} ip -j -d addr",
]
AS_ROOT = re.compile(r'if \[ "\$\(id -u\)" = 0 \]; then (?P<a>.+?); else (sudo -n (?P<b>.+?)|echo .+; exit 126); fi')
FRAMED = re.compile(
    r'rc=0; for f in (?P<glob>[\w./* -]+); do \[ -e "\$f" \] \|\| continue; '
    r"echo \"=== \$\(stat -c '%a %u' \"\$f\"\) \$f\"; (?P<reader>.+?) \"\$f\" \|\| rc=\$\?; echo; done; exit \$rc"
)
DOCUMENTED = [
    # the container-GPU check: a throwaway container with no network, removed on exit
    rf"docker run --rm --pull never --network none --gpus all {C_LOCALE} --entrypoint nvidia-smi {PATH}(:{PATH})? -L",
    # NCCL's config files in the image, when its container does not run: the same kind of throwaway container
    rf"docker run --rm --pull never --network none {C_LOCALE} --entrypoint grep {PATH}(:{PATH})? -Hs = {PATH} {PATH}",
    # the NCCL library of the image, when its container does not run: the same kind of throwaway container
    rf"docker run --rm --pull never --network none {C_LOCALE} --entrypoint sh {PATH}(:{PATH})? -c "
    + re.escape(shlex.quote(nccl_library.SCRIPT)),
]


_BW = re.compile(
    rf"(?:setsid )?timeout -k 2 [\d.]+ ib_write_bw -d (?P<dev>{PATH}) -i 1 -x (?P<gid>\d+) -p (?P<port>\d+) "
    rf"-D (?P<seconds>[\d.]+) -F --report_gbits "
    rf"(?:</dev/null >(?P<log>/tmp/gb10check-bw\.\w+\.\d+) 2>&1 &|(?P<peer>{PATH})$)"
)
_STOP = re.compile(r"pid=\$\(cat (?P<log>/tmp/gb10check-bw\.\w+\.\d+)\.pid 2>/dev/null\);")


def is_bandwidth_process(command: str) -> bool:
    """The bandwidth test's own processes, exactly as gb10check/reading/bandwidth.py writes them: its server
    start (under timeout, in its own session), its client (under timeout), and the server's stop."""
    stop = _STOP.match(command)
    if stop:
        return command == bandwidth.server_stop_command(stop["log"])
    m = _BW.match(command)
    if not m:
        return False
    seconds, gid, port = float(m["seconds"]), int(m["gid"]), int(m["port"])
    if m["log"]:
        return command == bandwidth.server_start_command(m["dev"], gid, port, seconds, m["log"])
    return command == bandwidth.client_command(m["dev"], gid, port, seconds, m["peer"])


def is_read(command: str) -> bool:
    if any(re.fullmatch(form, command) for form in READS):
        return True
    root = AS_ROOT.fullmatch(command)
    if root:
        return is_read(root["a"]) and (root["b"] is None or root["b"] == root["a"])
    framed = FRAMED.fullmatch(command)
    if framed:
        reader = framed["reader"]
        inner = re.fullmatch(r"sh -c '(?P<body>.+)' _", reader)
        body = inner["body"].replace('"$1"', "/some/file") if inner else reader + " /some/file"
        return is_read(body)
    return False


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf /home/lenovo/vllm",
        "cat /etc/passwd; rm -f x",
        "docker stop vllm-qwen38",
        "cd /home/lenovo/vllm && docker compose version --short && docker compose up -d",
        "docker run --rm --gpus all vllm/vllm-openai:x -L",
        'if [ "$(id -u)" = 0 ]; then ufw enable; else sudo -n ufw enable; fi',
        "ssh -n -o BatchMode=yes 10.0.0.1 reboot",
        "setsid timeout -k 2 9 ib_write_bw -d rocep1s0f0 -i 1 -x 3 -p 18515 -D 1 -F --report_gbits </dev/null "
        ">/tmp/gb10check-bw.ab12.0 2>&1 & rm -rf /",
        "pid=$(cat /tmp/gb10check-bw.ab12.0.pid 2>/dev/null); kill -9 -1",
    ],
)
def test_writes_are_not_mistaken_for_reads(command):
    assert not is_read(command) and not any(re.fullmatch(f, command) for f in DOCUMENTED)
    assert not is_bandwidth_process(command)


def test_every_command_of_gb10check_plan_is_a_read():
    """`gb10check plan` sends no snapshot: its own reads (the files, the running container, the node's devices)."""
    root = Path(__file__).resolve().parents[2]
    inventory = load_inventory(root / "fixtures" / "cluster.example.toml")
    reads = (*plan_command.FILE_READS, *plan_command.RUNNING_READS, *plan_command.NODE_READS)
    commands = [p.command for node in inventory.nodes for p in probes.probes_of(reads, inventory, node)]
    assert sum("gb10check-proc" in c for c in commands) == 2 and len(commands) > 2 * 8, commands
    assert [c for c in commands if not is_read(c) and not any(re.fullmatch(f, c) for f in DOCUMENTED)] == []


def test_every_command_of_gb10check_init_is_a_read():
    """`gb10check init` sends its own reads (then `gb10check plan`'s file reads, proven above)."""
    from gb10check.reading import discover, peers

    commands = [p.command for p in init_command._probes(init_command.READS)]
    assert len(commands) == 6 and sum("find /home" in c for c in commands) == 2, commands
    ports = [discover.Port("enp1s0f0np0", "rocep1s0f0", "192.168.100.10/24", 9000, True, 3),
             discover.Port("enP2p1s0f0np0", "roceP2p1s0f0", "10.20.0.1/30", 9000, True, 3)]  # fmt: skip
    sweep = peers.sweep_command(ports)
    assert sweep is not None and sweep.count("ping") == 2 and "192.168.100.254" in sweep and "10.20.0.2" in sweep
    commands += [sweep, peers.HOP_COMMAND.format(address="10.20.0.2"), init_command.CONTAINERS]
    assert [c for c in commands if not is_read(c)] == []


PROBE_LINE = re.compile(
    r"printf '%s\\n' 'gb10-b0 begin \w+' >\"\$t/(\d+)\.a\"; printf '\\n%s\\n' 'gb10-b0 stderr \w+' >\"\$t/\1\.c\"; "
    r'\(LC_ALL=C LANGUAGE= timeout -k 2 [\d.]+ sh -c .+ </dev/null >"\$t/\1\.b" 2>"\$t/\1\.d"; '
    r"printf '\\n%s %s\\n' 'gb10-b0 end \w+' \$\? >\"\$t/\1\.e\"\) &"
)
FRAME_LINE = re.compile(r'cat( "\$t/\d+\.[a-e]")+ 2>/dev/null')
# a flooded output (larger than the snapshot sends) cut to its head and tail, in the script's own folder
CUT = (
    'for f in $(find "$t" -type f -size +NUMc); do n=$(wc -c <"$f"); '
    '{ head -c NUM "$f"; printf \'\\n%s %s\\n\' \'gb10-b0 cut\' "$n"; tail -c NUM "$f"; } >"$f.cut"; '
    'mv -f "$f.cut" "$f"; done'
)
CUT_LINE = re.compile(re.escape(CUT).replace("NUM", r"\d+"))


def test_the_snapshot_wrapper_only_makes_and_removes_its_temp_dir():
    script = build_script((Probe("a", "cat /x"), Probe("b", "id -un")), "gb10-b0", 5.0)
    lines = script.splitlines()
    assert lines[:3] == [
        "t=$(mktemp -d) || exit 97",
        "trap 'rm -rf \"$t\"' EXIT",
        "ulimit -f 131072 2>/dev/null; trap '' XFSZ",  # each output file at most 64 MiB (512-byte blocks)
    ]
    assert [bool(PROBE_LINE.fullmatch(line)) for line in lines[3:]] == [True, True, False, False, False]
    assert lines[5:] == ["wait", lines[6], lines[7]], lines
    assert CUT_LINE.fullmatch(lines[6]) and FRAME_LINE.fullmatch(lines[7]), lines


@pytest.mark.sim
def test_a_healthy_run_of_every_marker_sends_only_reads(tmp_path):
    run = run_suite(tmp_path, "--sim")
    assert run.rc == 0, run.out
    sent = {node: t["sent"] for node, t in run.summary["transports"].items()}
    assert all(len(commands) > 20 for commands in sent.values()), sent
    not_reads = {
        node: [
            c
            for c in commands
            if not is_read(c) and not any(re.fullmatch(f, c) for f in DOCUMENTED) and not is_bandwidth_process(c)
        ]
        for node, commands in sent.items()
    }
    assert not_reads == {node: [] for node in sent}


def is_collective_command(command: str) -> bool:
    """Exactly what gb10check/reading/collective.py sends: its throwaway container (`--rm --pull never`, its own
    name and label, the plan's settings and variables, PROGRAM), and the `docker rm -f` of that name."""
    name = rf"{collective.MARK}-\d+-\d+-r\d+"
    if re.fullmatch(rf"docker rm -f {name}", command):
        return True
    head = rf"docker run --rm --pull never --name {name} --label {collective.MARK}=1 "
    tail = " --entrypoint python3 " + r"[\w./:+-]+" + " -c " + re.escape(shlex.quote(collective.PROGRAM))
    m = re.fullmatch(head + r"(?P<flags>.*?)" + tail, command, re.S)
    if m is None:
        return False
    flags = shlex.split(m["flags"])
    # the rank's own container settings (the deployment's, from its launch plan) and its variables
    valued = {"--network", "--ipc", "--shm-size", "--cap-add", "--device", "--ulimit", "--runtime", "--gpus", "-e"}
    i = 0
    while i < len(flags):
        if flags[i] == "--privileged":
            i += 1
        elif flags[i] in valued and i + 1 < len(flags):
            i += 2
        else:
            return False
    return True


def test_before_start_the_collective_sends_only_its_own_container_and_reads(tmp_path):
    """Before vLLM starts, the network stage runs NCCL in the serving image (tests_network/test_collective.py):
    on each node its throwaway container and its removal, exactly as gb10check/reading/collective.py writes them."""
    run = run_suite(tmp_path, "--sim", "before-start", "-m", "network", timeout=300)
    assert run.rc == 0, run.out
    sent = {node: t["sent"] for node, t in run.summary["transports"].items()}
    ours = {node: [c for c in commands if is_collective_command(c)] for node, commands in sent.items()}
    assert all(len(c) == 2 for c in ours.values()), ours  # its run and its removal, on every node
    others = {
        node: [
            c
            for c in commands
            if not (is_read(c) or any(re.fullmatch(f, c) for f in DOCUMENTED) or is_bandwidth_process(c))
            and not is_collective_command(c)
        ]
        for node, commands in sent.items()
    }
    assert others == {node: [] for node in sent}
    assert not is_collective_command("docker run --rm --pull never --name gb10check-collective-1-2-r0 alpine rm -rf /")
