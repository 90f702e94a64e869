"""Installed as a package, gb10check runs as the clone does: a wheel built from the clone (what
`pip install .` and `pipx install .` build) goes into a fresh venv, and from another directory
`gb10check --version` names the suite inside the package and `gb10check all --sim` passes, its reports in
that directory. Nothing is left in the clone."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.sim


def _top_level(root: Path) -> set[str]:
    return {p.name for p in root.iterdir()}


def _run(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False, **kwargs)  # type: ignore[call-overload]


def test_a_wheel_in_a_fresh_venv_runs_the_suite_from_another_directory(tmp_path):
    from sim.cluster import why_not_available

    if why_not_available():
        pytest.skip(why_not_available())
    before = _top_level(ROOT)
    built = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                  "-w", str(tmp_path / "wheel"), str(ROOT)])  # fmt: skip
    assert built.returncode == 0, built.stderr
    assert _top_level(ROOT) == before, "the build left files in the clone"
    (wheel,) = (tmp_path / "wheel").glob("gb10check-*.whl")

    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", "--without-pip", str(venv)]).returncode == 0
    python = venv / "bin" / "python"
    installed = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
                      "--no-index", str(wheel)])  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    # its dependencies: this venv's (the test installs the wheel, not the index's packages)
    fresh_purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    Path(fresh_purelib.stdout.strip(), "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    compose = Path(sys.executable).parent / "docker-compose"
    if compose.is_file():  # the sim's Docker Compose, beside the suite's Python as bin/setup puts it
        (venv / "bin" / "docker-compose").symlink_to(compose)
    # the shell parser's binary: a dependency's (shfmt-py) file in the venv's bin, which pip would have put there
    shfmt = Path(sys.executable).parent / "shfmt"
    assert shfmt.is_file(), "shfmt-py's shfmt beside this Python: bin/setup installs it"
    (venv / "bin" / "shfmt").symlink_to(shfmt)

    elsewhere = tmp_path / "operator"
    elsewhere.mkdir()
    unset = ("VIRTUAL_ENV", "PYTHONPATH", "GB10_CLUSTER", "GB10_REPORTS")
    env = {k: v for k, v in os.environ.items() if k not in unset}
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}"
    gb10check = str(venv / "bin" / "gb10check")
    shown = _run([gb10check, "--version"], cwd=elsewhere, env=env)
    assert shown.returncode == 0, shown.stderr
    suite_line = shown.stdout.splitlines()[1]
    assert str(venv) in suite_line and "gb10check/_suite (installed)" in suite_line, shown.stdout

    run = _run([gb10check, "all", "--sim", "-q"], cwd=elsewhere, env=env)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    summary = (elsewhere / "reports" / "summary.md").read_text()
    assert "passed" in summary and "failed" not in summary.split("\n\n", 1)[0]
    assert _top_level(ROOT) == before, "the run left files in the clone"
    assert not (ROOT / "gb10check" / "_suite").exists()
