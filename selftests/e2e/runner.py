"""Run the acceptance suite in a subprocess, as a user would, and read what it left."""

from __future__ import annotations

import atexit
import dataclasses
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]


@dataclass
class SuiteRun:
    rc: int
    out: str
    pid: int
    junit: dict[str, dict]  # test id "file::name[param]" -> {"outcome", "message", "properties"}
    summary: dict | None
    seconds: float = 0.0  # how long the run took (a shared run: the run it was shared from)
    shared: bool = field(default=False, compare=False)  # this test's copy of an earlier identical run

    def skipped(self) -> dict[str, str]:
        """Skipped test id -> the reason."""
        return {tid: case["message"] for tid, case in self.junit.items() if case["outcome"] == "skipped"}

    def failed(self) -> dict[str, set[str]]:
        """Failed (or errored) test id -> the hint ids its JUnit properties carry."""
        return {
            tid: set(case["properties"].get("hints", "").split())
            for tid, case in self.junit.items()
            if case["outcome"] in ("failure", "error")
        }

    def outcomes(self) -> dict[str, str]:
        return {tid: case["outcome"] for tid, case in self.junit.items()}

    def section(self, title: str) -> str:
        """One of the sections at the end of the terminal output (`failures`, `troubleshooting`,
        `measured`, ...): up to the next section, gb10check's closing lines or pytest's verdict line."""
        return section(self.out, title)

    def report_lines(self) -> list[str]:
        """The output after the progress lines: from the first section to the verdict line."""
        return report_lines(self.out)


SEPARATOR = re.compile(r"^=+ .* =+$|^-+ generated xml file: .* -+$")


def section(out: str, title: str) -> str:
    if f"= {title} =" not in out:
        return ""
    lines = out.split(f"= {title} =", 1)[1].split("\n")[1:]
    end = next(
        (i for i, line in enumerate(lines) if SEPARATOR.match(line) or line.startswith("gb10check: ")), len(lines)
    )
    return "\n".join(lines[:end])


def report_lines(out: str) -> list[str]:
    lines = out.rstrip("\n").split("\n")
    first = next((i for i, line in enumerate(lines) if SEPARATOR.match(line) and "test session starts" not in line), 0)
    return lines[first:]


def _read_junit(path: Path) -> dict[str, dict]:
    if not path.exists():
        return {}
    cases = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        file = case.get("file") or case.get("classname", "").replace(".", "/") + ".py"
        tid = f"{file}::{case.get('name')}"
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            el = case.find(tag)
            if el is not None:
                outcome, message = tag, el.get("message", "")
                break
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        cases[tid] = {"outcome": outcome, "message": message, "properties": props}
    return cases


