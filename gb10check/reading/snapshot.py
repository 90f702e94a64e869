"""The node fact snapshot: many cheap read-only probes in one round trip, each bounded on its own.

A fact is declared once as a `Read` (gb10check/reading/probes.py: name, command, bound, parser); a node's
`Probe`s are those reads' commands for that node. `build_script` turns probes into one POSIX sh
script that runs them concurrently and frames their output by a random boundary; `split_output`
cuts that output back into one CommandResult per probe (both pure). A `Snapshot` holds the
results and answers `fact(READ)`: parsed, or an error that keeps its own hint (missing tool,
refusal, timeout, missing file, unparsable output, output cut), never a pass without evidence.

What one probe may print is bounded on the node, so a flooding tool costs its own checks only: each
output file may grow to PROBE_FILE_LIMIT (`ulimit -f`, SIGXFSZ ignored: the tool gets EFBIG, no core
dump, and the node's disk is safe), and an output larger than PROBE_KEEP is sent as its first and
last halves with a marker saying how many bytes it held; the probe's checks then fail `output-cut`.
"""

from __future__ import annotations

import copy
import re
import secrets
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from gb10check.errors import (
    CommandTimeout,
    GB10Error,
    MissingFile,
    OutputCut,
    ParseError,
    PrivilegeRequired,
    ToolMissing,
    clip,
)
from gb10check.reading.transport import KILL_GRACE, CommandResult, bounded, cut_short

if TYPE_CHECKING:
    from gb10check import inventory as inv

__all__ = [
    "MIB",
    "NO_SUDO",
    "PROBE_FILE_LIMIT",
    "PROBE_KEEP",
    "Probe",
    "Read",
    "Snapshot",
    "T",
    "U",
    "V",
    "Where",
    "bound",
    "build_script",
    "hub_folder",
    "new_boundary",
    "script_timeout",
    "split_output",
]

T = TypeVar("T", covariant=True)
U = TypeVar("U")
V = TypeVar("V")
NO_SUDO = "gb10check: needs root; the session is not root and the inventory sets sudo = false for this node"
# dash: "sh: 1: docker: not found"; bash: "bash: line 1: docker: command not found"
_NOT_FOUND = re.compile(r"(?P<tool>[\w./+-]+): (?:command )?not found")
# sudo -n without a NOPASSWD rule, ufw run as a user, or the inventory forbidding sudo
_REFUSED = re.compile(
    rf"^sudo: (a password is required|a terminal is required)|You need to be root to run this script"
    rf"|{re.escape(NO_SUDO)}",
    re.MULTILINE,
)
# cat: /home/x/.env: No such file or directory; find: '/home/x': No such file or directory
_NO_SUCH_FILE = re.compile(r"(?:^|\s)'?(?P<path>/[^':\n]+)'?: No such file or directory")
MIB = 1024 * 1024
# a probe's stdout or stderr may grow to this on the node (a healthy one is at most a few MB: 4000 lines of a
# container's log), and one larger than PROBE_KEEP is sent as its first and last PROBE_KEEP / 2 bytes
PROBE_FILE_LIMIT = 64 * MIB
PROBE_KEEP = 16 * MIB


@dataclass(frozen=True)
class Where:
    """What a probe's command may depend on: the inventory and the node it runs on."""

    inventory: inv.Inventory
    node: inv.Node

    @property
    def deployment(self) -> inv.Deployment | None:
        return self.inventory.deployment

    @property
    def hub(self) -> str | None:
        """The model's hub folder, when the inventory has a deployment and a service."""
        d, s = self.inventory.deployment, self.inventory.service
        return shlex.quote(hub_folder(d.hf_cache, s.model)) if d and s else None


def hub_folder(hf_cache: str, model: str) -> str:
    """Where the hub keeps a model: <cache>/hub/models--ORG--NAME."""
    return f"{hf_cache.rstrip('/')}/hub/models--{model.replace('/', '--')}"


