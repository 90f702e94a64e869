"""The state of one path through a script as it is read: its variables, functions, arguments, the files
it wrote, the commands it ran, and the conditions decided at start that it took to get there."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gb10check.deployment.shell.values import Value

__all__ = ["Array", "Assoc", "Ran", "State", "Var"]

Array = list[Value]
Assoc = dict[str, Value]


@dataclass(frozen=True)
class Var:
    value: Value | Array | Assoc
    exported: bool = False
    assigned: bool = True  # False: `export NAME` before NAME has a value (unset, and not in the environment)

    @property
    def scalar(self) -> Value:
        """The value as `$NAME` reads it (an array's element 0)."""
        if isinstance(self.value, list):
            return self.value[0] if self.value else ""
        if isinstance(self.value, dict):
            return self.value.get("0", "")
        return self.value


@dataclass(frozen=True)
class Ran:
    """A command the script runs (not a builtin it evaluates itself): its words and its environment."""

    argv: tuple[Value, ...]
    env: dict[str, Value]  # what the command's process gets: the exported variables and its own NAME=value
    line: int
    script: str  # which script (its `what`) the command is in
    taken: tuple[str, ...] = ()  # the conditions decided at start taken on the way to it
    background: bool = False
    stdin: Value | None = None  # a here-document or here-string it reads
    cwd: Value = ""
    via: tuple[str, ...] = ()  # what it ran under: exec, env, nohup, sudo, timeout, ...

    @property
    def name(self) -> str:
        first = self.argv[0] if self.argv else ""
        return first.rsplit("/", 1)[-1] if isinstance(first, str) else ""


@dataclass
class State:
    """One path's state. Copied where the path forks; Var is frozen, so a copy of the dicts is enough."""

    globals: dict[str, Var]
    positional: list[Value]
    arg0: str
    frames: list[dict[str, Var]] = field(default_factory=list)  # function calls' locals, innermost last
    functions: dict[str, object] = field(default_factory=dict)
    files: dict[str, Value] = field(default_factory=dict)  # what the script wrote, by path
    cwd: Value = ""
    ran: list[Ran] = field(default_factory=list)
    taken: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was read but is decided at start
    status: int | None = 0  # $? (None: decided at start)
    flow: str | None = None  # None, or how the path stops going on: exit, return, break, continue, exec
    flow_n: int = 1
    opaque: str | None = None  # after a file it could not read was sourced: unset names may be set there
    allexport: bool = False
    subshell: int = 0
    optind: int = 1
    capture: list[Value] | None = None  # inside $(...): what it prints, else None
    piped: Value | None = None  # a pipeline stage's standard input: what the stage before it printed
    output: Value | None = None  # what the builtin just run printed (for its `> FILE`)

    def copy(self) -> State:
        return replace(
            self,
            globals=dict(self.globals),
            positional=list(self.positional),
            frames=[dict(f) for f in self.frames],
            functions=dict(self.functions),
            files=dict(self.files),
            ran=list(self.ran),
            taken=list(self.taken),
            notes=list(self.notes),
            capture=None if self.capture is None else list(self.capture),
        )

    # -- variables ----------------------------------------------------------------------------------
    def get(self, name: str) -> Var | None:
        for frame in reversed(self.frames):
            if name in frame:
                return frame[name]
        return self.globals.get(name)

    def set(self, name: str, value: Value | Array | Assoc, *, export: bool | None = None, local: bool = False) -> None:
        scope = self._scope(name, local)
        old = scope.get(name)
        exported = (old.exported if old else False) if export is None else export
        if self.allexport and export is None:
            exported = True
        scope[name] = Var(value, exported)

    def export(self, name: str) -> None:
        scope = self._scope(name, False)
        old = scope.get(name)
        scope[name] = Var(old.value, True, old.assigned) if old else Var("", True, assigned=False)

    def unset(self, name: str) -> None:
        for frame in reversed(self.frames):
            if name in frame:
                del frame[name]
                return
        self.globals.pop(name, None)

    def _scope(self, name: str, local: bool) -> dict[str, Var]:
        if local and self.frames:
            return self.frames[-1]
        for frame in reversed(self.frames):
            if name in frame:
                return frame
        return self.globals

    def environment(self) -> dict[str, Value]:
        """What a command started now gets: every exported variable with a value (arrays are not exported)."""
        out: dict[str, Value] = {}
        for scope in (self.globals, *self.frames):
            for name, var in scope.items():
                if var.exported and var.assigned and not isinstance(var.value, (list, dict)):
                    out[name] = var.value
                elif name in out and not var.exported:
                    out.pop(name)
        return out
