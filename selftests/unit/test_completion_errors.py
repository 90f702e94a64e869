"""RDMA completion errors as perftest and NCCL print them, every layout rendered from the tools' own
format strings (selftests/data/SOURCES.md): each status its own meaning and hint, NCCL's lost peer in
every layout it has printed."""

from __future__ import annotations

import re
import tomllib

import pytest

from gb10check.judging.hints import Catalogue
from gb10check.reading.parsers.perftest import WC_STATUS, classify_failure
from selftests.conftest import DATA

PERFTEST = tomllib.loads((DATA / "commands/ib_write_bw.error.completion_error.formats_by_version.toml").read_text())
NCCL = tomllib.loads((DATA / "commands/nccl.warn.net_ib_completion_error.formats_by_version.toml").read_text())
STATUSES = {
    int(code): (name, text)
    for code, name, text in (
        line.split("\t")
        for line in (DATA / "commands/libibverbs.ibv_wc_status_str.rdma-core.tsv").read_text().splitlines()
        if line and not line.startswith("#")
    )
}


def printf(fmt: str, *args: object) -> str:
    """C's printf for the conversions these tools use (%d %u %lu %x %s)."""
    return re.sub(r"%l?u", "%d", fmt) % args


def perftest_error(layout: dict, side: str, status: int) -> str:
    """What ib_write_bw prints on stderr for a failed completion (wr_id 0, vendor syndrome 0x81)."""
    first, failed, counts = layout[side]
    named = "%s (%d)" in failed
    status_args = (STATUSES[status][1], status) if named else (status,)
    qp = (1001,) if "qp_num" in failed else ()
    tail = (128, 0) if side == "client" else (128,)
    return first + printf(failed, *status_args, *qp, 0, 0x81) + printf(counts, *tail)


def test_the_parser_names_each_status_as_libibverbs_does():
    assert dict(enumerate(WC_STATUS)) == STATUSES


ADVICE = [
    (12, "roce-retry-exceeded", "packets lost on the link"),
    (13, "roce-rnr-retry-exceeded", "no receive ready"),
    (10, "rdma-remote-access-error", "refused the write into its memory"),
    (11, "rdma-remote-operation-error", "a fault on the peer's side"),
    (5, "rdma-wr-flushed", "the cause is an earlier error"),
    (4, "rdma-completion-error", "the RDMA device failed the work request"),
    (21, "rdma-completion-error", "the RDMA device failed the work request"),
]


@pytest.mark.parametrize("layout", PERFTEST["layout"], ids=lambda layout: layout["tags"].split()[0])
@pytest.mark.parametrize("side", ["client", "server"])
@pytest.mark.parametrize(("status", "hint", "means"), ADVICE, ids=[str(a[0]) for a in ADVICE])
def test_each_completion_status_has_its_own_meaning_and_hint(layout, side, status, hint, means):
    failure = classify_failure(perftest_error(layout, side, status))
    name, text = STATUSES[status]
    assert failure is not None and failure.hint == hint
    assert f"failed at the {side} with status {status} {name} ({text}): " in failure.what and means in failure.what


def test_the_reconstructed_capture_is_the_retry_counter(capture):
    failure = classify_failure(capture("commands/ib_write_bw.error.completion_error.24.01_numeric.reconstructed.txt"))
    assert failure is not None and failure.hint == "roce-retry-exceeded"


@pytest.mark.parametrize("layout", PERFTEST["layout"], ids=lambda layout: layout["tags"].split()[0])
def test_a_flush_is_never_the_cause_while_another_status_is_there(layout):
    """The client's queue pair flushed (5) after the server's saw a remote access error (10): the 10 is the cause."""
    text = perftest_error(layout, "client", 5) + "\n" + perftest_error(layout, "server", 10)
    failure = classify_failure(text)
    assert failure is not None and failure.hint == "rdma-remote-access-error" and "at the server" in failure.what


def test_every_status_hint_is_in_the_catalogue_with_its_own_advice():
    catalogue = Catalogue.load()
    hints = {hint for _, hint, _ in ADVICE}
    assert all(hint in catalogue for hint in hints)
    assert len({catalogue[h].fix for h in hints}) == len(hints)
    assert "status 12" in catalogue["roce-retry-exceeded"].cause


# -- NCCL --------------------------------------------------------------------------------------------
NCCL_ARGS = {
    "peer": "169.254.159.206<45123>",
    "opcode": 0,
    "opcode_name": "IBV_WC_SEND",
    "len": 1048576,
    "vendor_err": 129,
    "req_type": "Send",
    "local_gid_label": " localGid ",
    "local_gid": "::ffff:169.254.94.252",
    "remote_gid_label": " remoteGids",
    "remote_gid": "::ffff:169.254.159.206",
    "hca": "rocep1s0f0",
}


def nccl_warn(layout: dict, status: int) -> str:
    """The WARN line as rank 0's container log shows it (Docker's timestamp, NCCL's prefix)."""
    values = {**NCCL_ARGS, **layout, "status": status, "status_name": STATUSES[status][0]}
    message = printf(layout["format"], *(values[name] for name in layout["args"]))
    return f"2026-12-03T11:42:07.118000000Z thinkstationpgx-30:187:412 [0] transport/net_ib.cc:1333 NCCL WARN {message}"


@pytest.mark.parametrize("layout", NCCL["layout"], ids=lambda layout: layout["tags"].split()[0])
def test_nccls_lost_peer_matches_in_every_layout_it_has_printed(layout):
    line = nccl_warn(layout, 12)
    assert "nccl-peer-lost" in [h.id for h in Catalogue.load().match(line)], line


@pytest.mark.parametrize("layout", NCCL["layout"], ids=lambda layout: layout["tags"].split()[0])
@pytest.mark.parametrize("status", [5, 10, 11, 13])
def test_other_nccl_completion_statuses_are_not_a_lost_peer(layout, status):
    line = nccl_warn(layout, status)
    assert "nccl-peer-lost" not in [h.id for h in Catalogue.load().match(line)], line