@dataclass(frozen=True)
class Read(Generic[T]):
    """One fact of a node, declared once: its probe's name, the command for a node (None: does not
    apply there, e.g. no deployment), its parser, the exit statuses its parser reads, its bound."""

    name: str
    command: Callable[[Where], str | None]
    parse: Callable[[str], T]
    accept_rc: tuple[int, ...] = (0,)
    bound: Callable[[inv.Thresholds], float] | None = None  # None: thresholds.command_timeout
    display: str = ""  # how messages show the command, when it is a wrapper (root reads)
    # raises when stderr says what stdout hides (docker's `[]` with the daemon down), before the parser
    check_stderr: Callable[[str], None] | None = None


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
    probe, not their sum: the snapshot can grow without slowing down. The markers are files the
    shell's builtin printf writes beside each probe's output, so one `cat` prints every frame in
    probe order once all are done (a `cat` per stream would cost ~4 processes per probe). Each
    output file is bounded (`ulimit -f`, in POSIX sh's 512-byte blocks); once all probes are done,
    one `find` lists the outputs larger than PROBE_KEEP, and each of those (a flood: none on a
    healthy node) is cut to its head and tail around a marker that says how many bytes it held.
    """
    half = PROBE_KEEP // 2
    cut = shlex.quote(f"{boundary} cut")
    parts = [
        "t=$(mktemp -d) || exit 97",
        "trap 'rm -rf \"$t\"' EXIT",
        f"ulimit -f {PROBE_FILE_LIMIT // 512} 2>/dev/null; trap '' XFSZ",  # inherited: a write past it is EFBIG
    ]
    frames: list[str] = []
    for i, p in enumerate(probes):
        command = bounded(p.command, bound(p, default_timeout))  # the transport's own node-side bound
        begin, stderr, end = (shlex.quote(f"{boundary} {what} {p.name}") for what in ("begin", "stderr", "end"))
        parts.append(
            f"printf '%s\\n' {begin} >\"$t/{i}.a\"; printf '\\n%s\\n' {stderr} >\"$t/{i}.c\"; "
            f'({command} </dev/null >"$t/{i}.b" 2>"$t/{i}.d"; printf \'\\n%s %s\\n\' {end} $? >"$t/{i}.e") &'
        )
        frames.extend(f'"$t/{i}.{part}"' for part in "abcde")
    parts.append("wait")
    parts.append(
        f'for f in $(find "$t" -type f -size +{PROBE_KEEP}c); do n=$(wc -c <"$f"); '
        f'{{ head -c {half} "$f"; printf \'\\n%s %s\\n\' {cut} "$n"; tail -c {half} "$f"; }} >"$f.cut"; '
        'mv -f "$f.cut" "$f"; done'
    )
    parts.append(f"cat {' '.join(frames)} 2>/dev/null")  # a probe's missing end: split_output says cut short
    return "\n".join(parts) + "\n"


def script_timeout(probes: tuple[Probe, ...], default_timeout: float) -> float:
    """The whole script's bound: the slowest probe at its worst, plus the shell's own start."""
    return max((bound(p, default_timeout) for p in probes), default=0.0) + KILL_GRACE + 5.0


def _strip_added_newline(text: str) -> str:
    # build_script adds one "\n" after each stream so a marker always starts a line
    return text[:-1] if text.endswith("\n") else text


def _uncut(text: str, boundary: str, stream: str) -> tuple[str, tuple[tuple[str, int], ...]]:
    """A stream the node cut (a marker between its head and tail): the text with a visible note in its
    place, and (stream, bytes the probe printed)."""
    marker = re.search(rf"\n{re.escape(boundary)} cut (?P<n>\d+)\n", text)
    if marker is None:
        return text, ()
    printed = int(marker["n"])
    note = f"\n[gb10check: output cut here; the probe printed {printed} bytes]\n"
    return text[: marker.start()] + note + text[marker.end() :], ((stream, printed),)


def split_output(
    stdout: str, probes: tuple[Probe, ...], boundary: str, total_duration: float
) -> dict[str, CommandResult]:
    """Per-probe results; a probe that left no end marker (the script was cut short) is timed out.
    One pass over the markers (an output of tens of MB costs its length, not its length per probe)."""
    marks = re.compile(rf"^{re.escape(boundary)} (?P<what>begin|stderr|end) (?P<name>\S+)(?: (?P<rc>\d+))?$", re.M)
    found = list(marks.finditer(stdout))
    frames: dict[str, dict[str, re.Match[str]]] = {}
    for i, m in enumerate(found):
        frame = frames.setdefault(m["name"], {})
        frame.setdefault(m["what"], m)
        frame.setdefault(f"next_after_{m['what']}", found[i + 1] if i + 1 < len(found) else m)
    results: dict[str, CommandResult] = {}
    for p in probes:
        frame = frames.get(p.name, {})
        begin, err, end = frame.get("begin"), frame.get("stderr"), frame.get("end")
        if begin is not None and err is not None and end is not None and begin.end() < err.start() < end.start():
            rc = int(end["rc"] or 0)
            out, out_cut = _uncut(_strip_added_newline(stdout[begin.end() + 1 : err.start()]), boundary, "stdout")
            text, err_cut = _uncut(_strip_added_newline(stdout[err.end() + 1 : end.start()]), boundary, "stderr")
            results[p.name] = CommandResult(
                p.shown, rc, out, text, total_duration, timed_out=cut_short(rc), cut=out_cut + err_cut
            )
            continue
        partial = ""
        if begin is not None:
            after = frame["next_after_begin"]
            partial = stdout[begin.end() + 1 : after.start() if after is not begin else len(stdout)]
        results[p.name] = CommandResult(p.shown, None, partial, "", total_duration, timed_out=True)
    return results


@dataclass(frozen=True)
class Snapshot:
    node: str
    results: dict[str, CommandResult]
    error: GB10Error | None = None  # set when the node could not be asked at all
    # facts derived from it, computed once (the compose, read for each of 37 rules): results only
    _memo: dict[str, object] = field(default_factory=dict, compare=False, repr=False)

    def derived(self, key: str, compute: Callable[[], U]) -> U:
        """`compute()` once per snapshot (it is immutable); an error is raised afresh each time."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]  # type: ignore[return-value]

    def raw(self, read: Read[object] | str) -> CommandResult:
        """The probe's result; raises the node's transport error when there is no evidence."""
        if self.error is not None:
            # a fresh copy per check: re-raising one stored exception grows its traceback with every check
            raise copy.copy(self.error) from None
        return self.results[read if isinstance(read, str) else read.name]

    def ran(self, read: Read[object] | str) -> CommandResult:
        """The probe's result, raising when its tool is not there (no evidence either way).
        A timeout is returned: some checks judge it themselves."""
        res = self.raw(read)
        if res.rc == 127:  # sh: the command was not found
            named = _NOT_FOUND.search(res.stderr)
            tool = f"`{named['tool']}` is" if named else "a tool it runs is"
            raise ToolMissing(
                f"{self.node}: {tool} not installed or not on PATH (needed for `{clip(res.command, 120)}`): "
                f"{clip(res.stderr.strip(), 200)}"
            )
        if res.cut and (res.cut[0][0] == "stdout" or not res.stdout.strip()):  # what a parser would read
            stream, printed = res.cut[0]
            much = (
                f"more than {PROBE_FILE_LIMIT // MIB} MiB on {stream} (the node stopped it there)"
                if printed >= PROBE_FILE_LIMIT
                else f"{printed / MIB:.1f} MiB on {stream} ({printed} bytes)"
            )
            stopped = f", still printing when its {res.duration:.0f} s bound ended it" if res.timed_out else ""
            raise OutputCut(
                f"{self.node}: `{clip(res.command, 120)}` printed {much}{stopped}: output cut to its "
                f"first and last {PROBE_KEEP // 2 // MIB} MiB, nothing whole to judge",
                # the hint's commands run it by hand: the probe's own command, when it is not a wrapper's name
                context={"command": res.command} if isinstance(read, Read) and not read.display else None,
            )
        return res

    @overload
    def fact(self, read: Read[U]) -> U: ...

    @overload
    def fact(self, read: Read[object], parse: Callable[[str], V]) -> V: ...

    def fact(self, read: Read[Any], parse: Callable[[str], Any] | None = None) -> Any:
        if parse is None:  # the declared parser: once per snapshot
            return self.derived(f"fact:{read.name}", lambda: self._parse(read, read.parse))
        return self._parse(read, parse)

    def _parse(self, read: Read[Any], parse: Callable[[str], Any]) -> Any:
        """The fact, parsed by its declared parser (or `parse`, for a reading that needs more than the
        text, like the compose with the node's .env). Timeouts, missing tools, refusals, missing files
        and unexpected exits raise with their own hints, never pass."""
        res = self.ran(read)
        if res.timed_out:
            raise CommandTimeout(
                f"{self.node}: `{res.command}` timed out after {res.duration:.1f} s",
                context={"command": res.command},
            )
        if res.rc != 0 and _REFUSED.search(res.stderr + res.stdout):
            raise PrivilegeRequired(
                f"{self.node}: `{res.command}` needs root and was refused: {clip(res.stderr.strip(), 200)!r}; "
                "run the suite as root there, or allow `sudo -n` (sudo = true and a NOPASSWD rule)"
            )
        if res.rc != 0 and not res.stdout.strip() and "No such file or directory" in res.stderr:
            named = _NO_SUCH_FILE.search(res.stderr)
            raise MissingFile(
                f"{self.node}: {clip(res.stderr.strip())}",
                context={"node": self.node, **({"path": named["path"]} if named else {})},
            )
        if read.check_stderr is not None:
            read.check_stderr(res.stderr)
        text = res.stdout if res.stdout.strip() else res.stdout + res.stderr
        try:
            return parse(text)
        except ParseError as exc:
            if res.rc not in read.accept_rc:
                detail = f"exit status {res.rc}, stderr {clip(res.stderr.strip(), 200)!r}"
                raise ParseError(exc.what, detail, text, hint_ids=exc.hint_ids) from exc
            raise
