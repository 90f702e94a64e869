"""The faults of an operator's first bad day, as reproducible runs: shared by the self-tests
(selftests/e2e/test_bad_day.py) and the figures command (benchmarks/bench_bad_day.py)."""

from __future__ import annotations

import base64
import json
import re
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from selftests import adversarial
from selftests.e2e.runner import SuiteRun, finish, run_suite, start_suite

R0, R1 = "thinkstationpgx-30", "thinkstationpgx-32"
CONNECT_TIMEOUT = 2  # the fault scenarios' [ssh] connect_timeout: short, so the bound is what is measured

# rank 1 unreachable in three ways; each fails within the connect timeout
HEALTHY = 'base = "healthy"\n'
UNREACHABLE = {
    "node-down": 'base = "node-down"\n',  # powered off: ARP for its LAN address goes unanswered
    "unresolvable": f'base = "healthy"\n[nodes.{R1}]\nssh_host = "no-such-host.invalid"\n',
    "blackholed": f'base = "healthy"\n[nodes.{R1}]\nblackholed = true\n',  # its SSH port drops every packet
    "sshd-refusing": f'base = "healthy"\n[nodes.{R1}]\nsshd = false\n',  # up, nothing listens on port 22
}
# what else a fault costs, in seconds: with rank 1 powered off, rank 0's engine waits for it, so the
# service stage's four rounds of requests (the checks' requests at once, the decode request, the
# liveness request, the load) each wait node-down's request_timeout (sim/scenarios/node-down.toml)


def scenario_file(tmp: Path, name: str, body: str) -> Path:
    path = tmp / f"{name}.toml"
    path.write_text(body + f"[inventory.ssh]\nconnect_timeout = {CONNECT_TIMEOUT}\n")
    return path


@dataclass
class TimedRun:
    run: SuiteRun
    seconds: float
    lines: int
    junit_bytes: int

    def within_output_bounds(self) -> bool:
        """What a fault may cost (the suite grows; the cost per check may not): after the progress lines
        (and a healthy run's list of what it measured), at most 3 lines per failed check plus the
        troubleshooting section plus 10; under 1 kB of JUnit per check."""
        checks = max(len(self.run.junit), 1)
        failed = len(self.run.failed())
        troubleshooting = len(self.run.section("troubleshooting").splitlines())
        measured = len(self.run.section("measured").splitlines())  # a healthy run lists its figures
        report = len(self.run.report_lines()) - measured
        return report <= 3 * failed + troubleshooting + 10 and self.junit_bytes < 1000 * checks


def timed(tmp: Path, *args: str, env: dict[str, str] | None = None) -> TimedRun:
    run = run_suite(tmp, *args, env=env)  # a shared run: the seconds of the run it was shared from
    junit = tmp / "reports" / "junit.xml"
    return TimedRun(run, run.seconds, run.out.count("\n"), junit.stat().st_size if junit.exists() else 0)


# -- planted secrets ---------------------------------------------------------------------------
SECRETS = {
    "dotenv_token": "hf_PlantedInDotEnv0123456789",
    "dotenv_password": "PlantedPassword42",
    "compose_token": "hf_PlantedInCompose0123456789",
    "container_token": "hf_PlantedInContainerEnv01234",
    "container_key": "PlantedContainerKey77x",
    "api_key": "sk-PlantedApiKey0123456789abcdef",
}
API_KEY_ENV = "GB10_SELFTEST_API_KEY"


def _jwt(subject: str) -> str:
    """A JWT's shape (header.payload.signature, base64url), its payload naming where it was planted."""
    payload = base64.urlsafe_b64encode(f'{{"sub":"{subject}"}}'.encode()).decode().rstrip("=")
    return f"eyJhbGciOiJIUzI1NiJ9.{payload}.c2lnbmF0dXJlLW9mLXRoZS1ub2Rl"


