"""Wall time of the suite on the simulated cluster, and SSH sessions per node.

    sudo .venv/bin/python benchmarks/bench_sim.py [--runs 3] [--scenario healthy] [-- PYTEST ARGS]

For each run: the whole `pytest --sim` wall time, pytest's start-up alone (`pytest --version`
with the plugin loaded), the session time the suite reports (collection + checks, without the
sim's bring-up and teardown), and from summary.json the SSH connections and commands per node.
Aim (foundation issue): one snapshot round trip per node; the checks within 3 s beyond start-up.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent


def timed(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=PROJECT, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    return time.monotonic() - start, proc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--scenario", default="healthy")
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args()
    py = sys.executable
    startup = [timed([py, "-m", "pytest", "--version"])[0] for _ in range(args.runs)]
    rows = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp:
            wall, proc = timed(
                [
                    py,
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    f"--sim={args.scenario}",
                    f"--reports-dir={tmp}",
                    *args.pytest_args,
                ]
            )
            path = Path(tmp) / "summary.json"
            if not path.exists():
                print(proc.stdout[-3000:], proc.stderr[-3000:], file=sys.stderr)
                raise SystemExit(f"the run left no {path} (exit {proc.returncode})")
            summary = json.loads(path.read_text())
        rows.append((wall, summary["duration"], summary["counts"], summary["transports"], proc.returncode))
    print(f"scenario {args.scenario}, {args.runs} runs, pytest args {args.pytest_args or '(all markers)'}")
    print(f"  pytest start-up (--version):   median {statistics.median(startup):.2f} s")
    print(
        f"  whole run incl. sim up/down:   median {statistics.median(r[0] for r in rows):.2f} s "
        f"(min {min(r[0] for r in rows):.2f}, max {max(r[0] for r in rows):.2f})"
    )
    print(f"  suite session (collect+check): median {statistics.median(r[1] for r in rows):.2f} s")
    print(f"  checks: {rows[-1][2]} (exit {rows[-1][4]})")
    for node, stats in rows[-1][3].items():
        print(
            f"  {node}: {stats['connections']} SSH connection(s), {stats['commands']} command(s), "
            f"{stats.get('snapshot_probes', '?')} probes in its snapshot"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
