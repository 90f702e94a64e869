"""The process a script starts, over every path through it: its `vllm serve` (or Ray node) and environment.

A script read by gb10check/deployment/shell/walk.py may take several paths (a condition only the start decides: a
file on the node, a command's output). Merged, a value that is the same on every path that runs vLLM is
known; one that differs is Deferred, naming the condition it depends on; an option given on some paths
only is "maybe" given. A path that runs no vLLM (a guard that exits) is left out when another runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gb10check.deployment.launch.vllm_args import RayCommand, VllmCommand, parse_ray, parse_vllm
from gb10check.deployment.shell.state import Ran
from gb10check.deployment.shell.values import Deferred, Value
from gb10check.deployment.shell.walk import Path, Reading
from gb10check.errors import ParseError

__all__ = ["Started", "started"]


@dataclass(frozen=True)
class Started:
    """What a script starts: vLLM and/or a Ray node, the environment vLLM gets, and where it is read."""

    vllm: VllmCommand | None
    ray: RayCommand | None
    env: dict[str, Value]
    ran: Ran | None  # the command that starts it (its line, its script)
    conditions: tuple[str, ...] = ()  # the conditions decided at start the values depend on
    notes: tuple[str, ...] = ()
    maybe: dict[str, str] = field(default_factory=dict)  # an option given on some paths only -> why

    @property
    def role(self) -> str | None:
        if self.vllm is not None:
            return "vllm"
        return self.ray.role if self.ray is not None else None


def _picks(path: Path) -> tuple[list[tuple[Ran, VllmCommand]], list[tuple[Ran, RayCommand]]]:
    vllm, ray = [], []
    for r in path.ran:
        v = parse_vllm(r.argv)
        if v is not None:
            vllm.append((r, v))
            continue
        ray_cmd = parse_ray(r.argv)
        if ray_cmd is not None:
            ray.append((r, ray_cmd))
    return vllm, ray


def started(reading: Reading, what: str) -> Started:
    """The one vLLM (or Ray node) the script starts, merged over its paths; ParseError when a path starts
    more than one vLLM, or none starts anything of the kind."""
    per_path = []
    notes_after: list[str] = []
    for path in reading.paths:
        vllm, ray = _picks(path)
        running = [(r, v) for r, v in vllm if r.background]
        if len(running) > 1 or (running and len(vllm) > len(running)):
            lines = ", ".join(str(r.line) for r, _ in vllm)
            raise ParseError(
                what,
                f"it starts {len(vllm)} `vllm serve` at once (lines {lines}); expected exactly one",
                reading.what,
                hint_ids=("container-script-unreadable",),
            )
        if len(vllm) > 1:  # one after the other: the first is what runs; the next only once it exits
            notes_after.append(
                f"line {vllm[0][0].line} starts `vllm serve`; once it exits, line {vllm[1][0].line} starts another"
            )
            vllm = vllm[:1]
        if vllm or ray:
            per_path.append((path, vllm[0] if vllm else None, ray[-1] if ray else None))
    if not per_path:  # another program (an entrypoint inside the image, a wrapper): what it starts is the start's
        last = next((r for p in reading.paths for r in reversed(p.ran) if not r.background), None)
        said = (
            f"it starts `{' '.join(str(a) for a in last.argv[:3])}` (line {last.line}), not `vllm serve`: what that "
            "starts is decided at start"
            if last is not None
            else "it starts nothing the suite can read"
        )
        return Started(None, None, dict(last.env) if last else {}, last, (), (*reading.notes, said))
    notes = tuple(dict.fromkeys([*reading.notes, *notes_after]))
    if len(per_path) == 1:
        path, v, ray_pick = per_path[0]
        ran = v[0] if v else ray_pick[0] if ray_pick else None
        return Started(
            v[1] if v else None, ray_pick[1] if ray_pick else None, dict(ran.env) if ran else {}, ran, path.taken, notes
        )
    return _merged(per_path, notes)


def _merged(
    per_path: list[tuple[Path, tuple[Ran, VllmCommand] | None, tuple[Ran, RayCommand] | None]], notes: tuple[str, ...]
) -> Started:
    taken = [p.taken for p, _, _ in per_path]
    common = set(taken[0]).intersection(*taken[1:])
    conditions = tuple(dict.fromkeys(t for ts in taken for t in ts if t not in common))
    why = (
        "depends on " + "; ".join(c.rsplit(" ", 1)[0] for c in dict.fromkeys(conditions))
        if conditions
        else "differs by path"
    )
    vllms = [v for _, v, _ in per_path]
    vllm: VllmCommand | None = None
    maybe: dict[str, str] = {}
    if all(v is not None for v in vllms):
        commands = [v[1] for v in vllms if v is not None]
        first = commands[0]
        options: dict[str, Value | None] = {}
        for key in dict.fromkeys(k for c in commands for k in c.options):
            values = [c.options.get(key, _ABSENT) for c in commands]
            if any(v is _ABSENT for v in values):
                maybe[key] = why
                present = [v for v in values if v is not _ABSENT]
                one = present[0]
                options[key] = one if all(v == one for v in present) else Deferred(why, "<decided at start>")  # type: ignore[assignment]
            elif all(v == values[0] for v in values):
                options[key] = values[0]  # type: ignore[assignment]
            else:
                options[key] = Deferred(f"{key} {why}", "<decided at start>")
        model = (
            first.model
            if all(c.model == first.model for c in commands)
            else Deferred(f"the model {why}", "<decided at start>")
        )
        argv = first.argv
        if all(len(c.argv) == len(argv) for c in commands):
            argv = tuple(
                words[0] if all(w == words[0] for w in words) else Deferred(why, "<decided at start>")
                for words in zip(*(c.argv for c in commands), strict=True)
            )
        vllm = VllmCommand(model, options, argv, first.entry, tuple(u for c in commands for u in c.unknown))
    elif any(v is not None for v in vllms):
        maybe["vllm serve"] = why
        vllm = next(v[1] for v in vllms if v is not None)
    rays = [r for _, _, r in per_path]
    ray = next((r[1] for r in rays if r is not None), None)
    rans = [v[0] if v else r[0] for _, v, r in per_path if r is not None or v is not None]  # type: ignore[index]
    env: dict[str, Value] = {}
    for key in dict.fromkeys(k for ran in rans for k in ran.env):
        values = [ran.env.get(key) for ran in rans]
        first_value = values[0]
        same = first_value is not None and all(v == first_value for v in values)
        env[key] = first_value if same and first_value is not None else Deferred(f"{key} {why}", "<decided at start>")  # type: ignore[assignment]
    return Started(vllm, ray, env, rans[0], conditions, notes, maybe)


_ABSENT = object()
