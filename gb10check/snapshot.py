"""The node fact snapshot: many cheap read-only probes in one round trip, each bounded on its own.

`build_script` turns probes into one POSIX sh script that runs them concurrently and frames
their output by a random boundary; `split_output` cuts that output back into one CommandResult per probe. Both are pure.
"""

from __future__ import annotations

import re
import secrets
import shlex
from dataclasses import dataclass

from gb10check.transport import KILL_GRACE, CommandResult


@dataclass(frozen=True)
class Probe:
    name: str
    command: str
    timeout: float | None = None  # None: the inventory's thresholds.command_timeout
    display: str = ""  # how messages show it, when the command is a wrapper (root reads); "": the command

    @property
    def shown(self) -> str:
        return self.display or self.command


def new_boundary() -> str:
    return "gb10-" + secrets.token_hex(8)


def bound(probe: Probe, default: float) -> float:
    return probe.timeout if probe.timeout is not None else default


def build_script(probes: tuple[Probe, ...], boundary: str, default_timeout: float) -> str:
    """One sh script: every probe at once, then each one's stdout, stderr and exit status, framed.

    The probes run concurrently (each into its own files) so the round trip costs the slowest
    probe, not their sum: the snapshot can grow without slowing down. The frames are printed in
    probe order once all are done.
    """
    parts = ["t=$(mktemp -d) || exit 97", "trap 'rm -rf \"$t\"' EXIT"]
    for i, p in enumerate(probes):
        bounded = f"timeout -k {KILL_GRACE:g} {bound(p, default_timeout):g} sh -c {shlex.quote(p.command)}"
        parts.append(f'({bounded} </dev/null >"$t/{i}.out" 2>"$t/{i}.err"; echo $? >"$t/{i}.rc") &')
    parts.append("wait")
    for i, p in enumerate(probes):
        parts.append(
            f'echo "{boundary} begin {p.name}"; cat "$t/{i}.out"; echo; '
            f'echo "{boundary} stderr {p.name}"; cat "$t/{i}.err"; echo; '
            f'echo "{boundary} end {p.name} $(cat "$t/{i}.rc")"'
        )
    return "\n".join(parts) + "\n"


def script_timeout(probes: tuple[Probe, ...], default_timeout: float) -> float:
    """The whole script's bound: the slowest probe at its worst, plus the shell's own start."""
    return max((bound(p, default_timeout) for p in probes), default=0.0) + KILL_GRACE + 5.0


def _strip_added_newline(text: str) -> str:
    # build_script adds one "\n" after each stream so a marker always starts a line
    return text[:-1] if text.endswith("\n") else text


def split_output(
    stdout: str, probes: tuple[Probe, ...], boundary: str, total_duration: float
) -> dict[str, CommandResult]:
    """Per-probe results; a probe that left no end marker (the script was cut short) is timed out."""
    results: dict[str, CommandResult] = {}
    b = re.escape(boundary)
    for p in probes:
        n = re.escape(p.name)
        match = re.search(
            rf"^{b} begin {n}\n(?P<out>.*?)^{b} stderr {n}\n(?P<err>.*?)^{b} end {n} (?P<rc>\d+)$",
            stdout,
            re.DOTALL | re.MULTILINE,
        )
        if match:
            rc = int(match["rc"])
            results[p.name] = CommandResult(
                p.shown,
                rc,
                _strip_added_newline(match["out"]),
                _strip_added_newline(match["err"]),
                total_duration,
                timed_out=rc in (124, 137),
            )
            continue
        partial = re.search(rf"^{b} begin {n}\n(?P<out>.*?)(?=^{b} |\Z)", stdout, re.DOTALL | re.MULTILINE)
        results[p.name] = CommandResult(
            p.shown, None, partial["out"] if partial else "", "", total_duration, timed_out=True
        )
    return results
