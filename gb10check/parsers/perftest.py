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


@dataclass(frozen=True)
class _Variant:
    pattern: re.Pattern[str]
    hint: str
    what: str  # filled from the pattern's groups


def _v(pattern: str, *, hint: str, what: str) -> _Variant:
    return _Variant(re.compile(pattern), hint, what)


# first match wins: the most specific line of each variant (`hint=`: validated against the catalogue)
_MISSING = r"ib_write_bw: (?:command )?not found|failed to run command .ib_write_bw.: No such file"
_NO_DEVICE = r"No IB devices found|IB device (?P<dev>\S+) not found|Unable to find the Infiniband/RoCE device"
_COMPLETION = r"Completion with error at (?P<side>client|server)[\s\S]*?Failed status[- ]?(?P<status>[^:]*)"
_FAILURES = (
    _v(_MISSING, hint="tool-missing", what="ib_write_bw is not installed (the perftest package)"),
    _v(r"Couldn't listen to port (?P<port>\d+)", hint="bw-port-in-use", what="the server cannot listen on {port}"),
    _v(r"Couldn't connect to (?P<host>[^:\s]+):(?P<port>\d+)", hint="bw-connect-failed",
       what="the client could not reach the server at {host}:{port} (TCP)"),
    _v(_NO_DEVICE, hint="rdma-device-missing", what="no such RDMA device{dev_part}"),
    _v(r"Port number (?P<port>\d+) state is (?P<state>\w+)", hint="roce-link-down", what="port {port} is {state}"),
    _v(r"Failed to modify QP \d* ?to RTR|Incompatibility issue with GID types", hint="gid-index-mismatch",
       what="the queue pair could not connect (RTR): the GID index does not reach the peer"),
    _v(_COMPLETION, hint="roce-retry-exceeded",
       what="work completions failed at the {side} (status {status}): packets lost on the link"),
)  # fmt: skip


def classify_failure(text: str) -> BwFailure | None:
    """What a failed run's output says, with its hint id; None when nothing is recognised."""
    for variant in _FAILURES:
        match = variant.pattern.search(text)
        if match:
            fields = {k: (v or "").strip() for k, v in match.groupdict().items()}
            fields["dev_part"] = f" {fields['dev']}" if fields.get("dev") else ""
            return BwFailure(hint=variant.hint, what=variant.what.format(**fields))
    return None
