"""Signals where Python cannot take the exception: inside compile() during collection, and inside a
finalizer (fixtures/interrupt.py). Both must still end the run as interrupted, with exit status 2."""

from __future__ import annotations

import json
import os
import signal
import textwrap
from pathlib import Path

import pytest

from fixtures import interrupt


@pytest.fixture
def subprocess_suite(pytester, monkeypatch):
    """A pytest subprocess with the plugin from this checkout and a local-only inventory."""
    monkeypatch.setenv("PYTHONPATH", str(Path(interrupt.__file__).resolve().parent.parent))
    pytester.makeini("[pytest]\naddopts = -p no:cacheprovider\n")
    pytester.path.joinpath("inv.toml").write_text('[[nodes]]\nname = "here"\nrank = 0\ntransport = "local"\n')
    return pytester


PLUGINS = "pytest_plugins = " + repr(
    ["fixtures.interrupt", "fixtures.cluster", "fixtures.hints", "fixtures.reports", "fixtures.terminal"]
)


@pytest.fixture
def handler():
    """The plugin's handler on SIGTERM, with fresh state; the test runner's own restored after."""
    saved = interrupt.STATE
    interrupt.STATE = interrupt.Interruption()
    previous = signal.signal(signal.SIGTERM, interrupt._handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        interrupt.STATE = saved


def test_a_signal_inside_held_is_raised_when_the_block_ends(handler):
    with pytest.raises(KeyboardInterrupt, match="SIGTERM"), interrupt.held():
        os.kill(os.getpid(), signal.SIGTERM)
        reached = True  # the handler ran above, at the next bytecode, and did not raise here
    assert reached and interrupt.interrupted()


def test_nothing_is_raised_when_no_signal_came(handler):
    with interrupt.held():
        pass
    interrupt.deliver()
    assert not interrupt.interrupted()


@pytest.mark.slow
def test_an_interrupt_that_a_finalizer_swallowed_stops_the_run_before_the_next_check(subprocess_suite):
    pytester = subprocess_suite
    # the signal lands in a __del__: Python reports the KeyboardInterrupt as unraisable and carries on
    pytester.makeconftest(PLUGINS)
    pytester.makepyfile(
        test_lost=textwrap.dedent(
            """
            import os, signal, time

            class Finalized:
                def __del__(self):
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(0.2)  # the handler runs here, inside the finalizer

            def test_first():
                Finalized()

            def test_second():
                pass
            """
        )
    )
    result = pytester.runpytest_subprocess("--cluster=inv.toml", "--reports-dir=reports", "-v")
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    result.stdout.no_fnmatch_line("*test_second PASSED*")
    summary = json.loads((pytester.path / "reports" / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["interruption"]["signal"] == "SIGTERM"
    assert {row["check"] for row in summary["checks"]} <= {"test_first"}, summary["checks"]


@pytest.mark.slow
def test_a_signal_during_collection_is_an_interrupted_run_never_an_internal_error(subprocess_suite):
    pytester = subprocess_suite
    # SIGTERM lands in code that cannot take an exception: CPython's compile() turned the
    # KeyboardInterrupt raised inside it into "SystemError: AST constructor recursion depth
    # mismatch" (seen in CI: INTERNALERROR, exit 3). The hook below converts it the same way.
    pytester.makeconftest(
        textwrap.dedent(
            """
            import os, signal, time
            PLUGINS

            def pytest_collection_modifyitems(items):
                try:
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(0.1)
                except KeyboardInterrupt as exc:
                    raise SystemError("AST constructor recursion depth mismatch (before=81, after=102)") from exc
            """
        ).replace("PLUGINS", PLUGINS)
    )
    pytester.makepyfile(test_c="def test_a():\n    pass\n")
    result = pytester.runpytest_subprocess("--cluster=inv.toml", "--reports-dir=reports")
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    result.stdout.no_fnmatch_line("*INTERNALERROR*")
    result.stdout.fnmatch_lines(["*interrupted by SIGTERM while the checks were collected*exit status 2"])
    summary = json.loads((pytester.path / "reports" / "summary.json").read_text())
    assert summary["interrupted"] is True
    assert [row["check"] for row in summary["checks"]] == ["session"]


def _check(nodeid: str):
    from types import SimpleNamespace

    return SimpleNamespace(nodeid=nodeid, location=("t.py", 1, nodeid), keywords={})


def test_a_signal_between_the_next_checks_start_and_its_logstart_names_that_check(handler):
    # pytest_runtest_protocol has set `running`, pytest_runtest_logstart has not yet set the stage
    interrupt.STATE.started = True
    interrupt.STATE.stage = "after t.py::test_a"
    interrupt.STATE.running = _check("t.py::test_b")
    interrupt.STATE.signal_name = "SIGTERM"
    interrupt.settle()
    report = interrupt.interrupted_item_report()
    assert interrupt.STATE.stage == "t.py::test_b"
    assert report is not None and report.nodeid == "t.py::test_b"
    assert "while it was being set up" in str(report.longrepr)


def test_a_signal_after_a_checks_teardown_was_logged_cuts_no_check(handler):
    # the teardown report is in, `running` not yet cleared: the check finished, none was cut
    interrupt.STATE.started = True
    interrupt.STATE.stage = "t.py::test_a"
    interrupt.STATE.running = _check("t.py::test_a")
    interrupt.STATE.phase_done = {"setup", "call", "teardown"}
    interrupt.STATE.signal_name = "SIGTERM"
    interrupt.settle()
    assert interrupt.STATE.stage == "after t.py::test_a"
    assert interrupt.interrupted_item_report() is None