def start_suite(tmp: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """The suite as a user starts it, in the background (for signals sent mid-run)."""
    # CI and BUILD_NUMBER make pytest print whole failure messages in its short summary: the self-tests
    # run the suite the same everywhere (test_bad_day runs it under CI=true on purpose)
    full_env = {k: v for k, v in os.environ.items() if k not in ("GB10_CLUSTER", "CI", "BUILD_NUMBER", SHARED_ENV)}
    full_env.update(env or {})
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--reports-dir={tmp / 'reports'}", *args],
        cwd=PROJECT,
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def finish(proc: subprocess.Popen[str], tmp: Path, timeout: float = 120) -> SuiteRun:
    """Wait for a started run (bounded) and read what it left."""
    start = time.monotonic()
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise AssertionError(f"the suite hung for {timeout} s:\n{out}") from None
    reports = tmp / "reports"
    summary_path = reports / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else None
    return SuiteRun(
        proc.returncode, out, proc.pid, _read_junit(reports / "junit.xml"), summary, time.monotonic() - start
    )


# -- runs shared within a self-test session ----------------------------------------------------------
# A suite run is a whole cluster brought up and checked: the most expensive thing the self-tests do. Two
# tests that run the suite with the same arguments and environment into a fresh reports folder get the
# same run: the first runs it, the others get a copy (its output, JUnit, summary, and its reports folder
# copied into theirs), in this process or in another worker of the same session (`-n 2`): a worker that
# wants a run another is making waits for it (a lock per run; the other's run is bounded by its timeout).
# A run is shared only when nothing outside its arguments can change it: its reports folder is new, no
# argument names a path (a scenario file of run_scenario is keyed by its text), and the test did not ask
# for a run of its own (shared=False: a run whose side effects are the point).
SHARED_ENV = "GB10_SELFTEST_RUNS"  # the session's folder of shared runs (selftests/conftest.py makes it)


def shared_root() -> Path:
    root = os.environ.get(SHARED_ENV)
    if not root:  # the runner used outside the self-tests' session: this process's own folder
        root = tempfile.mkdtemp(prefix="gb10-selftest-runs-")
        os.environ[SHARED_ENV] = root
        atexit.register(shutil.rmtree, root, True)
    return Path(root)


def records() -> list[dict]:
    """Every suite run of this session, from every worker: {"args", "seconds", "shared"}."""
    path = shared_root() / "record.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _record(key: tuple, seconds: float, shared: bool) -> None:
    line = json.dumps({"args": list(key[0]), "env": key[1], "body": key[2], "seconds": seconds, "shared": shared})
    with open(shared_root() / "record.jsonl", "a", encoding="utf-8") as f:  # one write per line: appends whole
        f.write(line + "\n")


def _canonical(args: tuple[str, ...]) -> tuple[str, ...]:
    """`--sim`, `--sim healthy` and `--sim=healthy` are one run (the option's default scenario is healthy)."""
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--sim":
            following = args[i + 1] if i + 1 < len(args) else None
            if following is not None and not following.startswith("-"):
                out.append(f"--sim={following}")
                i += 2
                continue
            out.append("--sim=healthy")
        else:
            out.append(arg)
        i += 1
    return tuple(out)


def run_key(tmp: Path, args: tuple[str, ...], env: dict[str, str] | None, body: str | None = None) -> tuple | None:
    """What makes two runs the same run, or None when this one cannot be shared."""
    if (tmp / "reports").exists():
        return None  # an earlier run's reports (history, last-run files) may change this one
    words = _canonical(args)
    if body is not None:
        words = tuple("--sim=<scenario text>" if w == f"--sim={tmp / 'scenario.toml'}" else w for w in words)
    if any("/" in w for w in words):
        return None  # a path: a file of the test's own, whose text the key does not know
    return (words, tuple(sorted((env or {}).items())), body)


def _run(tmp: Path, args: tuple[str, ...], env, timeout: float, shared: bool, body: str | None) -> SuiteRun:
    key = run_key(tmp, args, env, body) if shared else None
    if key is None:
        run = finish(start_suite(tmp, *args, env=env), tmp, timeout)
        _record((_canonical(args), sorted((env or {}).items()), body), run.seconds, False)
        return run
    digest = hashlib.sha256(json.dumps(key).encode()).hexdigest()[:20]
    kept = shared_root() / digest
    with open(shared_root() / f"{digest}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if (kept / "run.json").exists():
            run = SuiteRun(**json.loads((kept / "run.json").read_text()), shared=True)
            if (kept / "reports").exists():
                shutil.copytree(kept / "reports", tmp / "reports")
            _record(key, run.seconds, True)
            return run
        run = finish(start_suite(tmp, *args, env=env), tmp, timeout)
        _record(key, run.seconds, False)
        kept.mkdir()
        if (tmp / "reports").exists():
            shutil.copytree(tmp / "reports", kept / "reports")  # the test may change its own afterwards
        fields = {f.name: getattr(run, f.name) for f in dataclasses.fields(run) if f.name != "shared"}
        (kept / "run.json.part").write_text(json.dumps(fields))
        (kept / "run.json.part").rename(kept / "run.json")
        return run


def run_suite(
    tmp: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 120, shared: bool = True
) -> SuiteRun:
    """The suite with these arguments, run to its end (bounded by timeout); an identical earlier run of
    this session shared unless shared=False."""
    return _run(tmp, args, env, timeout, shared, None)


def run_scenario(tmp: Path, body: str, *args: str, **kwargs: object) -> SuiteRun:
    """The suite against a scenario file of the test's own (its TOML text)."""
    scenario = tmp / "scenario.toml"
    tmp.mkdir(parents=True, exist_ok=True)
    scenario.write_text(body)
    env = kwargs.pop("env", None)
    timeout = kwargs.pop("timeout", 120)
    shared = kwargs.pop("shared", True)
    assert not kwargs, kwargs
    return _run(tmp, (f"--sim={scenario}", *args), env, timeout, bool(shared), body)  # type: ignore[arg-type]


def sim_leftovers(pid: int) -> list[str]:
    """Namespaces, run dirs and sshd processes a suite run with this pid left behind."""
    left = [
        ns
        for ns in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
        if ns.startswith(f"gb10sim-{pid}-")
    ]
    if Path(f"/run/gb10sim/{pid}").exists():
        left.append(f"/run/gb10sim/{pid}")
    sshd = subprocess.run(["pgrep", "-af", f"/run/gb10sim/{pid}/"], capture_output=True, text=True).stdout.strip()
    if sshd:
        left.append(sshd)
    return left
