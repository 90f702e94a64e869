"""Loading the history folder: whatever a run file holds, it is read with its types or skipped with one warning."""

from __future__ import annotations

import json
import math

from gb10check.reporting import history as hist
from gb10check.reporting import html_report
from selftests.e2e import bad_day

VERDICTS = {"passed", "failed", "error", "skipped", "interrupted"}
BANDWIDTH = "test_rdma_bandwidth[a-b-enp1s0f0np0]::bandwidth_gbps"


def test_every_hostile_run_file_is_read_with_its_types_or_skipped_with_one_warning(tmp_path):
    cases = bad_day.hostile_runs()
    paths = bad_day.write_hostile_history(tmp_path, cases)
    history = hist.load(tmp_path)  # never raises, whatever the folder holds

    loaded = {run.path: run for run in history.runs}
    for (case, _), path in zip(cases.items(), paths, strict=True):
        warnings = [w for w in history.warnings if w.startswith(f"{path}: ")]
        assert len(warnings) == (0 if path in loaded else 1), (case, warnings)
    assert len(history.runs) + len(history.warnings) == len(cases)
    for warning in history.warnings:  # one line each, short, nothing of the file's bytes replayed
        assert "\n" not in warning and len(warning) < 400 and warning.isprintable(), warning
    for run in history.runs:  # what gets through has the types the history works with
        assert isinstance(run.started, str) and run.started.startswith("20")
        assert all(isinstance(t, str) and v in VERDICTS for t, v in run.verdicts.items()), run
        assert all(type(v) is float and math.isfinite(v) for v in run.figures.values()), run

    # the cases among them: each skipped, saying why
    said = {
        case: "".join(w for w in history.warnings if w.startswith(f"{path}: "))
        for case, path in zip(cases, paths, strict=True)
    }
    assert "checks.0.figures: Input should be a valid dictionary" in said["checks.0.figures: a list"]
    big = "checks.0.figures.bandwidth_gbps: a 400-digit number"
    assert "bandwidth_gbps: Input should be a valid number" in said[big]
    assert "not JSON: expected value at line 1" in said["checks.0.figures.bandwidth_gbps: NaN"]
    assert "not JSON: recursion limit exceeded" in said["the whole run: 100000 levels of nesting"]
    assert "larger than 8192 KiB" in said["the file: 200 MB"]
    assert "not UTF-8 at byte" in said["the file: Latin-1"]
    assert "not a gb10check summary (the file holds an array, not an object)" in said["the whole run: a list"]
    assert "not a gb10check summary of schema 1, 2 or 3 (found a string)" in said["schema_version: a string"]

    # and whatever was loaded, the judging and the report take it
    hist.trends(history.runs, {BANDWIDTH: 100.0}, hist.Rules(min_runs=1))
    hist.changes(history.runs[-1], {"tests_preflight/test_driver.py::test_driver_loaded[a]": "passed"})
    summary = bad_day.history_template()
    assert "<svg" in html_report.render(summary, {}, history.runs)


def test_a_good_run_is_read_whole(tmp_path):
    import json

    (tmp_path / "run-20260101T000000Z-1.json").write_text(json.dumps(bad_day.history_template()))
    history = hist.load(tmp_path)
    assert history.warnings == []
    [run] = history.runs
    assert run.figures == {BANDWIDTH: 109.0}
    assert run.verdicts == {
        "tests_network/test_bandwidth.py::test_rdma_bandwidth[a-b-enp1s0f0np0]": "passed",
        "tests_preflight/test_driver.py::test_driver_loaded[a]": "failed",
    }


def test_a_run_of_the_previous_schema_is_read(tmp_path):
    """Schema 1 (before N nodes: a check's `link`, no `nodes`) holds what the history reads: an upgrade
    keeps the history."""
    run = bad_day.history_template()
    run["schema_version"] = 1
    for check in run["checks"]:
        check["link"] = check.pop("rail")
        del check["nodes"]
    (tmp_path / "run-20260101T000000Z-1.json").write_text(json.dumps(run))
    loaded = hist.load(tmp_path)
    assert loaded.warnings == [] and len(loaded.runs) == 1
    assert loaded.runs[0].figures[BANDWIDTH] == 109.0