def _shapes(where: str, tag: str, digits: str) -> dict[str, str]:
    """The shapes the masking did not know (issue 17, item 4), each unique to where it is planted."""
    return {
        f"{where}: AWS access key id": "AKIA" + (tag * 16)[:16],
        f"{where}: credentials in a URL": f"{tag.capitalize()}UrlPa55",
        f"{where}: JWT": _jwt(where),
        f"{where}: Slack token": f"xoxb-{digits}-{digits}123-{tag.capitalize()}SlackT0ken",
        f"{where}: password": f"{tag.capitalize()}Passw0rd",
        f"{where}: NGC API key": "nvapi-" + (tag.capitalize() + "Ngc0_") * 8,
        f"{where}: Telegram bot token": f"{digits[:9]}:" + ((tag.capitalize() + "Tg-") * 5)[:35],
    }


SHAPED = {
    **_shapes("kernel log", "KERNELLOG", "1111111111"),
    **_shapes("container log", "CONTAINERLOG", "2222222222"),
    **_shapes("vLLM version", "VERSIONSTRING", "3333333333"),
    **_shapes(".env", "DOTENVFILE", "4444444444"),
}


STAMP = "2025-01-01T00:00:00.000000000Z"


def _said(where: str) -> list[str]:
    """How a node says them, in three lines (a check quotes up to three): a key and a URL with its
    credentials, a session and a notification token, a password after the word."""
    s = {k.split(": ", 1)[1]: v for k, v in SHAPED.items() if k.startswith(f"{where}: ")}
    url = f"https://deploy:{s['credentials in a URL']}@registry.example/v2/"
    return [
        f"key {s['AWS access key id']} pulls {url} login {s['NGC API key']}",
        f"session {s['JWT']} notify {s['Slack token']} via https://api.telegram.org/bot{s['Telegram bot token']}/send",
        f"password {s['password']}",
    ]


# each line of _said as the outputs show it, masked: every planted secret was shown, none of it left
SAID_MASKED = (
    "key *** pulls https://deploy:***@registry.example/v2/ login ***",
    "session *** notify *** via https://api.telegram.org/bot***/send",
    "password ***",
)


def secrets_scenario(tmp: Path) -> Path:
    """Secrets in rank 1's .env (which then fails to parse), at the top of rank 0's compose (which
    then fails to parse), in rank 1's container environment (whose inspect output is cut short),
    and the API key the suite itself sends (the fake vLLM requires it). Then the shapes the masking
    did not know (SHAPED): in rank 1's kernel log (GPU Xid lines a check quotes), rank 0's container
    log (lines of the catalogue's symptoms), the vLLM version string, and rank 0's .env (which then
    fails to parse on a `password ...` line, quoting its head). And rank 1's .env names rank 0 as a token's
    value (issue 17, item 5): a node's name is never masked."""
    s = SECRETS
    kernel = [
        f"[ 4242.00000{i}] NVRM: Xid (PCI:000f:01:00): 79, pid=42, {said}" for i, said in enumerate(_said("kernel log"))
    ]
    symptoms = ("CUDA out of memory", "mamba cache", "nv_alloc_system_pages")
    logged = [
        f"{STAMP} ERROR {symptom}: {said}" for symptom, said in zip(symptoms, _said("container log"), strict=True)
    ]
    key_and_url, session_and_slack = _said(".env")[:2]
    password = SHAPED[".env: password"]
    container = (
        '[{"Id": "4f1c", "Name": "/vllm-qwen38", "Config": {"Image": "vllm/vllm-openai:qwen38-flash-next", '
        f'"Env": ["HUGGING_FACE_HUB_TOKEN={s["container_token"]}", "VLLM_API_KEY={s["container_key"]}", '
    )
    body = f"""base = "healthy"
[nodes.{R1}.env]
HF_TOKEN = "{s["dotenv_token"]}"
DB_PASSWORD = "{s["dotenv_password"]}"
X_TOKEN = "{R0}"
"BROKEN LINE" = "not KEY=VALUE: the .env parser refuses the file and quotes it"

[nodes.{R1}]
kernel_log = {json.dumps(kernel)}

[[nodes.{R1}.stubs]]
tool = "docker"
match = "container inspect"
stdout = '{container}'

[nodes.{R0}]
compose_edits = [["services:", "x-note: HF_TOKEN={s["compose_token"]}\\nbroken: [unclosed\\nservices:"]]

[nodes.{R0}.docker]
log_extra = {json.dumps(logged)}

[nodes.{R0}.env]
AWS_ID = {json.dumps(key_and_url)}
SESSION = {json.dumps(session_and_slack)}
"password {password}" = "its own line: the .env parser refuses the file and quotes its head"

[service]
api_key = "{s["api_key"]}"
vllm_version = {json.dumps("0.12.0 " + " ".join(_said("vLLM version")))}

[inventory.service]
api_key_env = "{API_KEY_ENV}"
"""
    path = tmp / "secrets.toml"
    path.write_text(body)
    return path


