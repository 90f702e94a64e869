"""Which row of the troubleshooting table applies when the API fails: what each node's vLLM
container log shows (the catalogue's symptom patterns, the known noise left out), added to the
API's failure; how an HTTP status reads (a 5xx is the server failing, a 401 the key); and how a
finish_reason reads (`length`: the answer was cut short, whatever else it shows)."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from gb10check.errors import GB10Error, ServiceError, clip
from gb10check.judging.hints import Catalogue
from gb10check.judging.verdict import Evidence
from gb10check.reading import probes
from gb10check.reading.facts import container
from gb10check.reading.parsers.vllm_log import (
    LogLine,
    Reached,
    Stop,
    connected,
    connected_when_timed_out,
    meaningful_text,
    serving_since,
    stops,
    tuning,
)
from gb10check.reading.snapshot import Snapshot
from gb10check.safe_text.redact import redact
from gb10check.service.asks import Ask

__all__ = [
    "CONNECTED",
    "IGNORED",
    "STARTING",
    "STATUS_HINTS",
    "TUNING",
    "Finding",
    "by_phase",
    "earliest_wedged_first",
    "expect_answered",
    "expect_finished",
    "explain",
    "findings_in",
    "log_findings",
    "startup_findings",
    "stopped",
]

# the API being down is the question, not an answer; command-timeout is the suite's own command that did
# not finish ("timed out after" in its message): a process's own timeouts in its log have rows of their own
IGNORED = ("service-unreachable", "command-timeout")


@dataclass(frozen=True)
class Finding:
    node: str
    hint: str
    line: str  # the log line that shows it (masked), or the container's state
    from_log: bool = True  # False: the container's state (it exited), not a line of its log
    index: int | None = None  # where in the log the line is (its first showing)
    at: datetime | None = None  # when the node logged it (Docker's timestamp)


def findings_in(node: str, lines: list[LogLine], catalogue: Catalogue) -> list[Finding]:
    """The catalogue's symptoms in one node's container log, each with the first line that shows it."""
    out = []
    for hint in catalogue.match(meaningful_text(lines)):
        if hint.id not in IGNORED:
            index = next((i for i, ln in enumerate(lines) if any(p.search(ln.text) for p in hint.symptoms)), None)
            line = redact(lines[index].text.strip()) if index is not None else ""  # whole: a check may cut it
            at = lines[index].at if index is not None else None
            out.append(Finding(node, by_phase(hint.id, lines, index), line, True, index, at))
    return out


# A collective that timed out while the rank was still starting is the load skew the distributed timeout
# must cover (the faster ranks wait in the first collective while a slower one loads its weights); once
# the rank served, a rank stopped.
STARTING = {"rank-wedged": "distributed-timeout-short"}
# A Gloo or c10d timeout once the ranks had connected is no address family's and no firewall's: it came at
# the distributed timeout's bound, while a rank was loading (the skew) or after one stopped.
CONNECTED = {"gloo-ipv6-timeout": ("distributed-timeout-short", "rank-wedged")}
_TIMEOUT = re.compile(r"timed out|timeout", re.IGNORECASE)  # not a connection refused (connectFullMesh failed)
# vLLM's shared-memory broadcast waiting on a worker (shm_broadcast.py) while the start compiles or tunes is
# that work, not a wedged rank (vLLM's own message names compilation as a cause)
TUNING = {"shm-broadcast-stall": "startup-retuning"}


def by_phase(hint_id: str, lines: list[LogLine], index: int | None) -> str:
    """The hint of a finding at `index` of the log, by whether the rank had connected and started then."""
    if index is None:
        return hint_id
    started = index >= serving_since(lines)
    if hint_id in STARTING and not started:
        return STARTING[hint_id]
    if (
        hint_id in CONNECTED
        and _TIMEOUT.search(lines[index].text)
        and (connected(lines[:index]) or connected_when_timed_out(lines[index]))
    ):
        return CONNECTED[hint_id][started]
    if hint_id in TUNING and not started and tuning(lines[: index + 1]) is not None:
        return TUNING[hint_id]
    return hint_id


def log_findings(snapshots: dict[str, Snapshot], catalogue: Catalogue) -> list[Finding]:
    """Per node, the catalogue's symptoms in its container log, each with the line that shows it."""
    out = []
    for name, snap in snapshots.items():
        try:
            c = container(snap)
            lines = snap.fact(probes.DOCKER_LOGS) if c is not None else []
        except GB10Error:
            continue  # an unreachable node, an unreadable log: their own checks say so
        out += findings_in(name, lines, catalogue)
        if c is not None and not c.running:  # after what its log says: the why comes before the what
            out.append(Finding(name, "container-exited", f"its container {c.status} (exit {c.exit_code})", False))
    return earliest_wedged_first(out)


