"""Which row of the troubleshooting table applies when the API fails: what each node's vLLM
container log shows (the catalogue's symptom patterns, the known noise left out), added to the
API's failure; and how an HTTP status reads (a 5xx is the server failing, a 401 the key)."""

from __future__ import annotations

import copy
from dataclasses import dataclass

from gb10check import probes
from gb10check.errors import GB10Error, ServiceError, clip
from gb10check.facts import container
from gb10check.hints import Catalogue
from gb10check.parsers.vllm_log import meaningful_text
from gb10check.redact import redact
from gb10check.snapshot import Snapshot
from gb10check.verdict import Evidence

IGNORED = ("service-unreachable",)  # the API being down is the question, not an answer


@dataclass(frozen=True)
class Finding:
    node: str
    hint: str
    line: str  # the log line that shows it (masked), or the container's state
    from_log: bool = True  # False: the container's state (it exited), not a line of its log


def log_findings(snapshots: dict[str, Snapshot], catalogue: Catalogue) -> list[Finding]:
    """Per node, the catalogue's symptoms in its container log, each with the line that shows it."""
    out = []
    for name, snap in snapshots.items():
        try:
            c = container(snap)
            lines = snap.fact(probes.DOCKER_LOGS) if c is not None else []
        except GB10Error:
            continue  # an unreachable node, an unreadable log: their own checks say so
        for hint in catalogue.match(meaningful_text(lines)):
            if hint.id not in IGNORED:
                line = next((ln.text for ln in lines if any(p.search(ln.text) for p in hint.symptoms)), "")
                out.append(Finding(name, hint.id, redact(line.strip())))  # whole: a check may cut it
        if c is not None and not c.running:  # after what its log says: the why comes before the what
            out.append(Finding(name, "container-exited", f"its container {c.status} (exit {c.exit_code})", False))
    return out


def explain(error: ServiceError, findings: list[Finding]) -> ServiceError:
    """The API's failure with what the logs say: their hints first (the row that applies)."""
    if not findings:
        return copy.copy(error)
    said = "; ".join(
        f"{f.node}'s log shows [{f.hint}]: {clip(f.line, 160)}" if f.from_log else f"on {f.node} [{f.hint}] {f.line}"
        for f in findings
    )
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
