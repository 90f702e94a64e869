"""The hardening figures: faults survived, bad inputs tried, secrets planted vs found.

    sudo .venv/bin/python benchmarks/bench_bad_day.py

Runs the fault scenarios of selftests/e2e/bad_day.py against the simulated cluster (needs root):
rank 1 unreachable four ways, a hung tool, SIGTERM and SIGINT at bring-up, mid-snapshot and
mid-check, SIGTERM on a real (non-sim) inventory; for each, whether the reports were written, the
exit status, the lines of output and the size of junit.xml, against the bounds the hardening issue
set, per check (under 2 lines and 1 kB of JUnit each, plus 100 lines), and at most the healthy run + the
connect timeout + 1 s. Then it
counts the malformed inputs the self-tests feed the suite, by kind, and plants secrets to find.
Then what a node says, as untrusted: rank 1's nvidia-smi printing forever and its dmesg of 213 MB
(only those probes' checks may fail, beside the same run healthy), 34 hostile run files in --history
(one warning each, every report written, exit 0), terminal escapes in four places (no control
character in any output); the hostile inputs the self-tests try, by kind; the time to split a
snapshot holding two cut floods, beside one regex pass over the same text.

One long line (issue 17, item 1): rank 1's container log ending with one 10 MB line, run to the end
and signalled mid-run; the masking's speed on 10 MB of adversarial and of normal text beside its
floor (one pass of a trivial regex) and the quadratic pattern it replaced; the adversarial inputs the
self-tests try. Secrets (items 4, 5): every shape planted in every place, counted in every output.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from collections import Counter
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from gb10check.safe_text import redact  # noqa: E402
from selftests import adversarial  # noqa: E402
from selftests.e2e import bad_day  # noqa: E402  (the project root, as pytest's pythonpath gives it)
from selftests.e2e.runner import run_scenario, run_suite  # noqa: E402

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
    rows.append(_signalled("SIGTERM on a real inventory", tmp, bad_day.sigterm_real_inventory(tmp)))
    return rows


def _signalled(what: str, tmp: Path, result: bad_day.Interrupted, more: str = "") -> tuple[str, str]:
    return what, f"exit {result.run.rc} after {result.exit_seconds:.1f} s, reports {_written(tmp)}{more}"


def _written(tmp: Path) -> str:
    return "written" if _reports_written(tmp) else "MISSING"


def bad_inputs() -> Counter[str]:
    return _collected(BAD_INPUT_TESTS)


def _collected(tests: dict[str, list[str]]) -> Counter[str]:
    """How many cases pytest collects of each kind's test functions."""
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
        for kind, functions in tests.items():
            if function in functions:
                counts[kind] += 1
    return counts


def secrets(root: Path) -> dict[str, int]:
    """Each planted secret (bad_day.SECRETS and every shape of bad_day.SHAPED), how often found in the
    terminal, junit.xml, summary.md/json, report.html, the history kept and the Prometheus file."""
    tmp = root / "secrets"
    tmp.mkdir()
    return bad_day.leaked(tmp, bad_day.secrets_run(tmp))


# -- one long line (issue 17, item 1) -------------------------------------------------------------
# self-test functions whose cases are adversarial text: a pattern's own literals over and over, 10 MB lines
ADVERSARIAL_TESTS = {
    "masking patterns x adversarial texts": ["test_every_masking_pattern_is_linear_on_long_adversarial_text"],
    "node-output patterns x adversarial lines": [
        "test_every_pattern_over_node_output_is_fast_on_an_adversarial_bounded_line"
    ],
    "10 MB inputs": [
        "test_ten_megabytes_of_one_name_run_are_masked_in_linear_time",
        "test_a_10mb_value_of_a_secret_name_is_masked_whole_in_linear_time",
        "test_keyword_dense_text_is_masked_in_linear_time",
        "test_an_interrupt_waits_well_under_a_second_while_10mb_are_masked",
        "test_a_10mb_container_log_line_is_read_as_its_head_saying_how_much_was_left_out",
        "test_a_10mb_kernel_log_line_is_read_as_its_head",
        "test_a_10mb_line_of_a_container_gpu_failure_is_read_bounded",
        "test_symptoms_are_matched_on_bounded_lines_of_a_10mb_text",
    ],
}


def long_line(root: Path) -> list[tuple[str, str]]:
    tmp = root / "long-line"
    tmp.mkdir()
    run = bad_day.long_line_run(tmp)
    rows = [
        (
            "one 10 MB container log line",
            f"{'ok  ' if run.run.rc == 0 else 'FAIL'} {run.seconds:.1f} s, exit {run.run.rc}, {run.lines} lines, "
            f"reports {_written(tmp)}",
        )
    ]
    tmp = root / "long-line-sigterm"
    tmp.mkdir()
    result = bad_day.sigterm_during_long_line(tmp)
    during = (result.run.summary or {}).get("interruption", {}).get("during")
    rows.append(_signalled("SIGTERM during it", tmp, result, f", during {during}"))
    return rows


