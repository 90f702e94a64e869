from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
PROJECT = Path(__file__).resolve().parent.parent


@pytest.fixture
def capture():
    """Text of a captured tool output under selftests/data/."""
    return lambda name: (DATA / name).read_text(encoding="utf-8")


UNIT = Path(__file__).parent / "unit"


@pytest.hookimpl(tryfirst=True)  # before pytest's own -m selection, which then sees `quick`
def pytest_collection_modifyitems(config, items):
    """`quick`: the unit tests that need no simulated cluster and are not `slow` (the loop to run while
    working: `pytest selftests -m quick`); `sim` tests skip, saying why, where the sim cannot run."""
    from sim.cluster import why_not_available

    left_out = {"e2e": 0, "sim": 0, "slow": 0}
    for item in items:
        if UNIT not in Path(item.path).parents:
            left_out["e2e"] += 1
        elif "sim" in item.keywords:
            left_out["sim"] += 1
        elif "slow" in item.keywords:
            left_out["slow"] += 1
        else:
            item.add_marker(pytest.mark.quick)
    config.stash[LEFT_OUT] = left_out
    reason = why_not_available()
    if reason:
        for item in items:
            if "sim" in item.keywords:
                item.add_marker(pytest.mark.skip(reason=reason))


LEFT_OUT = pytest.StashKey[dict[str, int]]()


def pytest_terminal_summary(terminalreporter, config):
    """What the quick set left out, and what the suite runs of this session cost (shared runs counted)."""
    from selftests.e2e import runner

    write = terminalreporter.write_line
    if "quick" in (config.option.markexpr or "") and LEFT_OUT in config.stash:
        left = config.stash[LEFT_OUT]
        write(
            f"quick set: left out {left['e2e']} e2e, {left['sim']} sim and {left['slow']} slow tests; "
            "`pytest selftests` runs every test"
        )
    ran = [r for r in runner.records() if not r["shared"]]
    if ran:
        shared = len(runner.records()) - len(ran)
        seconds = sum(r["seconds"] for r in ran)
        keys = [json.dumps([r["args"], r["env"], r["body"]]) for r in ran]
        twice = sorted({k for k in keys if keys.count(k) > 1})
        write(
            f"suite runs: {len(ran)} run ({seconds:.0f} s), {shared} shared"
            + (f"; run more than once (asked for): {len(twice)}" if twice else "")
        )
        for key in twice:
            write(f"  more than once: {' '.join(json.loads(key)[0])}")


def pytest_configure(config):
    """The session's folder of shared suite runs (selftests/e2e/runner.py), made once, before `-n`'s
    workers start (they inherit it), removed by the process that made it; and the sim's clock: the
    self-tests' simulated clusters run their timed tools (ib_write_bw's -D) at a tenth of the time they
    are given (sim/node_files.py time_scale; a test that needs real time sets GB10SIM_TIME_SCALE=1)."""
    from selftests.e2e import runner
    from sim.node_files import TIME_SCALE_ENV

    os.environ.setdefault(TIME_SCALE_ENV, SELFTEST_TIME_SCALE)
    if hasattr(config, "workerinput") or os.environ.get(runner.SHARED_ENV):
        return
    os.environ[runner.SHARED_ENV] = tempfile.mkdtemp(prefix="gb10-selftest-runs-")
    config.stash[SHARED_MADE] = os.environ[runner.SHARED_ENV]


def pytest_unconfigure(config):
    from selftests.e2e import runner

    made = config.stash.get(SHARED_MADE, None)
    if made:
        shutil.rmtree(made, ignore_errors=True)
        os.environ.pop(runner.SHARED_ENV, None)


SHARED_MADE = pytest.StashKey[str]()
SELFTEST_TIME_SCALE = "0.1"


@pytest.fixture(scope="session")
def sim_healthy():
    """The healthy simulated cluster, up for the whole self-test session."""
    from sim.cluster import SimCluster, why_not_available
    from sim.scenario import load_scenario

    reason = why_not_available()
    if reason:
        pytest.skip(reason)
    sim = SimCluster(load_scenario("healthy"))
    sim.up()
    yield sim
    sim.down()


@pytest.fixture
def in_rank0(sim_healthy):
    """Run this test's main thread (and threads it starts) in rank 0's network namespace."""
    from sim import netns

    previous = netns.enter(sim_healthy.api_namespace)
    yield sim_healthy
    netns.leave(previous)
