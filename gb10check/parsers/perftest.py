"""perftest's `ib_write_bw`: the result table in both units, and what its error lines mean. Pure.

Formats from perftest's source (perftest_parameters.h RESULT_FMT / RESULT_FMT_G, the error strings
of perftest_communication.c and perftest_resources.c; selftests/data/SOURCES.md): 24.01 prints
`BW average[MB/sec]` (MiB, 2^20 bytes, despite the label), 24.07 and later `[MiB/sec]`, and
`--report_gbits` `[Gb/sec]` (10^9 bits).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gb10check.errors import ParseError

_TABLE = re.compile(r"^ #bytes\s+#iterations\s+BW peak\[(?P<unit>MB|MiB|Gb)/sec\]\s+BW average\[(?P=unit)/sec\]", re.M)
_ROW = re.compile(r"^ (?P<bytes>\d+)\s+(?P<iters>\d+)\s+(?P<peak>[\d.]+)\s+(?P<avg>[\d.]+)\s+(?P<rate>[\d.]+)", re.M)
_DEVICE = re.compile(r"Device\s+: (?P<device>\S+)")
_GID_INDEX = re.compile(r"^ GID index\s+: (?P<index>\d+)", re.M)
GBITS_PER_MIB = 2**20 * 8 / 1e9  # 1 MiB/s in Gb/s: 0.008388608


@dataclass(frozen=True)
class BwResult:
    device: str | None
    gid_index: int | None
    unit: str  # as printed: "Gb", "MB" or "MiB" (per second)
    average_gbps: float  # the last row's average (a -D run prints one row), in Gb/s
    rows: int


def parse_bw(text: str) -> BwResult:
    """The client's (or server's) output of a run that finished: the table and its last row."""
    table = _TABLE.search(text)
    if not table:
        raise ParseError("ib_write_bw", "no results table (#bytes #iterations BW peak ...)", text)
    rows = list(_ROW.finditer(text, table.end()))
    if not rows:
        raise ParseError("ib_write_bw", "a results table without a row", text)
    average = float(rows[-1]["avg"])
    unit = table["unit"]
    device, gid = _DEVICE.search(text), _GID_INDEX.search(text)
    return BwResult(
        device=device["device"] if device else None,
        gid_index=int(gid["index"]) if gid else None,
        unit=unit,
        average_gbps=average if unit == "Gb" else average * GBITS_PER_MIB,
        rows=len(rows),
    )


@dataclass(frozen=True)
class BwFailure:
    hint: str
    what: str  # one line: what perftest said, in the operator's terms


# first match wins: the most specific line of each variant
_FAILURES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (
        re.compile(r"ib_write_bw: (?:command )?not found|failed to run command .ib_write_bw.: No such file"),
        "tool-missing",
        "ib_write_bw is not installed (the perftest package)",
    ),
    (
        re.compile(r"Couldn't listen to port (?P<port>\d+)"),
        "bw-port-in-use",
        "the server could not listen on port {port}",
    ),
    (
        re.compile(r"Couldn't connect to (?P<host>[^:\s]+):(?P<port>\d+)"),
        "bw-connect-failed",
        "the client could not reach the server at {host}:{port} (TCP)",
    ),
    (
        re.compile(r"No IB devices found|IB device (?P<dev>\S+) not found|Unable to find the Infiniband/RoCE device"),
        "rdma-device-missing",
        "no such RDMA device{dev_part}",
    ),
    (re.compile(r"Port number (?P<port>\d+) state is (?P<state>\w+)"), "roce-link-down", "port {port} is {state}"),
    (
        re.compile(r"Failed to modify QP \d* ?to RTR|Incompatibility issue with GID types"),
        "gid-index-mismatch",
        "the queue pair could not connect (RTR): the GID index does not reach the peer",
    ),
    (
        re.compile(r"Completion with error at (?P<side>client|server)[\s\S]*?Failed status[- ]?(?P<status>[^:]*)"),
        "roce-retry-exceeded",
        "work completions failed at the {side} (status {status}): packets lost on the link",
    ),
)


def classify_failure(text: str) -> BwFailure | None:
    """What a failed run's output says, with its hint id; None when nothing is recognised."""
    for pattern, hint, what in _FAILURES:
        match = pattern.search(text)
        if match:
            fields = {k: (v or "").strip() for k, v in match.groupdict().items()}
            fields["dev_part"] = f" {fields['dev']}" if fields.get("dev") else ""
            return BwFailure(hint, what.format(**fields))
    return None