def _speed(function, text: str) -> float:
    start = time.perf_counter()
    function(text)
    return len(text) / (time.perf_counter() - start) / 1e6


def masking_speed(size: int = 10_000_000) -> list[tuple[str, str]]:
    """MB/s of redact (what a node said) and redact_known (the suite's own reports) on 10 MB; the floor
    is one pass of a trivial regex over the same text."""
    normal = (PROJECT / "selftests/data/commands/vllm.v0.13.0.gb10.llm_offline_init.log").read_text()
    floor = re.compile(r"[=:]")
    texts = {
        "a run of letters, digits and _.- (the issue's)": adversarial.run_of_name_characters(size),
        "keyword-dense (every rule runs everywhere)": adversarial.keyword_dense(size),
        "normal (a vLLM 0.13 startup log, repeated)": adversarial.fill(normal, size),
    }
    rows = []
    for what, text in texts.items():
        rows.append(
            (
                what,
                f"redact {_speed(redact.redact, text):.1f} MB/s, redact_known {_speed(redact.redact_known, text):.1f} "
                f"MB/s (floor {_speed(lambda t: sum(1 for _ in floor.finditer(t)), text):.0f} MB/s)",
            )
        )
    return rows


# the name pattern the masking had before (issue 17): quadratic on a run of letters, digits and _.-
_OLD_NAME = re.compile(
    r"(?P<name>(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]*[A-Za-z][A-Za-z0-9_.-]*)(?P<sep>[\"']?[ \t]*[=:][ \t]*[\"']?)"
    r"(?P<value>[^\s\"'\\,;}\]]+)"
)


def before_and_after() -> list[tuple[str, str]]:
    rows = []
    for size in (5_000, 10_000, 20_000, 40_000, 10_000_000):
        text = adversarial.run_of_name_characters(size)
        start = time.perf_counter()
        redact.redact(text)
        after = time.perf_counter() - start
        before = "(not run: about two days at the quadratic rate)"
        if size <= 40_000:
            start = time.perf_counter()
            sum(1 for _ in _OLD_NAME.finditer(text))
            before = f"{time.perf_counter() - start:.2f} s"
        rows.append((f"{size:,} characters", f"before {before}, now {after:.3f} s"))
    return rows


def adversarial_inputs() -> Counter[str]:
    return _collected(ADVERSARIAL_TESTS)


# -- what a node says is untrusted: a flooding probe, a hostile history folder, terminal escapes ------------
def untrusted_inputs() -> dict[str, int]:
    """The hostile inputs the self-tests feed the suite, by kind."""
    from gb10check.safe_text.neutralise import neutralise
    from selftests.unit.test_sudoers_hint import ODD_NAMES

    controls = [chr(c) for c in range(0x110000) if neutralise(chr(c)) != chr(c)]
    planted = tomllib.loads(f's = "{bad_day.ESCAPES}"')["s"]
    return {
        "history run files (generated)": len(bad_day.hostile_runs()),
        "control characters neutralised": len(controls),
        "control characters planted in a run": 4 * len(bad_day.CONTROL.findall(planted)),  # 4 places
        "file names in a sudoers rule": len(ODD_NAMES),
    }


def _outputs_written(tmp: Path, *extra: str) -> str:
    names = ("junit.xml", "summary.json", "summary.md", "report.html", *extra)
    missing = [n for n in names if not (tmp / "reports" / n).is_file()]
    return "every report written" if not missing else f"MISSING {', '.join(missing)}"