def secrets_run(tmp: Path) -> SuiteRun:
    """The secrets scenario, every output on: the reports, the history kept, the Prometheus file."""
    return run_suite(
        tmp,
        f"--sim={secrets_scenario(tmp)}",
        f"--history={tmp / 'history'}",
        f"--prometheus={tmp / 'metrics' / 'gb10check.prom'}",
        env={API_KEY_ENV: SECRETS["api_key"]},
    )


def outputs(tmp: Path, run: SuiteRun) -> dict[str, str]:
    """Every output of a run, by name: the terminal, each report, the history kept, the Prometheus file."""
    files = [
        p for folder in ("reports", "history", "metrics") for p in sorted((tmp / folder).rglob("*")) if p.is_file()
    ]
    return {"terminal": run.out, **{str(p.relative_to(tmp)): p.read_text(errors="replace") for p in files}}


def leaked(tmp: Path, run: SuiteRun, secrets: dict[str, str] | None = None) -> dict[str, int]:
    """How often each planted secret appears in the terminal output and every output file."""
    texts = outputs(tmp, run).values()
    return {name: sum(t.count(value) for t in texts) for name, value in (secrets or {**SECRETS, **SHAPED}).items()}


# -- one long line (issue 17, item 1) ------------------------------------------------------------
LONG_LINE_CHARS = 10_000_000
# rank 1's container log ends with one line of 10 MB: a run of letters, digits and _.- (the old masking's
# worst case, quadratic in it), in the `docker logs` every snapshot takes
LONG_LINE = (
    f'base = "healthy"\n[nodes.{R1}.docker]\n'
    f'log_long_line = {{ unit = "{adversarial.RUN}", chars = {LONG_LINE_CHARS} }}\n'
)


def long_line_run(tmp: Path) -> TimedRun:
    return timed(tmp, f"--sim={scenario_file(tmp, 'long-line', LONG_LINE)}")


def sigterm_during_long_line(tmp: Path, after: float = 1.0) -> Interrupted:
    """SIGTERM `after` seconds once rank 1's `docker logs` has printed the 10 MB line into the snapshot:
    while the suite takes the snapshot's output apart, masks it and parses it (where the quadratic
    masking held the GIL for hours, and SIGTERM waited for it)."""
    proc = start_suite(tmp, f"--sim={scenario_file(tmp, 'long-line', LONG_LINE)}")
    log = Path(f"/run/gb10sim/{proc.pid}/{R1}/container.log")

    def read() -> bool:  # the stub runs, or has read the file (its access time passed its write time)
        if pgrep(f"/run/gb10sim/{proc.pid}/{R1}/state.json docker logs"):
            return True
        try:
            stat = log.stat()
        except OSError:
            return False
        return stat.st_atime_ns > stat.st_mtime_ns

    wait_for(read, "rank 1's docker logs", proc)
    time.sleep(after)
    return interrupt(proc, tmp, signal.SIGTERM)


