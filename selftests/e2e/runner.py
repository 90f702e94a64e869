"""Run the acceptance suite in a subprocess, as a user would, and read what it left."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]


@dataclass
class SuiteRun:
    rc: int
    out: str
    pid: int
    junit: dict[str, dict]  # test id "file::name[param]" -> {"outcome", "message", "properties"}
    summary: dict | None

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
    full_env = {k: v for k, v in os.environ.items() if k not in ("GB10_CLUSTER", "CI", "BUILD_NUMBER")}
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
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise AssertionError(f"the suite hung for {timeout} s:\n{out}") from None
    reports = tmp / "reports"
    summary_path = reports / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else None
    return SuiteRun(proc.returncode, out, proc.pid, _read_junit(reports / "junit.xml"), summary)


def run_suite(tmp: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 120) -> SuiteRun:
    return finish(start_suite(tmp, *args, env=env), tmp, timeout)


def run_scenario(tmp: Path, body: str, *args: str, **kwargs: object) -> SuiteRun:
    """The suite against a scenario file of the test's own (its TOML text)."""
    scenario = tmp / "scenario.toml"
    scenario.write_text(body)
    return run_suite(tmp, f"--sim={scenario}", *args, **kwargs)  # type: ignore[arg-type]


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