def untrusted_faults(root: Path) -> list[tuple[str, str]]:
    """Rank 1's nvidia-smi printing forever and its dmesg 213 MB (against the same run healthy), 34 hostile run
    files in --history, escapes in a tool's stderr, a kernel log line, the served model name and version."""
    rows: list[tuple[str, str]] = []
    args = ("-m", "preflight or network", "-k", "not bandwidth")
    (root / "untrusted-healthy").mkdir()
    healthy = bad_day.timed(root / "untrusted-healthy", "--sim=healthy", *args)
    tmp = root / "flood"
    tmp.mkdir()
    start = time.monotonic()
    run = run_scenario(tmp, bad_day.FLOOD, *args)
    seconds = time.monotonic() - start
    failed = run.failed()
    cut = sum(1 for tid, hints in failed.items() if hints == {"output-cut"} and bad_day.R1 in tid)
    passed = sum(1 for outcome in run.outcomes().values() if outcome == "passed")
    ok = cut == len(failed) == 6
    snap = (run.summary or {}).get("timings", {}).get("snapshot", 0.0)
    floor = (healthy.run.summary or {}).get("timings", {}).get("snapshot", 0.0)
    rows.append(
        (
            "flooding probe (rank 1)",
            f"{'ok  ' if ok else 'FAIL'} {cut} checks output-cut, {len(failed) - cut} others failed, {passed} passed; "
            f"{seconds:.1f} s (healthy {healthy.seconds:.1f} s), snapshot {snap:.1f} s "
            f"(healthy {floor:.1f} s); {_outputs_written(tmp)}",
        )
    )
    tmp = root / "hostile-history"
    tmp.mkdir()
    cases = {
        name: data
        for name, data in bad_day.hostile_runs().items()
        if name.startswith(("the file:", "checks.0.figures")) and not name.endswith(("negative number", "fraction"))
    }
    bad_day.write_hostile_history(tmp / "history", cases)
    run = run_suite(tmp, "--sim=healthy", "-k", "bandwidth", f"--history={tmp / 'history'}",
                    f"--prometheus={tmp / 'reports' / 'gb10check.prom'}")  # fmt: skip
    warned = len((run.summary or {}).get("history", {}).get("warnings", []))
    ok = run.rc == 0 and warned == len(cases)
    rows.append(
        (
            "hostile history folder",
            f"{'ok  ' if ok else 'FAIL'} {len(cases)} run files, {warned} warnings, exit {run.rc}, "
            f"{_outputs_written(tmp, 'gb10check.prom')}",
        )
    )
    tmp = root / "escapes"
    tmp.mkdir()
    run = run_suite(tmp, f"--sim={bad_day.escapes_scenario(tmp)}", "-m", "not performance",
                    f"--prometheus={tmp / 'reports' / 'gb10check.prom'}")  # fmt: skip
    found = bad_day.controls(tmp, run)
    rows.append(
        (
            "terminal escapes (4 places)",
            f"{'ok  ' if not any(found.values()) else 'FAIL'} control characters in the terminal, summary.md/json, "
            f"junit.xml, report.html, .prom: {sum(found.values())}",
        )
    )
    return rows


def split_seconds() -> tuple[float, float]:
    """split_output on the frames of 35 probes, two of them cut floods (16 MiB each), against one plain regex
    pass over the same text (the floor: reading it once)."""
    import re

    from gb10check.reading.snapshot import PROBE_KEEP, Probe, new_boundary, split_output

    boundary = new_boundary()
    probes = tuple(Probe(f"p{i}", "x") for i in range(35))
    flood = ("x" * 60 + "\n") * (PROBE_KEEP // 61)
    text = "".join(
        f"{boundary} begin {p.name}\n{flood if i in (3, 20) else 'small'}\n{boundary} stderr {p.name}\n"
        f"\n{boundary} end {p.name} 0\n"
        for i, p in enumerate(probes)
    )
    start = time.perf_counter()
    split_output(text, probes, boundary, 1.0)
    split = time.perf_counter() - start
    start = time.perf_counter()
    re.findall(rf"^{boundary} .*$", text, re.MULTILINE)
    return split, time.perf_counter() - start


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
        found = secrets(root)
        print(
            "Secrets planted vs found in terminal output, junit.xml, summary.json/md, report.html, the history "
            f"and the Prometheus file: {len(found)} vs {sum(1 for n in found.values() if n)} "
            f"({sum(found.values())} occurrences)"
        )
        for shape in sorted({name.split(": ", 1)[-1] for name in bad_day.SHAPED}):
            mine = {k: v for k, v in found.items() if k.endswith(f": {shape}")}
            print(
                f"  {shape:32} {len(mine)} vs {sum(1 for n in mine.values() if n)} (kernel log, container log, "
                "vLLM version, .env)"
            )
        print("Faults survived, what a node says is untrusted (only the flooded probe's checks fail; each hostile file")
        print("  one warning and the run goes on; no control character in any output)")
        for what, figures in untrusted_faults(root):
            print(f"  {what:32} {figures}")
        hostile = untrusted_inputs()
        print(f"Hostile inputs tried by the self-tests: {sum(hostile.values())}")
        for kind, n in hostile.items():
            print(f"  {kind:32} {n}")
        split, floor = split_seconds()
        print(f"Splitting a snapshot with two 16 MiB floods: {split:.2f} s (one regex pass over it: {floor:.2f} s)")
        print("One long line (issue 17, item 1)")
        for what, figures in long_line(root):
            print(f"  {what:32} {figures}")
        print("Masking speed on 10 MB")
        for what, figures in masking_speed():
            print(f"  {what:48} {figures}")
        print("Masking a run of letters, digits and _.-: the old name pattern vs now")
        for what, figures in before_and_after():
            print(f"  {what:32} {figures}")
        counts = adversarial_inputs()
        print(f"Adversarial inputs the self-tests try, each within a fixed bound: {sum(counts.values())}")
        for kind in ADVERSARIAL_TESTS:
            print(f"  {kind:40} {counts[kind]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