def earliest_wedged_first(findings: list[Finding]) -> list[Finding]:
    """The ranks' timeouts (rank-wedged) in the order they came, the rank that stopped first first, each in
    a place a timeout held (the other findings keep theirs)."""
    places = [i for i, f in enumerate(findings) if f.hint == "rank-wedged"]
    far = datetime.max.replace(tzinfo=UTC)
    ordered = sorted((findings[i] for i in places), key=lambda f: f.at or far)
    out = list(findings)
    for i, f in zip(places, ordered, strict=True):
        out[i] = f
    return out


def stopped(snapshots: dict[str, Snapshot]) -> list[tuple[Stop, str]]:
    """Each node's first collective or RPC timeout since its rank started, (stop, node), the earliest first
    by Docker's timestamps (a stop without one last; ties in the snapshots' order, the ranks')."""
    out = []
    for name, snap in snapshots.items():
        try:
            lines = snap.fact(probes.DOCKER_LOGS) if container(snap) is not None else []
        except GB10Error:
            continue  # an unreachable node, an unreadable log: their own checks say so
        since = serving_since(lines)
        first = next((s for s in stops(lines) if s.index >= since), None)
        if first is not None:
            out.append((first, name))
    far = datetime.max.replace(tzinfo=UTC)
    return sorted(out, key=lambda sn: sn[0].at or far)


def startup_findings(findings: list[Finding], node: str, reached: list[Reached], last: str) -> list[Finding]:
    """What the node's log showed while it started: up to the line where it reached its start's `last`
    milestone (what comes after is the log check's, not the start's verdict), or all of it if it never did."""
    end = next((r.index for r in reached if r.milestone == last), None)
    return [f for f in findings if f.node == node and f.from_log and (end is None or f.index is None or f.index <= end)]


def explain(error: ServiceError, findings: list[Finding]) -> ServiceError:
    """The API's failure with what the logs say: their hints first (the row that applies)."""
    if not findings:
        return copy.copy(error)
    # the ranks' timeouts: the first one's line (the rank to look at); the others waited on it, counted
    wedged = [f for f in findings if f.hint == "rank-wedged"]
    shown = [f for f in findings if f.hint != "rank-wedged" or f is wedged[0]]
    said = "; ".join(
        f"{f.node}'s log shows [{f.hint}]: {clip(f.line, 160)}" if f.from_log else f"on {f.node} [{f.hint}] {f.line}"
        for f in shown
    ) + (f" (the first of {len(wedged)} ranks' timeouts: the others waited on it)" if len(wedged) > 1 else "")
    ids = tuple(dict.fromkeys((*(f.hint for f in findings), *error.hint_ids)))
    return ServiceError(f"{error}; {said}", hint_ids=ids, context=error.context)


# what an HTTP error of the API means, whatever the check asked (vLLM answers 404 only for a model it
# does not serve); other statuses are the check's own to diagnose (a 400 for tool calling, say)
STATUS_HINTS = {401: "api-key-rejected", 404: "model-not-registered"}


def expect_answered(evidence: Evidence, status: int, error: str, what: str) -> None:
    """HTTP 200, else the server's own words; a 5xx is the server failing, a 401 the API key, a 404 the
    served model's name: not the check's own diagnosis."""
    hint = "api-server-error" if status >= 500 else STATUS_HINTS.get(status)
    hints = (hint,) if hint else ()
    evidence.expect(
        status == 200,
        what=what,
        expected="HTTP 200",
        found="HTTP 200" if status == 200 else f"HTTP {status}: {error or 'no message'}",
        hints=hints,
    )


def expect_finished(evidence: Evidence, finish_reason: str | None, usage: dict[str, Any] | None, ask: Ask) -> None:
    """finish_reason `length` is judged before what the answer says: vLLM stopped at max_tokens or the
    context's end, so the answer lacks its end (cut in its reasoning, vLLM before 0.17 returns the raw
    <think> block as content, 0.17 and later reasoning with no content: no parser is missing)."""
    used = (usage or {}).get("completion_tokens")
    used = used if isinstance(used, int) else None
    if used is None:
        why = "the server did not say how many tokens it generated"
    elif used >= ask.max_tokens:
        why = (
            f"it used all {ask.max_tokens} tokens the suite asked for at most: the model does not come to an end "
            "(a healthy one answers these in a few hundred; one that loops points at its weights or quantization)"
        )
    else:
        why = (
            f"the server stopped it at {used} tokens, below the {ask.max_tokens} asked: the context ends there "
            "(--max-model-len) or the server caps output tokens (max_new_tokens of --override-generation-config "
            "or of the model's generation_config.json)"
        )
    evidence.expect(
        finish_reason != "length",
        what=f"finish_reason ({ask.prompt!r}{', streamed' if ask.stream else ''})",
        expected=f"the answer finished within max_tokens {ask.max_tokens} (stop, or tool_calls)",
        found=f"length: cut short after {used if used is not None else 'an unreported number of'} completion tokens"
        if finish_reason == "length"
        else str(finish_reason),
        detail=why,
        hints=("answer-cut-short",),
    )
