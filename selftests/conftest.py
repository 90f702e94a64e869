from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
PROJECT = Path(__file__).resolve().parent.parent


@pytest.fixture
def capture():
    """Text of a captured tool output under selftests/data/."""
    return lambda name: (DATA / name).read_text(encoding="utf-8")


def pytest_collection_modifyitems(config, items):
    from sim.cluster import why_not_available

    reason = why_not_available()
    if reason:
        for item in items:
            if "sim" in item.keywords:
                item.add_marker(pytest.mark.skip(reason=reason))


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
