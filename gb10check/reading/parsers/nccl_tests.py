"""nccl-tests' output (all_gather_perf, all_reduce_perf...): its result table and its summary.

    #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
    #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
      1073741824     268435456     float     sum      -1    49507   21.69   41.57      0    49613   21.64   41.48      0
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 41.6967

(nccl-tests src/common.cu; all_gather has no redop/root columns; #wrong is N/A without validation).
Before the table, one line per rank says where it runs, as nccl-tests printed it to v2.13 and since v2.17
(src/common.cu, src/util.cu):

    #   Rank  0 Pid  41337 on  spark-a device  0 [0x01] NVIDIA GB10
    #  Rank  0 Group  0 Pid  41337 on  spark-a device  0 [000f:01:00] NVIDIA GB10

The bus bandwidth is what NCCL's own documentation compares across collectives and node counts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gb10check.errors import ParseError
from gb10check.safe_text.redact import redact

__all__ = ["NcclTestResult", "Row", "parse_nccl_test"]

# `OK`/`FAILED` follow the figure when NCCL_TESTS_MIN_BW gave the run a bandwidth to check (src/common.cu)
_AVG = re.compile(r"^# Avg bus bandwidth\s*:\s*(?P<bw>[\d.]+)(?:\s+(?:OK|FAILED))?\s*$", re.MULTILINE)
_BOUNDS = re.compile(r"^# Out of bounds values\s*:\s*(?P<n>\d+)\s+(?P<verdict>\w+)", re.MULTILINE)
_RANK = re.compile(r"^#\s+Rank\s+(?P<rank>\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(?P<host>\S+)\s+device", re.M)
_ROW = re.compile(r"^\s+(?P<size>\d+)\s+(?P<count>\d+)\s+\w+\s+.*$", re.MULTILINE)


@dataclass(frozen=True)
class Row:
    size: int  # bytes
    busbw_out: float  # GB/s, out of place
    busbw_in: float  # GB/s, in place
    wrong: int | None  # results that failed validation (None: not validated)


@dataclass(frozen=True)
class NcclTestResult:
    rows: tuple[Row, ...]
    avg_busbw: float  # GB/s
    out_of_bounds: int
    hosts: tuple[str, ...] = ()  # the host of each rank, in rank order (empty: the output lists none)

    @property
    def peak_busbw(self) -> float:
        return max((max(r.busbw_out, r.busbw_in) for r in self.rows), default=0.0)

    @property
    def wrong(self) -> int:
        return sum(r.wrong or 0 for r in self.rows)


def _row(line: str) -> Row:
    cells = line.split()
    # size count type [redop root] time algbw busbw wrong time algbw busbw wrong: the last 8 are fixed
    out, inplace = cells[-8:-4], cells[-4:]

    def wrong(cell: str) -> int | None:
        return None if cell == "N/A" else int(cell)

    return Row(int(cells[0]), float(out[2]), float(inplace[2]), wrong(out[3]))


def parse_nccl_test(text: str, what: str = "nccl-tests") -> NcclTestResult:
    avg = _AVG.search(text)
    if avg is None:
        raise ParseError(what, "no '# Avg bus bandwidth' line (the run did not finish?)", text)
    rows = []
    for m in _ROW.finditer(text):
        try:
            rows.append(_row(m.group(0)))
        except (ValueError, IndexError) as exc:
            raise ParseError(what, f"a result row that is not nccl-tests' ({redact(str(exc))})", m.group(0)) from exc
    if not rows:
        raise ParseError(what, "no result row", text)
    bounds = _BOUNDS.search(text)
    ranks = {int(m["rank"]): m["host"] for m in _RANK.finditer(text)}
    hosts = tuple(ranks[r] for r in sorted(ranks))
    return NcclTestResult(tuple(rows), float(avg["bw"]), int(bounds["n"]) if bounds else 0, hosts)
