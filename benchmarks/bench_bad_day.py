"""The hardening figures: faults survived, bad inputs tried, secrets planted vs found.

    sudo .venv/bin/python benchmarks/bench_bad_day.py

Runs the fault scenarios of selftests/e2e/bad_day.py against the simulated cluster (needs root):
rank 1 unreachable four ways, a hung tool, SIGTERM and SIGINT at bring-up, mid-snapshot and
mid-check, SIGTERM on a real (non-sim) inventory; for each, whether the reports were written, the
exit status, the lines of output and the size of junit.xml, against the bounds the hardening issue
set, per check (under 2 lines and 1 kB of JUnit each, plus 100 lines), and at most the healthy run + the
connect timeout + 1 s. Then it
counts the malformed inputs the self-tests feed the suite, by kind, and plants secrets to find.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from selftests.e2e import bad_day  # noqa: E402  (the project root, as pytest's pythonpath gives it)
from selftests.e2e.runner import run_suite  # noqa: E402

# self-test functions whose cases are malformed inputs, by what they feed the suite
BAD_INPUT_TESTS = {
    "inventories": [
        "test_invalid_inventory_names_file_key_and_expectation",
        "test_any_bytes_in_a_clear_error_out",
        "test_undecodable_bytes_are_named",
        "test_a_huge_file_is_not_read",
        "test_inventory_from_env_and_invalid_key",
        "test_the_origin_of_the_inventory_path_is_named",
    ],
    "hints files": ["test_malformed_entries_are_rejected", "test_a_bad_hints_file_is_a_clear_error"],
    "scenarios": ["test_a_typo_names_the_file_and_the_key", "test_a_scenario_in_another_encoding_is_named"],
    "tool outputs": [
        "test_empty_garbage_or_truncated_output_is_a_parse_error_with_the_excerpt",
        "test_nvidia_smi_garbage",
        "test_models_garbage",
        "test_ibdev2netdev_garbage",
        "test_proc_driver_version_garbage",
        "test_dotenv_garbage_names_the_line",
        "test_docker_client_errors_name_their_hint",
        "test_sim_scenario_file_with_verbatim_stub_output",
    ],
    "HTTP answers": [
        "test_a_broken_answer_is_a_clear_verdict",
        "test_nothing_listening_is_service_unreachable",
        "test_a_trickling_server_is_cut_off_at_the_deadline",
    ],
}


def _reports_written(tmp: Path) -> bool:
    try:
        json.loads((tmp / "reports" / "summary.json").read_text())
        return (tmp / "reports" / "junit.xml").stat().st_size > 0
    except (OSError, ValueError):
        return False


def faults(root: Path) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    healthy = bad_day.timed(root / "healthy", f"--sim={bad_day.scenario_file(root, 'healthy', bad_day.HEALTHY)}")
    bound = healthy.seconds + bad_day.CONNECT_TIMEOUT + 1
    rows.append(("healthy (reference)", f"{healthy.seconds:.1f} s, {healthy.lines} lines, exit {healthy.run.rc}"))
    for name, body in bad_day.UNREACHABLE.items():
        tmp = root / name
        tmp.mkdir()
        run = bad_day.timed(tmp, f"--sim={bad_day.scenario_file(tmp, name, body)}")
        ok = run.within_output_bounds() and run.seconds <= bound and _reports_written(tmp)
        rows.append(
            (
                f"rank 1 {name}",
                f"{'ok  ' if ok else 'FAIL'} {run.seconds:.1f} s (bound {bound:.1f}), {run.lines} lines, "
                f"junit {run.junit_bytes / 1000:.0f} kB, reports {'written' if _reports_written(tmp) else 'MISSING'}",
            )
        )
    tmp = root / "hung-tool"
    tmp.mkdir()
    hung = tmp / "hung.toml"
    hung.write_text(f'base = "healthy"\n[[nodes.{bad_day.R1}.stubs]]\ntool = "nvidia-smi"\ndelay = 120\n')
    run = bad_day.timed(tmp, f"--sim={hung}", "-m", "preflight")
    rows.append(("hung nvidia-smi", f"{run.seconds:.1f} s, exit {run.run.rc}, reports {_written(tmp)}"))
    for stage in ("bring-up", "mid-snapshot", "mid-check"):
        for signum in (signal.SIGTERM, signal.SIGINT):
            tmp = root / f"{stage}-{signum.name}"
            tmp.mkdir()
            result = bad_day.signal_sim_at(tmp, stage, signum)
            rows.append(
                (
                    f"{signum.name} at {stage}",
                    f"exit {result.run.rc} after {result.exit_seconds:.1f} s, reports {_written(tmp)}, "
                    f"interrupted {(result.run.summary or {}).get('interrupted')}",
                )
            )
    tmp = root / "real-inventory"
    tmp.mkdir()
    result = bad_day.sigterm_real_inventory(tmp)
    rows.append(
        (
            "SIGTERM on a real inventory",
            f"exit {result.run.rc} after {result.exit_seconds:.1f} s, reports {_written(tmp)}",
        )
    )
    return rows


def _written(tmp: Path) -> str:
    return "written" if _reports_written(tmp) else "MISSING"


def bad_inputs() -> Counter[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "selftests", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    counts: Counter[str] = Counter()
    for line in proc.stdout.splitlines():
        function = line.split("::")[-1].split("[")[0]
        for kind, functions in BAD_INPUT_TESTS.items():
            if function in functions:
                counts[kind] += 1
    return counts


def secrets(root: Path) -> tuple[int, int]:
    tmp = root / "secrets"
    tmp.mkdir()
    run = run_suite(
        tmp, f"--sim={bad_day.secrets_scenario(tmp)}", env={bad_day.API_KEY_ENV: bad_day.SECRETS["api_key"]}
    )
    return len(bad_day.SECRETS), sum(bad_day.leaked(tmp, run).values())


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="gb10check-bad-day-") as folder:
        root = Path(folder)
        print(
            "Faults survived (rank 1 unreachable: < 2 lines and < 1 kB of junit per check + 100 lines, "
            "<= healthy + connect + 1 s)"
        )
        for what, figures in faults(root):
            print(f"  {what:32} {figures}")
        counts = bad_inputs()
        print(f"Bad inputs tried by the self-tests, each a clear error: {sum(counts.values())}")
        for kind in BAD_INPUT_TESTS:
            print(f"  {kind:32} {counts[kind]}")
        planted, found = secrets(root)
        print(f"Secrets planted vs found in terminal output, junit.xml, summary.json/md: {planted} vs {found}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
