"""Fixtures the service checks share: the startup wait, the requests sent at once, and what the
containers' logs say (which row of the troubleshooting table applies when the API is down)."""

import copy

import pytest

from fixtures.cluster import SETTINGS, progress_writer
from fixtures.hints import CATALOGUE
from gb10check.errors import GB10Error, ServiceError
from gb10check.judging.diagnosis import explain, log_findings
from gb10check.reading import probes
from gb10check.reading.parallel import map_parallel
from gb10check.service import asks, watchdog


@pytest.fixture(scope="session")
def service_snapshots(cluster, readiness):
    """Each node's container and its log: the session's snapshot, or read again after a --wait-ready
    (the snapshot was taken before the wait), nodes in parallel."""
    reads = (probes.CONTAINER, probes.DOCKER_LOGS)
    if readiness is None:
        cluster.gather()
        return {name: node.snapshot() for name, node in cluster.nodes.items()}
    fresh = map_parallel(lambda node: node.read_now(reads), cluster.nodes.values(), name="gb10check-logs")
    return dict(zip(cluster.nodes, fresh, strict=True))


@pytest.fixture(scope="session")
def findings(service_snapshots, request):
    return log_findings(service_snapshots, request.config.stash[CATALOGUE])


@pytest.fixture(scope="session")
def readiness(request, api, cluster, inventory, deployment):
    """--wait-ready (or --after-boot: service.ready_timeout): the wait, once per session, its record
    for the reports (None without either)."""
    settings = request.config.stash[SETTINGS]
    budget = settings.wait_ready or (inventory.service.ready_timeout if settings.after_boot else None)
    if not budget:
        return None
    seen = watchdog.wait_ready(
        api,
        cluster,
        deployment,
        budget,
        inventory.thresholds.stop_mem_available_gib,
        settings.stop_on_low_memory,
        progress_writer(request.config),
    )
    if request.config.get_terminal_writer().hasmarkup:
        request.config.get_terminal_writer().line("")
    return seen


@pytest.fixture(scope="session")
def ready(readiness, findings):
    """Every request check needs the service up: a failed wait fails them all with its one line."""
    if readiness is not None and not readiness.ready:
        raise explain(ServiceError(f"not ready: {readiness.why}", hint_ids=(readiness.hint,)), findings)
    return readiness


@pytest.fixture(scope="session")
def answers(api, inventory, ready, findings):
    """The independent requests of the checks, sent at once (the server batches them): name -> the
    reply, or the ServiceError (with what the logs say) that stood in its place."""
    model = inventory.service.served_model_name
    return dict(
        map_parallel(lambda ask: (ask.name, _asked(api, ask, model, findings)), asks.TOGETHER, name="gb10check-ask")
    )


def _asked(api, ask, model, findings):
    """The reply to one ask, or the error that stood in its place (a ServiceError with what the logs say)."""
    try:
        call = api.stream if ask.stream else api.chat
        return call(**ask.request(model))
    except ServiceError as exc:
        return explain(exc, findings)
    except GB10Error as exc:
        return exc


@pytest.fixture
def answer(answers, evidence):
    """`answer(ask)`: its reply (its time recorded); a request that got no answer fails the check with
    that one line."""

    def get(ask):
        reply = answers[ask.name]
        if isinstance(reply, GB10Error):
            raise copy.copy(reply)
        evidence.figure("request_seconds", reply.seconds)
        return reply

    return get


@pytest.fixture(scope="session")
def decode_run(api, inventory, answers, findings, cluster):
    """The decode-speed request, alone (after the others have finished: they would share its steps), and each
    node's GPU state (clocks, power, clock event reasons) read the moment it ends: one round trip per node, in
    parallel."""
    model = inventory.service.served_model_name
    reply = _asked(api, asks.DECODE, model, findings)

    def sample(name):
        try:
            return name, cluster[name].read_now((probes.GPU_CLOCKS,)).fact(probes.GPU_CLOCKS)
        except GB10Error as exc:
            return name, exc

    # read as the request ends (during it, the round trips competed with the decode for the machine's cores)
    return reply, dict(map_parallel(sample, list(cluster.nodes), name="gb10check-decode"))


@pytest.fixture(scope="session")
def decode_reply(decode_run):
    return decode_run[0]


@pytest.fixture(scope="session")
def decode_clocks(decode_run):
    """Per node: its GPU state read while the decode request ran, or the error reading it."""
    return decode_run[1]