# -- signals -----------------------------------------------------------------------------------
class MuteServer:
    """A TCP port on loopback that accepts and never speaks: an SSH banner that never comes."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self._conns.append(conn)
            self.accepted += 1

    def close(self) -> None:
        self.sock.close()
        for conn in self._conns:
            conn.close()


def hung_ssh_inventory(tmp: Path, port: int) -> Path:
    """Rank 0 is this machine; rank 1's SSH answers nothing (connect_timeout 30: the run hangs there)."""
    path = tmp / "cluster.toml"
    path.write_text(
        "[ssh]\nconnect_timeout = 30\nuse_ssh_config = false\n"
        '[[nodes]]\nname = "here"\nrank = 0\ntransport = "local"\n'
        f'[[nodes]]\nname = "mute"\nrank = 1\nhost = "127.0.0.1"\nport = {port}\n'
        '[[rails]]\nnetdev = "lo"\nrdma_device = "none"\naddresses = { here = "10.99.0.1/24", mute = "10.99.0.2/24" }\n'
    )
    return path


def wait_for(condition, what: str, proc: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None or time.monotonic() > deadline:
            out = proc.communicate()[0] if proc.poll() is not None else ""
            raise AssertionError(f"the run never reached {what}:\n{out}")
        time.sleep(0.05)


def pgrep(pattern: str) -> bool:
    return subprocess.run(["pgrep", "-f", pattern], capture_output=True).returncode == 0


@dataclass
class Interrupted:
    run: SuiteRun
    exit_seconds: float  # from the signal to the process's end


def interrupt(proc: subprocess.Popen[str], tmp: Path, signum: int) -> Interrupted:
    sent = time.monotonic()
    proc.send_signal(signum)
    run = finish(proc, tmp, timeout=60)
    return Interrupted(run, time.monotonic() - sent)


def sigterm_real_inventory(tmp: Path, signum: int = signal.SIGTERM) -> Interrupted:
    """A real inventory (no sim): the signal comes while the snapshot waits on a mute SSH node."""
    server = MuteServer()
    try:
        proc = start_suite(tmp, "-m", "preflight", f"--cluster={hung_ssh_inventory(tmp, server.port)}")
        wait_for(lambda: server.accepted > 0, "the SSH connect", proc)
        time.sleep(0.3)
        return interrupt(proc, tmp, signum)
    finally:
        server.close()


def signal_sim_at(tmp: Path, stage: str, signum: int) -> Interrupted:
    """The sim, signalled at bring-up, mid-snapshot (nvidia-smi hung), mid-check (docker run hung) or
    mid-bandwidth (an ib_write_bw client of a 30 s run)."""
    body = 'base = "healthy"\n'
    marker = "network" if stage == "mid-bandwidth" else "preflight"
    if stage == "mid-bandwidth":
        body += "[inventory.thresholds]\nbandwidth_seconds = 30\n"
    if stage == "mid-snapshot":
        body += f'[[nodes.{R1}.stubs]]\ntool = "nvidia-smi"\ndelay = 120\n'
    if stage == "mid-check":  # before start: the container-GPU check runs the image (docker run --gpus)
        body += f'[deployment]\nrunning = false\n[[nodes.{R1}.stubs]]\ntool = "docker"\nmatch = "--gpus"\ndelay = 120\n'
    scenario = tmp / f"{stage}.toml"
    scenario.write_text(body)
    proc = start_suite(tmp, f"--sim={scenario}", "-m", marker)
    run_dir = Path(f"/run/gb10sim/{proc.pid}")
    if stage == "mid-bandwidth":
        wait_for(lambda: pgrep(f"{run_dir}/{R0}/state.json ib_write_bw"), "the ib_write_bw client", proc)
    elif stage == "bring-up":
        wait_for(lambda: (run_dir / "authorized_keys").exists(), "the sim's bring-up", proc)
    elif stage == "mid-snapshot":
        wait_for(lambda: pgrep(f"{run_dir}/{R1}/state.json nvidia-smi"), "the hung nvidia-smi", proc)
    else:
        wait_for(lambda: pgrep(f"{run_dir}/{R1}/state.json docker run"), "the hung docker run", proc)
    return interrupt(proc, tmp, signum)


FINAL_LINE = re.compile(r"^gb10check: interrupted by (SIGTERM|SIGINT) .*reports written to .*exit status 2$")


# -- a node's terminal escapes -----------------------------------------------------------------
# an xterm title, a cleared screen, a clickable OSC 8 link, a C1 CSI and a right-to-left override: what the
# issue saw change the operator's window (TOML's \u escapes, so the scenario file stays text)
ESCAPES = (
    r"\u001b]0;owned by the node\u0007\u001b[2J\u001b]8;;http://evil.example/\u001b\\click here\u001b]8;;\u001b\\"
    r"\u009b31m\u202egnp.exe\r"
)
# every control character but the line feed and the tab (which the reports use themselves)
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def escapes_scenario(tmp: Path) -> Path:
    """Escapes in a tool's stderr (rank 1's ibdev2netdev 'not found'), a kernel log line (rank 0's Xid),
    the served model name and the vLLM version the API reports."""
    body = f"""base = "healthy"
[[nodes.{R1}.stubs]]
tool = "ibdev2netdev"
stderr = "sh: 1: ibdev2netdev: not found {ESCAPES}\\n"
rc = 127

[nodes.{R0}]
kernel_log = ["[90211.553018] NVRM: Xid (PCI:000f:01:00): 43, pid=48211, name=python3 {ESCAPES}"]

[service]
served_model_name = "qwen3.8-flash-next{ESCAPES}"
vllm_version = "0.12.0{ESCAPES}"
"""
    path = tmp / "escapes.toml"
    path.write_text(body)
    return path


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def controls(tmp: Path, run: SuiteRun) -> dict[str, int]:
    """How many control characters each output holds: the terminal, and every report file as a reader
    gets it (summary.json's strings decoded, XML and HTML character references resolved)."""
    import html

    found = {"terminal": len(CONTROL.findall(run.out))}
    for path in sorted((tmp / "reports").iterdir()):
        if not path.is_file():
            continue
        text = path.read_text(errors="replace")
        # summary.json's strings as decoded; &#27; in JUnit or report.html is an ESC for whoever reads it
        decoded = "\n".join(_strings(json.loads(text))) if path.suffix == ".json" else html.unescape(text)
        found[path.name] = len(CONTROL.findall(text)) + len(CONTROL.findall(decoded))
    return found


# -- a hostile history folder ------------------------------------------------------------------
# JSON fragments no kept run holds where a value belongs: each type in the wrong place, numbers no float
# holds, NaN and infinities (JSON has none), nesting past any parser's depth, a lone surrogate (no UTF-8)
HOSTILE_VALUES = {
    "a list": "[1, 2]",
    "a mapping": '{"a": [1, 2]}',
    "a string": '"text"',
    "an empty string": '""',
    "a negative number": "-1",
    "a fraction": "1.5",
    "a boolean": "true",
    "null": "null",
    "a 400-digit number": "1" + "0" * 400,
    "1e999": "1e999",
    "NaN": "NaN",
    "Infinity": "Infinity",
    "-Infinity": "-Infinity",
    "100000 levels of nesting": "[" * 100_000 + "]" * 100_000,
    "a lone surrogate": '"\\ud800"',
}
# whole files: not JSON, not text, too big (None: a sparse 200 MB file, made by write_hostile_history)
HOSTILE_FILES: dict[str, bytes | None] = {
    "not JSON": b"{ not json",
    "empty": b"",
    "truncated": b'{"schema_version": 1, "checks": [{"test": "t", ',
    "NUL bytes": b'{"schema_version": 1\x00\x00}',
    "Latin-1": b'{"schema_version": 1, "inventory": "caf\xe9"}',
    "UTF-16": '{"schema_version": 1}'.encode("utf-16"),
    "a JSON null": b"null",
    "200 MB": None,
}
_MARK = "\x00gb10check-hostile\x00"


def history_template() -> dict[str, object]:
    """A kept run as gb10check writes it: a check of a pair over a rail with evidence, a figure and a fact;
    a failed one."""
    from gb10check.judging.verdict import Comparison
    from gb10check.reporting.report import Row, Summary

    summary = Summary(1767225600.0, "/etc/gb10check/cluster.toml", None)
    summary.rows = [
        Row(
            "tests_network/test_bandwidth.py::test_rdma_bandwidth[a-b-enp1s0f0np0]",
            "test_rdma_bandwidth[a-b-enp1s0f0np0]",
            "a",
            "passed",
            [Comparison("ib_write_bw enp1s0f0np0", ">= 90 Gb/s", "109 Gb/s", True)],
            rail="enp1s0f0np0",
            nodes=["a", "b"],
            figures={"bandwidth_gbps": 109.0},
            facts={"perftest": "24.01"},
        ),
        Row(
            "tests_preflight/test_driver.py::test_driver_loaded[a]",
            "test_driver_loaded[a]",
            "a",
            "failed",
            hints=["driver-mismatch"],
            message="[driver-mismatch] ...",
        ),
    ]
    summary.transports = {"a": {"connections": 1, "commands": 2, "snapshot_probes": 35, "sent": ["id -un"]}}
    summary.timings = {"session": 1.5}
    return summary.to_json()


def _paths(value: object, path: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    out = [path]
    if isinstance(value, dict):
        out += [p for k, v in value.items() for p in _paths(v, (*path, k))]
    elif isinstance(value, list):
        out += [p for i, v in enumerate(value) for p in _paths(v, (*path, i))]
    return out


def _replaced(tree: object, path: tuple[object, ...], new: object) -> object:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(tree, dict):
        return {k: (_replaced(v, rest, new) if k == head else v) for k, v in tree.items()}
    assert isinstance(tree, list)
    return [(_replaced(v, rest, new) if i == head else v) for i, v in enumerate(tree)]


def hostile_runs() -> dict[str, bytes | None]:
    """Every value of a kept run, at every level, replaced by each hostile value (plus the whole-file
    cases): what a history folder may hold after a bad day, a bad disk or a bad neighbour."""
    template = history_template()
    out: dict[str, bytes | None] = {f"the file: {name}": data for name, data in HOSTILE_FILES.items()}
    for path in _paths(template):
        text = json.dumps(_replaced(template, path, _MARK))
        where = ".".join(str(p) for p in path) or "the whole run"
        for name, fragment in HOSTILE_VALUES.items():
            out[f"{where}: {name}"] = text.replace(json.dumps(_MARK), fragment).encode()
    return out


def write_hostile_history(folder: Path, cases: dict[str, bytes | None]) -> list[Path]:
    """Each case as a run file of the history folder (names as gb10check keeps them, oldest first)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, data in enumerate(cases.values()):
        path = folder / f"run-20260101T{i // 3600:02d}{i // 60 % 60:02d}{i % 60:02d}Z-{i + 1}.json"
        if data is None:
            with path.open("wb") as fh:
                fh.truncate(200 * 1024 * 1024)  # sparse: no 200 MB of disk
        else:
            path.write_bytes(data)
        paths.append(path)
    return paths


# -- a flooding probe --------------------------------------------------------------------------
KERNEL_LINE = "[   12.345678] mlx5_core 0000:01:00.0 enp1s0f0np0: Link up\n"  # 61 bytes, a line the probe keeps
FLOOD = f"""base = "healthy"
[[nodes.{R1}.stubs]]
tool = "nvidia-smi"
match = "--query-gpu"
stdout = "580.173.02, NVIDIA GB10\\n"
repeat = 0  # prints until it is stopped

[[nodes.{R1}.stubs]]
tool = "dmesg"
stdout = "{KERNEL_LINE.strip()}\\n"
repeat = 3500000  # 213.5 MB
"""
# the checks that read those two probes on rank 1
FLOODED_READS = ("nvidia_smi_query", "kernel_log")
