"""perftest's `ib_write_bw`: the result table in both units, and what its error lines mean. Pure.

Formats from perftest's source (perftest_parameters.h RESULT_FMT / RESULT_FMT_G, the error strings
of perftest_communication.c and perftest_resources.c; selftests/data/SOURCES.md): 24.01 prints
`BW average[MB/sec]` (MiB, 2^20 bytes, despite the label), 24.07 and later `[MiB/sec]`, and
`--report_gbits` `[Gb/sec]` (10^9 bits). A completion error is judged by its status, as libibverbs
names it (each its own meaning and hint; a flush only when nothing else failed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gb10check.errors import ParseError

__all__ = [
    "GBITS_PER_MIB",
    "WC_STATUS",
    "WR_FLUSH_ERR",
    "BwFailure",
    "BwResult",
    "classify_failure",
    "parse_bw",
    "wc_status",
]

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


# Work-completion statuses as libibverbs names them (enum ibv_wc_status in verbs.h, ibv_wc_status_str() in
# enum_strs.c; selftests/data/SOURCES.md): perftest up to 25.10 prints the number only, 26.01 on the text too.
WC_STATUS = (
    ("IBV_WC_SUCCESS", "success"),
    ("IBV_WC_LOC_LEN_ERR", "local length error"),
    ("IBV_WC_LOC_QP_OP_ERR", "local QP operation error"),
    ("IBV_WC_LOC_EEC_OP_ERR", "local EE context operation error"),
    ("IBV_WC_LOC_PROT_ERR", "local protection error"),
    ("IBV_WC_WR_FLUSH_ERR", "Work Request Flushed Error"),
    ("IBV_WC_MW_BIND_ERR", "memory management operation error"),
    ("IBV_WC_BAD_RESP_ERR", "bad response error"),
    ("IBV_WC_LOC_ACCESS_ERR", "local access error"),
    ("IBV_WC_REM_INV_REQ_ERR", "remote invalid request error"),
    ("IBV_WC_REM_ACCESS_ERR", "remote access error"),
    ("IBV_WC_REM_OP_ERR", "remote operation error"),
    ("IBV_WC_RETRY_EXC_ERR", "transport retry counter exceeded"),
    ("IBV_WC_RNR_RETRY_EXC_ERR", "RNR retry counter exceeded"),
    ("IBV_WC_LOC_RDD_VIOL_ERR", "local RDD violation error"),
    ("IBV_WC_REM_INV_RD_REQ_ERR", "remote invalid RD request"),
    ("IBV_WC_REM_ABORT_ERR", "aborted error"),
    ("IBV_WC_INV_EECN_ERR", "invalid EE context number"),
    ("IBV_WC_INV_EEC_STATE_ERR", "invalid EE context state"),
    ("IBV_WC_FATAL_ERR", "fatal error"),
    ("IBV_WC_RESP_TIMEOUT_ERR", "response timeout error"),
    ("IBV_WC_GENERAL_ERR", "general error"),
    ("IBV_WC_TM_ERR", "TM error"),
    ("IBV_WC_TM_RNDV_INCOMPLETE", "TM software rendezvous"),
)
WR_FLUSH_ERR = 5  # a flush follows an earlier error: never the cause while another status is there


@dataclass(frozen=True)
class _Status:
    hint: str
    means: str  # what the status says about this run, in the operator's terms


# each status its own meaning and advice; any other status: a fault of the device, driver or program
_STATUS_MEANS = {
    12: _Status(hint="roce-retry-exceeded", means="the peer never acknowledged the writes (packets lost on the link)"),
    13: _Status(hint="roce-rnr-retry-exceeded",
                means="the peer had no receive ready, retry after retry (its process stalled or stopped reading)"),
    10: _Status(hint="rdma-remote-access-error",
                means="the peer refused the write into its memory (the two ends disagree on the buffer)"),
    11: _Status(hint="rdma-remote-operation-error",
                means="the peer's queue pair could not carry out the request (a fault on the peer's side)"),
    WR_FLUSH_ERR: _Status(hint="rdma-wr-flushed",
                          means="the queue pair had already failed (the cause is an earlier error, on either end)"),
}  # fmt: skip
_OTHER_STATUS = _Status(
    hint="rdma-completion-error",
    means="the RDMA device failed the work request (this node's adapter, driver or firmware)",
)

# first match wins: the most specific line of each variant (`hint=`: validated against the catalogue)
_MISSING = r"ib_write_bw: (?:command )?not found|failed to run command .ib_write_bw.: No such file"
_NO_DEVICE = r"No IB devices found|IB device (?P<dev>\S+) not found|Unable to find the Infiniband/RoCE device"
_FAILURES = (
    _v(_MISSING, hint="tool-missing", what="ib_write_bw is not installed (the perftest package)"),
    _v(r"Couldn't listen to port (?P<port>\d+)", hint="bw-port-in-use", what="the server cannot listen on {port}"),
    _v(r"Couldn't connect to (?P<host>[^:\s]+):(?P<port>\d+)", hint="bw-connect-failed",
       what="the client could not reach the server at {host}:{port} (TCP)"),
    _v(_NO_DEVICE, hint="rdma-device-missing", what="no such RDMA device{dev_part}"),
    _v(r"Port number (?P<port>\d+) state is (?P<state>\w+)", hint="roce-link-down", what="port {port} is {state}"),
    _v(r"Failed to modify QP \d* ?to RTR|Incompatibility issue with GID types", hint="gid-index-mismatch",
       what="the queue pair could not connect (RTR): the GID index does not reach the peer"),
)  # fmt: skip
# perftest's three layouts: `Failed status 12: wr_id` (to 25.07), `Failed status 12: qp_num 1 wr_id` (25.10),
# `Failed status-transport retry counter exceeded (12): wr_id` (26.01 on)
_COMPLETION = re.compile(
    r"Completion with error at (?P<side>client|server)\s+Failed status(?: (?P<number>\d+)|-[^\n]*? \((?P<code>\d+)\)):"
)


def wc_status(code: int) -> str:
    """`12 IBV_WC_RETRY_EXC_ERR (transport retry counter exceeded)`, as libibverbs names it."""
    name, text = WC_STATUS[code] if 0 <= code < len(WC_STATUS) else ("unknown", "not a status libibverbs knows")
    return f"{code} {name} ({text})"


def _completion_failure(text: str) -> BwFailure | None:
    """The run's completion error: the first that is not a flush (a flush follows another error)."""
    errors = [(m["side"], int(m["number"] or m["code"])) for m in _COMPLETION.finditer(text)]
    if not errors:
        return None
    side, code = next((e for e in errors if e[1] != WR_FLUSH_ERR), errors[0])
    status = _STATUS_MEANS.get(code, _OTHER_STATUS)
    return BwFailure(
        status.hint, f"work completions failed at the {side} with status {wc_status(code)}: {status.means}"
    )


def classify_failure(text: str) -> BwFailure | None:
    """What a failed run's output says, with its hint id; None when nothing is recognised."""
    for variant in _FAILURES:
        match = variant.pattern.search(text)
        if match:
            fields = {k: (v or "").strip() for k, v in match.groupdict().items()}
            fields["dev_part"] = f" {fields['dev']}" if fields.get("dev") else ""
            return BwFailure(hint=variant.hint, what=variant.what.format(**fields))
    return _completion_failure(text)
