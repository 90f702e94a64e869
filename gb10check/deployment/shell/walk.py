"""Reading a script as bash would run it, without running anything: every path through it.

The reader walks mvdan/sh's tree (gb10check/deployment/shell/syntax.py) with the environment the script gets:
assignments, exports, functions and their locals, `case`, `if`, loops over known words and loops whose
condition it can evaluate (argument parsing with `shift`, `getopts`), `source` and `eval` of text it has,
`bash -c`, `exec`, `exit`, here-documents and the files the script writes itself, arithmetic, and the
command substitutions it can evaluate (echo, printf, basename, dirname, cat of a known file). Commands
it does not evaluate itself (docker, ssh, vllm, ray...) are recorded as run, with their words and
environment, and assumed to succeed: the reading is of what the script starts when it works. A condition
only the start decides (a file on the node, a command's output) forks the path; a value only the start
decides stays Deferred, named with its line. Under `sh -c` (dash in Debian- and Ubuntu-based images)
bash's own syntax does what dash does with it, and the path says so.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from gb10check.deployment.shell import patterns, syntax
from gb10check.deployment.shell.expand import Expander, clip, join
from gb10check.deployment.shell.state import Ran, State, Var
from gb10check.deployment.shell.syntax import Node, Script, line
from gb10check.deployment.shell.values import Deferred, Value
from gb10check.errors import ParseError
from gb10check.safe_text.redact import redact

__all__ = [
    "BUILTINS",
    "MAX_DEPTH",
    "MAX_ITERATIONS",
    "MAX_PATHS",
    "OUTPUT_BUILTINS",
    "POSIX_SHELLS",
    "QUERIES",
    "SHELLS",
    "WRAPPERS",
    "Files",
    "Path",
    "Reader",
    "Reading",
    "Unreadable",
    "grep_known",
    "ifs_fields",
    "printf",
    "read",
    "test_words",
    "unwrap",
]

MAX_PATHS = 64  # paths followed through conditions only the start decides; past it, the first branch is taken
MAX_ITERATIONS = 1000  # of one loop
MAX_DEPTH = 32  # functions, eval, source and bash -c within each other
POSIX_SHELLS = frozenset({"sh", "dash", "ash"})
SHELLS = frozenset({"sh", "bash", "dash", "ash", "ksh", "zsh"})
# what a command runs under: its words up to the command it starts (their options' values included)
WRAPPERS = {
    "nohup": set(),
    "setsid": set(),
    "stdbuf": set(),
    "nice": {"-n", "--adjustment"},
    "timeout": {"-s", "--signal", "-k", "--kill-after"},
    "sudo": {"-u", "--user", "-g", "--group", "-C", "-D", "-h", "-p", "-r", "-t", "-U"},
    "command": set(),
    "builtin": set(),
    "time": set(),
}
OUTPUT_BUILTINS = frozenset({"echo", "printf", "cat", "tee", "true", "false", ":", "pwd", "basename", "dirname"})


class Unreadable(ParseError):
    """The script does what bash itself refuses (a `:?` guard that stops it, an error in arithmetic)."""


@dataclass(frozen=True)
class Path:
    """One way through the script: the commands it runs, the conditions decided at start it took, how it ended."""

    ran: tuple[Ran, ...]
    taken: tuple[str, ...]
    ended: str  # "end", "exec", "exit N", "error: ..."
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Reading:
    """Every path through a script (one when nothing is decided at start)."""

    paths: tuple[Path, ...]
    what: str

    @property
    def notes(self) -> list[str]:
        return list(dict.fromkeys(n for p in self.paths for n in p.notes))

    def commands(self) -> list[Ran]:
        return [r for p in self.paths for r in p.ran]


Files = Callable[[str], str | None]  # a file's text on the node (or offline), None when not known


class Reader(Expander):
    def __init__(
        self,
        script: Script,
        *,
        dialect: str,
        files: Files | None,
        env_complete: bool,
        env_missing: str,
    ) -> None:
        self.script = script
        self.dialect = dialect
        self.files = files or (lambda _path: None)
        self.env_complete = env_complete
        self.env_missing = env_missing
        self.forks = 0
        self.depth = 0

    @property
    def posix(self) -> bool:
        return self.dialect in POSIX_SHELLS

    def fail(self, node: Node | None, detail: str) -> ParseError:
        return Unreadable(
            self.script.what,
            redact(f"line {line(node)}: {detail}"),
            self.script.text,
            hint_ids=("container-script-unreadable",),
        )

    def file_text(self, path: str, state: State) -> str | None:
        key = self.path(path, state)
        text = state.files.get(key) if key in state.files else self.files(key)
        return text if isinstance(text, str) else "" if key in state.files else None

    def note(self, state: State, text: str) -> None:
        if text not in state.notes:
            state.notes.append(text)

    # -- statements --------------------------------------------------------------------------------------
    def stmts(self, stmts: list[Node], states: list[State]) -> list[State]:
        for stmt in stmts:
            out: list[State] = []
            for state in states:
                out += [state] if state.flow else self.stmt(stmt, state)
            states = out
        return states

    def stmt(self, stmt: Node, state: State) -> list[State]:
        cmd = stmt.get("Cmd")
        redirs = stmt.get("Redirs") or []
        if stmt.get("Background"):  # `cmd &`: it runs beside the script, which goes on
            inner = state.copy()
            inner.subshell += 1
            results = self.command(cmd, redirs, inner, background=True) if cmd else [inner]
            for r in results:
                state.ran += r.ran[len(state.ran) :]
                state.notes = list(dict.fromkeys([*state.notes, *r.notes]))
            state.status = 0
            return [state]
        results = self.command(cmd, redirs, state) if cmd else self.redirect_only(redirs, state)
        if stmt.get("Negated"):
            for r in results:
                r.status = None if r.status is None else int(r.status == 0)
        return results

    def redirect_only(self, redirs: list[Node], state: State) -> list[State]:
        return [state]

    def command(self, cmd: Node, redirs: list[Node], state: State, background: bool = False) -> list[State]:
        kind = cmd.get("Type")
        if kind == "CallExpr":
            return self.call(cmd, redirs, state, background)
        if kind == "BinaryCmd":
            return self.binary(cmd, state)
        if kind == "IfClause":
            return self.if_clause(cmd, state)
        if kind == "CaseClause":
            return self.case(cmd, state)
        if kind == "Block":
            return self.stmts(cmd.get("Stmts") or [], [state])
        if kind == "Subshell":
            return self.subshell(cmd.get("Stmts") or [], state)
        if kind == "WhileClause":
            return self.while_loop(cmd, state)
        if kind == "ForClause":
            return self.for_loop(cmd, state)
        if kind == "FuncDecl":
            if self.posix and cmd.get("RsrvWord"):
                return self.dash_error(state, cmd, "`function NAME` (bash's keyword)")
            # the function keeps the script it was written in: its excerpts are that script's text
            state.functions[(cmd.get("Name") or {}).get("Value", "")] = (cmd.get("Body"), self.script)
            state.status = 0
            return [state]
        if kind == "ArithmCmd":
            if self.posix:  # dash reads `(( x ))` as two subshells around the command `x`: not found
                self.note(
                    state,
                    f"line {line(cmd)}: `(( ... ))` is bash's; under {self.dialect} it is a command that is not found",
                )
                state.status = 127
                return [state]
            value = self.arithmetic(cmd.get("X"), state, cmd)
            state.status = None if isinstance(value, Deferred) else int(value == 0)
            return self.decided(state, cmd)
        if kind == "TestClause":
            if self.posix:
                self.note(
                    state,
                    f"line {line(cmd)}: `[[ ... ]]` is bash's; under {self.dialect} `[[` is a command that is "
                    "not found",
                )
                state.status = 127
                return [state]
            verdict = self.test_expr(cmd.get("X"), state)
            state.status = None if verdict is None else int(not verdict)
            return self.decided(state, cmd)
        if kind == "DeclClause":
            return self.declare(cmd, state)
        if kind == "LetClause":
            for expr in cmd.get("Exprs") or []:
                value = self.arithmetic(expr, state, cmd)
                state.status = None if isinstance(value, Deferred) else int(value == 0)
            return [state]
        if kind == "TimeClause":
            inner = cmd.get("Stmt")
            return self.stmt(inner, state) if inner else [state]
        if kind == "CoprocClause":
            inner = cmd.get("Stmt")
            return self.stmt({**inner, "Background": True}, state) if inner else [state]
        raise self.fail(cmd, f"cannot read the construct {kind}")

    def decided(self, state: State, node: Node) -> list[State]:
        """A status the start decides becomes a fork when the caller branches on it; here it stays None."""
        return [state]

    # -- && || | ---------------------------------------------------------------------------------------
    def binary(self, cmd: Node, state: State) -> list[State]:
        op = cmd.get("Op")
        x, y = cmd.get("X"), cmd.get("Y")
        if op in ("|", "|&"):
            parts = self._pipeline_parts(cmd)
            piped: Value | None = None
            for i, part in enumerate(parts):
                inner = state.copy()
                inner.subshell += 1
                inner.capture = []  # each stage writes into the pipe: the next one reads it, $(...) the last one's
                inner.piped = piped if i else state.piped
                results = self.stmt(part, inner)
                for r in results:
                    state.ran += [c for c in r.ran[len(state.ran) :] if c not in state.ran]
                    state.notes = list(dict.fromkeys([*state.notes, *r.notes]))
                    state.status = r.status
                printed = [r.capture or [] for r in results]
                same = all(p == printed[0] for p in printed)  # else the paths print different things
                piped = join(printed[0], "") if same else self.deferred(part, "the pipeline")
                if state.capture is not None and i == len(parts) - 1:
                    state.capture.append(piped)
            return [state]
        out = []
        assert x is not None and y is not None
        for first in self.stmt(x, state):
            if first.flow:
                out.append(first)
                continue
            for branch, ok in self.branches(first, x, f"`{clip(self.script.source(x))}` (line {line(x)})"):
                runs_y = ok if op == "&&" else not ok
                out += self.stmt(y, branch) if runs_y else [branch]
        return out

    def _pipeline_parts(self, cmd: Node) -> list[Node]:
        parts = []
        for side in (cmd.get("X"), cmd.get("Y")):
            inner = (side or {}).get("Cmd") or {}
            if side and inner.get("Type") == "BinaryCmd" and inner.get("Op") in ("|", "|&") and not side.get("Redirs"):
                parts += self._pipeline_parts(inner)
            elif side:
                parts.append(side)
        return parts

    def branches(self, state: State, node: Node, what: str) -> list[tuple[State, bool]]:
        """The path as a condition's status leaves it: one way when known, both ways when the start decides."""
        if state.status is not None:
            return [(state, state.status == 0)]
        if self.forks >= MAX_PATHS:
            state.taken.append(f"{what}: assumed true (more branches decided at start than the reader follows)")
            return [(state, True)]
        self.forks += 1
        other = state.copy()
        state.taken.append(f"{what} true")
        other.taken.append(f"{what} false")
        return [(state, True), (other, False)]

    # -- if, case, loops --------------------------------------------------------------------------------------
    def if_clause(self, cmd: Node, state: State) -> list[State]:
        cond = cmd.get("Cond") or []
        if not cond:  # `else`
            return self.stmts(cmd.get("Then") or [], [state])
        out = []
        what = f"`{clip(' '.join(self.script.source(c) for c in cond))}` (line {line(cond[0])})"
        for after in self.stmts(cond, [state]):
            if after.flow:
                out.append(after)
                continue
            for branch, ok in self.branches(after, cond[-1], what):
                if ok:
                    out += self.stmts(cmd.get("Then") or [], [branch])
                elif cmd.get("Else"):
                    out += self.if_clause(cmd["Else"], branch)
                else:
                    branch.status = 0
                    out.append(branch)
        return out

    def case(self, cmd: Node, state: State) -> list[State]:
        subject = self.value(cmd.get("Word"), state)
        items = cmd.get("Items") or []
        what = f"`case {clip(self.script.source(cmd.get('Word') or cmd))}` (line {line(cmd)})"
        return self._case_from(items, 0, subject, state, what, fell=False)

    def _case_from(
        self, items: list[Node], start: int, subject: Value, state: State, what: str, fell: bool
    ) -> list[State]:
        for i in range(start, len(items)):
            item = items[i]
            if fell:
                hit: bool | None = True
            else:
                hit = False
                for pattern in item.get("Patterns") or []:
                    regex = self.pattern(pattern, state)
                    if isinstance(regex, Deferred) or isinstance(subject, Deferred):
                        hit = None
                        break
                    if re.fullmatch(regex, subject, re.S):
                        hit = True
                        break
            if hit is False:
                continue
            shown = " | ".join(self.script.source(p) for p in item.get("Patterns") or [])
            if hit is None:
                if self.forks >= MAX_PATHS:
                    state.taken.append(f"{what}: `{clip(shown)})` assumed (more branches than the reader follows)")
                    hit = True
                else:
                    self.forks += 1
                    other = state.copy()
                    state.taken.append(f"{what} matches `{clip(shown)})`")
                    other.taken.append(f"{what} does not match `{clip(shown)})`")
                    return self._case_body(items, i, subject, state, what) + self._case_from(
                        items, i + 1, subject, other, what, fell=False
                    )
            return self._case_body(items, i, subject, state, what)
        state.status = 0
        return [state]

    def _case_body(self, items: list[Node], i: int, subject: Value, state: State, what: str) -> list[State]:
        item = items[i]
        after = self.stmts(item.get("Stmts") or [], [state])
        op = item.get("Op", ";;")
        if op == ";;" or i + 1 >= len(items):
            return after
        out = []
        for s in after:
            if s.flow:
                out.append(s)
            else:  # ;& runs the next body; ;;& tests the next patterns
                out += self._case_from(items, i + 1, subject, s, what, fell=op == ";&")
        return out

    def while_loop(self, cmd: Node, state: State) -> list[State]:
        until = bool(cmd.get("Until"))
        cond, body = cmd.get("Cond") or [], cmd.get("Do") or []
        keyword = "until" if until else "while"
        what = f"`{keyword} {clip(' '.join(self.script.source(c) for c in cond))}` (line {line(cmd)})"
        live: list[State] = [state]
        done: list[State] = []
        for _ in range(MAX_ITERATIONS):
            next_live = []
            for s in live:
                before = _loop_key(s)
                for after in self.stmts(cond, [s]):
                    if after.flow:
                        done.append(after)
                        continue
                    if after.status is None:  # how often it runs is decided at start
                        done.append(self._loop_leaves(after, body, what))
                        continue
                    if (after.status == 0) == until:
                        after.status = 0
                        done.append(after)
                        continue
                    ran = len(after.ran)
                    for again in self._loop_body(body, after, done):
                        if _loop_key(again) == before and len(again.ran) > ran:
                            # the next turn is this one again: a restart loop (`while true; do vllm serve; done`)
                            self.note(again, f"{what} runs the same commands again each time they end (a restart loop)")
                            done.append(again)
                        else:
                            next_live.append(again)
            live = next_live
            if not live:
                return done
        raise self.fail(cmd, f"{what} runs more than {MAX_ITERATIONS} times as read")

    def _loop_body(self, body: list[Node], state: State, done: list[State]) -> list[State]:
        """One iteration; the paths that go on to the next one (break and return leave, continue goes on)."""
        go_on = []
        for after in self.stmts(body, [state]):
            if after.flow == "break":
                after.flow_n -= 1
                if after.flow_n <= 0:
                    after.flow, after.flow_n = None, 1
                done.append(after)
            elif after.flow == "continue":
                after.flow_n -= 1
                if after.flow_n <= 0:
                    after.flow, after.flow_n = None, 1
                    go_on.append(after)
                else:
                    done.append(after)
            elif after.flow:
                done.append(after)
            else:
                go_on.append(after)
        return go_on

    def _loop_leaves(self, state: State, body: list[Node], what: str) -> State:
        """A loop whose number of turns the start decides: the path leaves it here, and what its body would
        set is deferred (the commands its body runs are recorded as run on the way, marked so)."""
        trial = state.copy()
        trial.taken.append(f"{what} runs a number of times decided at start")
        before = {**trial.globals}
        ran_before = len(trial.ran)
        for after in self.stmts(body, [trial]):
            for name, var in after.globals.items():
                if before.get(name) != var:
                    state.set(name, Deferred(f"{name}, set in the loop {what}", f"<${name}>"), export=var.exported)
            state.ran += [r for r in after.ran[ran_before:] if r not in state.ran]
            break
        state.status = 0
        return state

    def for_loop(self, cmd: Node, state: State) -> list[State]:
        loop, body = cmd.get("Loop") or {}, cmd.get("Do") or []
        if loop.get("Type") == "CStyleLoop":
            return self._c_loop(cmd, loop, body, state)
        name = (loop.get("Name") or {}).get("Value", "")
        items = (
            self.fields_of(loop.get("Items") or [], state)
            if "Items" in loop or loop.get("InPos")
            else list(state.positional)
        )
        what = f"`for {name} in ...` (line {line(cmd)})"
        if any(isinstance(i, Deferred) and i.splits for i in items):
            state.set(name, Deferred(f"{name}, the loop variable of {what} over words decided at start", f"<${name}>"))
            return [self._loop_leaves(state, body, what)]
        if len(items) > MAX_ITERATIONS:
            raise self.fail(cmd, f"{what} runs more than {MAX_ITERATIONS} times")
        live: list[State] = [state]
        done: list[State] = []
        for item in items:
            next_live = []
            for s in live:
                s.set(name, item)
                next_live += self._loop_body(body, s, done)
            live = next_live
        return done + live

    def _c_loop(self, cmd: Node, loop: Node, body: list[Node], state: State) -> list[State]:
        what = f"`for (( ... ))` (line {line(cmd)})"
        if isinstance(self.arithmetic(loop.get("Init"), state, cmd), Deferred):
            return [self._loop_leaves(state, body, what)]
        live, done = [state], []
        for _ in range(MAX_ITERATIONS):
            next_live = []
            for s in live:
                cond = self.arithmetic(loop.get("Cond"), s, cmd) if loop.get("Cond") else 1
                if isinstance(cond, Deferred):
                    done.append(self._loop_leaves(s, body, what))
                    continue
                if not cond:
                    done.append(s)
                    continue
                for after in self._loop_body(body, s, done):
                    self.arithmetic(loop.get("Post"), after, cmd)
                    next_live.append(after)
            live = next_live
            if not live:
                return done
        raise self.fail(cmd, f"{what} runs more than {MAX_ITERATIONS} times as read")

    def subshell(self, stmts: list[Node], state: State) -> list[State]:
        inner = state.copy()
        inner.subshell += 1
        out = []
        for after in self.stmts(stmts, [inner]):
            back = state.copy()
            back.ran, back.taken, back.notes, back.status = after.ran, after.taken, after.notes, after.status
            back.capture = after.capture
            out.append(back)
        return out

    # -- assignments and declarations ---------------------------------------------------------------
    def assign(self, node: Node, state: State, *, export: bool | None = None, local: bool = False) -> None:
        name = (node.get("Name") or {}).get("Value", "")
        if node.get("Naked"):
            if export:
                state.export(name)
            elif local:
                state.set(name, "", local=True)
                state.frames[-1][name] = Var("", False, assigned=False) if state.frames else Var("", False, False)
            return
        if node.get("Array") is not None:
            if self.posix:
                self.note(
                    state, f"line {line(node)}: an array is bash's; under {self.dialect} the script does not parse"
                )
            values = self._array(node["Array"], state, name, bool(node.get("Append")))
            state.set(name, values, export=export, local=local)
            return
        value = self.value(node.get("Value"), state, assignment=True)
        index = node.get("Index")
        if index is not None:
            old = state.get(name)
            current = list(old.value) if old and isinstance(old.value, list) else ([] if old is None else [old.scalar])
            at = self.arithmetic(index, state, node)
            if isinstance(at, Deferred):
                state.set(name, [at], export=export, local=local)
                return
            while len(current) <= at:
                current.append("")
            current[at] = value
            state.set(name, current, export=export, local=local)
            return
        if node.get("Append"):
            was = self.lookup(name, state)
            value = join([was or "", value], "")
        state.set(name, value, export=export, local=local)

    def _array(self, array: Node, state: State, name: str, append: bool) -> list[Value] | dict[str, Value]:
        old = state.get(name)
        if isinstance(old.value if old else None, dict) or any(
            e.get("Index")
            and (e["Index"].get("Type") == "Word" and not re.fullmatch(r"\d+", self.index_word(e["Index"]) or ""))
            for e in array.get("Elems") or []
        ):
            assoc: dict[str, Value] = dict(old.value) if old and append and isinstance(old.value, dict) else {}
            for elem in array.get("Elems") or []:
                key = self.value(elem.get("Index"), state) if elem.get("Index") else str(len(assoc))
                assoc[str(key)] = self.value(elem.get("Value"), state)
            return assoc
        values: list[Value] = list(old.value) if old and append and isinstance(old.value, list) else []
        for elem in array.get("Elems") or []:
            if elem.get("Index") is not None:
                at = self.arithmetic(elem["Index"], state, array)
                value = self.value(elem.get("Value"), state)
                if isinstance(at, int):
                    while len(values) <= at:
                        values.append("")
                    values[at] = value
                continue
            values += self.fields(elem.get("Value") or {}, state)
        return values

    def declare(self, cmd: Node, state: State) -> list[State]:
        variant = (cmd.get("Variant") or {}).get("Value", "")
        options: set[str] = set()
        export, local = variant == "export", variant == "local"
        for arg in cmd.get("Args") or []:
            if arg.get("Naked") and arg.get("Value") is not None and not arg.get("Name"):
                word = self.value(arg["Value"], state)
                if isinstance(word, str) and word.startswith(("-", "+")):
                    options |= set(word[1:]) if word.startswith("-") else set()
                    continue
                if isinstance(word, str) and "=" in word:  # `declare "$x=1"`
                    key, _, value = word.partition("=")
                    state.set(
                        key,
                        value,
                        export=export or "x" in options or None,
                        local=local
                        or (variant in ("declare", "typeset") and bool(state.frames) and "g" not in options),
                    )
                continue
            if "f" in options:
                continue
            is_local = local or (variant in ("declare", "typeset") and bool(state.frames) and "g" not in options)
            if arg.get("Naked") and "A" in options:
                state.set((arg.get("Name") or {}).get("Value", ""), {}, local=is_local)
                continue
            self.assign(arg, state, export=True if (export or "x" in options) else None, local=is_local)
        state.status = 0
        return [state]

    # -- simple commands --------------------------------------------------------------------------------------
    def call(self, cmd: Node, redirs: list[Node], state: State, background: bool) -> list[State]:
        assigns, args = cmd.get("Assigns") or [], cmd.get("Args") or []
        if not args:
            for a in assigns:
                self.assign(a, state)
            state.status = 0
            return self.redirect_writes(redirs, state, None)
        prefix: dict[str, Value] = {}
        for a in assigns:
            prefix[(a.get("Name") or {}).get("Value", "")] = self.value(a.get("Value"), state, assignment=True)
        argv = self.fields_of(args, state)
        if not argv:
            state.status = 0
            return [state]
        stdin = self.stdin(redirs, state)
        return self.run(argv, prefix, state, cmd, redirs, stdin, background, via=())

    def stdin(self, redirs: list[Node], state: State) -> Value | None:
        for r in redirs:
            op = r.get("Op")
            if op in ("<<", "<<-"):
                hdoc = r.get("Hdoc") or {}
                delimiter = r.get("Word") or {}
                quoted = any(
                    p.get("Type") in ("SglQuoted", "DblQuoted") for p in delimiter.get("Parts") or []
                ) or "\\" in self.script.source(delimiter)
                text: Value
                if quoted:
                    text = "".join(p.get("Value", "") for p in hdoc.get("Parts") or [])
                else:
                    text = self.value({"Parts": [self._hdoc_part(p) for p in hdoc.get("Parts") or []]}, state)
                if op == "<<-" and isinstance(text, str):
                    text = "\n".join(t.lstrip("\t") for t in text.split("\n"))
                return text
            if op == "<<<":
                value = self.value(r.get("Word"), state)
                return join([value, "\n"], "")
            if op == "<":
                target = self.value(r.get("Word"), state)
                if isinstance(target, str):
                    known = state.files.get(self.path(target, state)) if state.files else None
                    return (
                        known
                        if known is not None
                        else self.files(self.path(target, state)) or Deferred(f"the file {target}", f"<{target}>")
                    )
        return state.piped

    @staticmethod
    def _hdoc_part(part: Node) -> Node:
        """A here-document's text expands like a double-quoted word, but a `"` in it is itself."""
        if part.get("Type") == "Lit":
            text = re.sub(r"\\([$`\\\n])", lambda m: "" if m[1] == "\n" else m[1], part.get("Value", ""))
            return {"Type": "SglQuoted", "Value": text}
        return {"Type": "DblQuoted", "Parts": [part]}

    def path(self, target: str, state: State) -> str:
        if target.startswith("/") or not isinstance(state.cwd, str) or not state.cwd:
            return posixpath.normpath(target) if target.startswith("/") else target
        return posixpath.normpath(posixpath.join(state.cwd, target))

    def redirect_writes(self, redirs: list[Node], state: State, output: Value | None) -> list[State]:
        """`> FILE`, `>> FILE`, `| tee`: what the command printed becomes the file's text, when it is known."""
        for r in redirs:
            op = r.get("Op")
            if op in (">", ">>", ">|", "&>", "&>>") and not r.get("N"):
                target = self.value(r.get("Word"), state)
                if not isinstance(target, str) or target.startswith("/dev/"):
                    continue
                key = self.path(target, state)
                text: Value = (
                    output if output is not None else Deferred(f"what line {line(r)} writes to {target}", f"<{target}>")
                )
                if op in (">>", "&>>") and key in state.files:
                    text = join([state.files[key], text], "")
                state.files[key] = text
        return [state]

    def run(
        self,
        argv: list[Value],
        prefix: dict[str, Value],
        state: State,
        node: Node,
        redirs: list[Node],
        stdin: Value | None,
        background: bool,
        via: tuple[str, ...],
    ) -> list[State]:
        name = argv[0]
        if isinstance(name, Deferred):
            return self.external(argv, prefix, state, node, stdin, background, via)
        base = posixpath.basename(name)
        if base in WRAPPERS and len(argv) > 1 and not (base == "command" and argv[1] in ("-v", "-V")):
            rest = unwrap(argv[1:], WRAPPERS[base], base == "timeout")
            if rest:
                return self.run(rest, prefix, state, node, redirs, stdin, background, (*via, base))
        if base == "env" and len(argv) > 1:
            return self._env(argv, prefix, state, node, redirs, stdin, background, via)
        if name == "exec":
            if len(argv) == 1:
                return [state]  # `exec >log 2>&1`: only redirections
            ended = self.run(argv[1:], prefix, state, node, redirs, stdin, background, (*via, "exec"))
            for r in ended:
                if not r.flow:
                    r.flow = "exec"
            return ended
        if name in state.functions and not via:
            return self.function(name, argv[1:], prefix, state, node)
        if base == "xargs" and len(argv) == 1 and isinstance(stdin, str):  # `echo " $x " | xargs`: the words, trimmed
            return self.printed(state, " ".join(stdin.split()) + "\n" if stdin.split() else "")
        builtin = getattr(self, f"b_{name.replace('.', 'dot').replace('[', 'test').replace(':', 'colon')}", None)
        if builtin is not None and name in BUILTINS:
            saved = {k: state.get(k) for k in prefix}
            for k, v in prefix.items():
                state.set(k, v)
            results: list[State] = builtin(argv, state, node, stdin)
            if name not in ("export", "readonly", "declare", "typeset", "local", "source", ".", "eval"):
                for r in results:
                    for k, old in saved.items():
                        if old is None:
                            r.unset(k)
                        else:
                            r._scope(k, False)[k] = old
            out = []
            for r in results:
                out += self.redirect_writes(redirs, r, r.output)
                r.output = None
            return out
        if base in SHELLS and len(argv) > 1:
            inner = self.shell_c(argv, prefix, state, node, background, via)
            if inner is not None:
                return inner
        return self.external(argv, prefix, state, node, stdin, background, via)

    def _env(
        self,
        argv: list[Value],
        prefix: dict[str, Value],
        state: State,
        node: Node,
        redirs: list[Node],
        stdin: Value | None,
        background: bool,
        via: tuple[str, ...],
    ) -> list[State]:
        env_prefix = dict(prefix)
        i, clear = 1, False
        while i < len(argv):
            word = argv[i]
            if word in ("-i", "--ignore-environment", "-"):
                clear = True
            elif word in ("-u", "--unset") and i + 1 < len(argv):
                env_prefix[str(argv[i + 1])] = Deferred("unset by env -u", "")
                i += 1
            elif isinstance(word, str) and re.match(r"^[A-Za-z_]\w*=", word):
                key, _, value = word.partition("=")
                env_prefix[key] = value
            elif isinstance(word, Deferred) and re.match(r"^[A-Za-z_]\w*=", str(word)):
                env_prefix[str(word).partition("=")[0]] = word
            elif isinstance(word, str) and word.startswith("-"):
                pass
            else:
                break
            i += 1
        if i >= len(argv):
            return self.external(argv, prefix, state, node, stdin, background, via)
        if clear:
            cleared = state.copy()
            for scope in (cleared.globals, *cleared.frames):
                for k, v in list(scope.items()):
                    if v.exported:
                        scope[k] = Var(v.value, False, v.assigned)
            results = self.run(argv[i:], env_prefix, cleared, node, redirs, stdin, background, (*via, "env -i"))
            for r in results:
                state.ran = r.ran
            return [state]
        return self.run(argv[i:], env_prefix, state, node, redirs, stdin, background, (*via, "env"))

    def external(
        self,
        argv: list[Value],
        prefix: dict[str, Value],
        state: State,
        node: Node,
        stdin: Value | None,
        background: bool,
        via: tuple[str, ...],
    ) -> list[State]:
        env = {**state.environment(), **{k: v for k, v in prefix.items() if str(v) != "" or isinstance(v, str)}}
        env = {k: v for k, v in env.items() if not (isinstance(v, Deferred) and v.why == "unset by env -u")}
        ran = Ran(
            tuple(argv),
            env,
            line(node),
            self.script.what,
            tuple(state.taken),
            background,
            stdin,
            state.cwd,
            via,
        )
        state.ran.append(ran)
        if state.capture is not None:  # its output is part of a $(...) the reader cannot know
            state.capture.append(
                Deferred(
                    f"the output of `{clip(self.script.source(node))}` (line {line(node)})",
                    f"<$({clip(self.script.source(node), 40)})>",
                )
            )
        # a command is assumed to work: what is read is the start that works. A query is not an action: whether
        # `grep -q` finds a name (a container already running, a line in a file) the start decides, both ways,
        # unless what it reads is known (`echo "$MODEL" | grep -qi moe`)
        state.status = (grep_known(argv, stdin) if isinstance(stdin, str) else None) if _queries(argv) else 0
        return [state]

    def shell_c(
        self,
        argv: list[Value],
        prefix: dict[str, Value],
        state: State,
        node: Node,
        background: bool,
        via: tuple[str, ...],
    ) -> list[State] | None:
        """`bash -c SCRIPT NAME ARGS`, `bash FILE ARGS`: the inner script read with the exported environment."""
        shell = posixpath.basename(str(argv[0]))
        i = 1
        text: Value | None = None
        while i < len(argv) and isinstance(argv[i], str) and str(argv[i]).startswith("-") and argv[i] != "-":
            opts = str(argv[i])
            i += 1
            if "c" in opts[1:] and not opts.startswith("--"):
                if i >= len(argv):
                    return None
                text = argv[i]
                i += 1
                break
            if opts in ("-o", "+o") and i < len(argv):
                i += 1
        arguments = argv[i:]
        arg0: Value
        if text is None:
            first = arguments[0] if arguments else None
            if not isinstance(first, str):
                return None
            path = self.path(first, state)
            text = state.files.get(path) if path in state.files else self.files(path)
            if text is None:
                return None
            arg0, arguments = first, arguments[1:]
        else:
            arg0 = arguments[0] if arguments else shell
            arguments = arguments[1:]
        if isinstance(text, Deferred) or not isinstance(arg0, str):
            return None
        if self.depth >= MAX_DEPTH:
            raise self.fail(node, "scripts run scripts deeper than the reader follows")
        inner = read(
            text,
            what=f"{self.script.what}, line {line(node)}: {shell} -c",
            env={**state.environment(), **prefix},
            arguments=tuple(arguments),
            arg0=arg0,
            dialect=shell,
            files=self.files,
            env_complete=self.env_complete,
            env_missing=self.env_missing,
            depth=self.depth + 1,
            cwd=state.cwd,
        )
        outs = []
        for way in inner.paths:
            out = state.copy()
            out.ran += [
                Ran(
                    r.argv,
                    r.env,
                    r.line,
                    r.script,
                    (*out.taken, *r.taken),
                    r.background or background,
                    r.stdin,
                    r.cwd,
                    (*via, *r.via),
                )
                for r in way.ran
            ]
            out.taken += list(way.taken)
            out.notes = list(dict.fromkeys([*out.notes, *way.notes]))
            out.status = 0
            outs.append(out)
        return outs

    def function(self, name: str, args: list[Value], prefix: dict[str, Value], state: State, node: Node) -> list[State]:
        if self.depth >= MAX_DEPTH:
            raise self.fail(node, f"the function {name} calls itself deeper than the reader follows")
        body, written_in = cast("tuple[Node, Script]", state.functions[name])
        saved_positional = state.positional
        state.positional = list(args)
        state.frames.append({k: Var(v, True) for k, v in prefix.items()})
        reader = self if written_in is self.script else self.reading(written_in)
        self.depth += 1
        try:
            results = reader.stmt(body, state)
        finally:
            self.depth -= 1
            self.forks = reader.forks
        for r in results:
            r.frames.pop()
            r.positional = saved_positional
            if r.flow == "return":
                r.flow = None
        return results

    def dash_error(self, state: State, node: Node, what: str) -> list[State]:
        self.note(
            state, f"line {line(node)}: {what} is bash's; under {self.dialect} the script stops with a syntax error"
        )
        state.flow = "exit"
        state.status = 2
        return [state]

    # -- builtins the reader evaluates ---------------------------------------------------------------
    def b_colon(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        state.status = 0
        return [state]

    b_true = b_colon

    def b_false(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        state.status = 1
        return [state]

    def b_test(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        words = list(argv[1:])
        if argv[0] == "[":
            if not words or words[-1] != "]":
                state.status = 2
                return [state]
            words = words[:-1]
        if self.posix and "==" in words:
            self.note(
                state,
                f"line {line(node)}: `==` inside `[ ]` is bash's; under {self.dialect} test says 'unexpected "
                "operator' (false)",
            )
            state.status = 2
            return [state]
        verdict = test_words(words, state, lambda p: self.file_text(p, state))
        state.status = None if verdict is None else int(not verdict)
        return [state]

    def b_echo(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        words = list(argv[1:])
        newline, escapes = True, False
        while words and isinstance(words[0], str) and re.fullmatch(r"-[neE]+", words[0]):
            newline = newline and "n" not in words[0]
            escapes = "e" in words[0] or (escapes and "E" not in words[0])
            words = words[1:]
        text = join(words, " ")
        if escapes and isinstance(text, str):
            text = patterns.ansi_c(text)
        return self.printed(state, join([text, "\n" if newline else ""], ""))

    def b_printf(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        words = list(argv[1:])
        target = None
        if len(words) >= 2 and words[0] == "-v":
            target, words = words[1], words[2:]
        if words[:1] == ["--"]:
            words = words[1:]
        if not words:
            state.status = 2
            return [state]
        if any(isinstance(w, Deferred) for w in words):
            text: Value = Deferred(f"what printf prints at line {line(node)}", "<printf ...>")
        else:
            text = printf(str(words[0]), [str(w) for w in words[1:]])
        if isinstance(target, str):
            state.set(target, text)
            state.status = 0
            return [state]
        return self.printed(state, text)

    def b_cat(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        names = [a for a in argv[1:] if not (isinstance(a, str) and a.startswith("-") and a != "-")]
        if not names and stdin is not None:
            return self.printed(state, stdin)
        parts: list[Value] = []
        for n in names:
            if n == "-" and stdin is not None:
                parts.append(stdin)
            elif isinstance(n, str):
                path = self.path(n, state)
                known = state.files.get(path) if path in state.files else self.files(path)
                parts.append(known if known is not None else Deferred(f"the file {n}", f"<{n}>"))
            else:
                parts.append(n)
        return self.printed(state, join(parts, ""))

    def b_tee(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        text = stdin if stdin is not None else Deferred(f"what line {line(node)} pipes to tee", "<tee>")
        for n in argv[1:]:
            if isinstance(n, str) and not n.startswith("-"):
                key = self.path(n, state)
                state.files[key] = join([state.files.get(key, ""), text], "") if "-a" in argv else text
        return self.printed(state, text)

    def b_pwd(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        return self.printed(state, join([state.cwd or Deferred("the working directory", "<pwd>"), "\n"], ""))

    def b_basename(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        words = [a for a in argv[1:] if not (isinstance(a, str) and a.startswith("-"))]
        if not words or isinstance(words[0], Deferred):
            return self.printed(state, words[0] if words else "")
        base = posixpath.basename(words[0].rstrip("/")) or "/"
        if len(words) > 1 and isinstance(words[1], str) and base.endswith(words[1]) and base != words[1]:
            base = base[: -len(words[1])]
        return self.printed(state, base + "\n")

    def b_dirname(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        words = [a for a in argv[1:] if not (isinstance(a, str) and a.startswith("-"))]
        if not words or isinstance(words[0], Deferred):
            return self.printed(state, words[0] if words else "")
        return self.printed(state, (posixpath.dirname(words[0].rstrip("/")) or ".") + "\n")

    def printed(self, state: State, text: Value) -> list[State]:
        if state.capture is not None:
            state.capture.append(text)
        state.output = text
        state.status = 0
        return [state]

    def b_export(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        for word in argv[1:]:
            if isinstance(word, str) and word.startswith("-"):
                continue
            text = str(word)
            if "=" in text:
                key, _, value = text.partition("=")
                state.set(key, value if isinstance(word, str) else word, export=True)
            else:
                state.export(text)
        state.status = 0
        return [state]

    def b_unset(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        functions = "-f" in argv
        for word in argv[1:]:
            if isinstance(word, str) and not word.startswith("-"):
                if functions:
                    state.functions.pop(word, None)
                else:
                    state.unset(word)
        state.status = 0
        return [state]

    def b_shift(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        n = int(argv[1]) if len(argv) > 1 and isinstance(argv[1], str) and argv[1].isdigit() else 1
        if n > len(state.positional):
            state.status = 1
            return [state]
        state.positional = state.positional[n:]
        state.status = 0
        return [state]

    def b_set(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        words = list(argv[1:])
        while words and isinstance(words[0], str) and words[0][:1] in ("-", "+") and words[0] != "--":
            flags = words.pop(0)
            for _ in range(flags[1:].count("o")):  # -o NAME, also joined: `set -euo pipefail`
                if words:
                    words.pop(0)
            if "a" in flags[1:]:
                state.allexport = flags.startswith("-")
        if words and words[0] == "--":
            state.positional = words[1:]
        elif words:
            state.positional = words
        state.status = 0
        return [state]

    def b_cd(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        words = [a for a in argv[1:] if not (isinstance(a, str) and a in ("-P", "-L", "-e", "--"))]
        target = words[0] if words else self.lookup("HOME", state)
        if target is None or isinstance(target, Deferred):
            state.cwd = Deferred(
                f"the folder `{clip(self.script.source(node))}` (line {line(node)}) changes to", "<cwd>"
            )
        elif target == "-":
            state.cwd = Deferred("the previous folder (`cd -`)", "<cwd>")
        else:
            state.cwd = (
                self.path(target, state)
                if isinstance(state.cwd, str) or target.startswith("/")
                else Deferred("a folder under one decided at start", "<cwd>")
            )
        state.status = 0
        return [state]

    b_pushd = b_cd

    def b_popd(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        state.cwd = Deferred("the folder popd returns to", "<cwd>")
        state.status = 0
        return [state]

    def b_exit(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        state.flow = "exit"
        state.status = (
            int(argv[1]) if len(argv) > 1 and isinstance(argv[1], str) and argv[1].isdigit() else (state.status or 0)
        )
        if state.subshell:
            state.flow = "exit"
        return [state]

    def b_return(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        state.flow = "return" if state.frames else "exit"
        state.status = (
            int(argv[1]) if len(argv) > 1 and isinstance(argv[1], str) and argv[1].isdigit() else (state.status or 0)
        )
        return [state]

    def b_break(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        state.flow = "break"
        state.flow_n = int(argv[1]) if len(argv) > 1 and isinstance(argv[1], str) and argv[1].isdigit() else 1
        return [state]

    def b_continue(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        state.flow = "continue"
        state.flow_n = int(argv[1]) if len(argv) > 1 and isinstance(argv[1], str) and argv[1].isdigit() else 1
        return [state]

    def b_source(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        if self.posix and argv[0] == "source":
            self.note(
                state,
                f"line {line(node)}: `source` is bash's; under {self.dialect} it is a command that is not found "
                "(`.` reads a file)",
            )
            state.status = 127
            return [state]
        if len(argv) < 2:
            state.status = 2
            return [state]
        target = argv[1]
        text: Value | None = None
        if isinstance(target, str):
            path = self.path(target, state)
            text = state.files.get(path) if path in state.files else self.files(path)
        if text is None or isinstance(text, Deferred):
            shown = clip(self.script.source(node))
            state.opaque = f"`{shown}` (line {line(node)})"
            self.note(
                state,
                f"line {line(node)}: `{shown}` reads a file the suite did not read: what it sets is decided at start",
            )
            state.status = 0
            return [state]
        if self.depth >= MAX_DEPTH:
            raise self.fail(node, "files source files deeper than the reader follows")
        if self.posix:
            return self.inline(text, f"{target} (sourced at {self.script.what} line {line(node)})", argv[2:], state)
        outer = state.get("BASH_SOURCE")
        stack = list(outer.value) if outer is not None and isinstance(outer.value, list) else []
        state.set("BASH_SOURCE", [target, *stack])  # inside the sourced file, ${BASH_SOURCE[0]} is that file
        results = self.inline(text, f"{target} (sourced at {self.script.what} line {line(node)})", argv[2:], state)
        for r in results:
            if stack:
                r.set("BASH_SOURCE", stack)
            else:
                r.unset("BASH_SOURCE")
        return results

    b_dot = b_source

    def b_eval(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        text = join(list(argv[1:]), " ")
        if isinstance(text, Deferred):
            self.note(state, f"line {line(node)}: `eval` of text decided at start: what it runs is decided at start")
            return self.external(list(argv), {}, state, node, stdin, False, ())
        return self.inline(text, f"{self.script.what}, line {line(node)}: eval", None, state)

    def reading(self, script: Script) -> Reader:
        """A reader of another script in this shell (a sourced file, an eval, a function written there)."""
        reader = Reader(
            script, dialect=self.dialect, files=self.files, env_complete=self.env_complete, env_missing=self.env_missing
        )
        reader.depth, reader.forks = self.depth + 1, self.forks
        return reader

    def inline(self, text: str, what: str, arguments: list[Value] | None, state: State) -> list[State]:
        """Another script read in this shell (source, eval): its variables and functions are this shell's."""
        inner = syntax.parse(text, what)
        reader = self.reading(inner)
        saved = state.positional
        if arguments:
            state.positional = list(arguments)
        results = reader.stmts(inner.stmts, [state])
        self.forks = reader.forks
        for r in results:
            if arguments:
                r.positional = saved
            if r.flow == "return" and not r.frames:
                r.flow = None
        return results

    def b_read(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        names = [a for a in argv[1:] if isinstance(a, str) and re.fullmatch(r"[A-Za-z_]\w*", a)]
        skip = {"-d", "-n", "-N", "-p", "-t", "-u", "-a", "-i"}
        words = list(argv[1:])
        names = [
            w
            for i, w in enumerate(words)
            if isinstance(w, str) and re.fullmatch(r"[A-Za-z_]\w*", w) and not (i and words[i - 1] in skip)
        ]
        if isinstance(stdin, str) and argv[0] == "read" and self._read_known(words, stdin, state):
            return [state]
        if isinstance(stdin, str) and argv[0] in ("mapfile", "readarray") and names:
            lines = stdin.split("\n")
            lines = lines[:-1] if lines and lines[-1] == "" else lines
            state.set(names[-1], [t for t in lines] if "-t" in words else [t + "\n" for t in lines])
            state.status = 0
            return [state]
        for name in names or ["REPLY"]:
            state.set(name, Deferred(f"{name}, read at line {line(node)}", f"<${name}>"))
        state.status = None
        return [state]

    b_mapfile = b_read
    b_readarray = b_read

    @staticmethod
    def _read_known(words: list[Value], stdin: str, state: State) -> bool:
        """`read [-r] [-a NAME] NAME...` of a known line (a here-string, a pipe from echo): split as bash splits
        it by IFS. False where an option it takes is one the reader does not follow (then decided at start)."""
        array, names, raw, i = None, [], False, 0
        while i < len(words):
            w = words[i]
            if not isinstance(w, str):
                return False
            if w == "-r":
                raw = True
            elif w in ("-a", "-ra", "-ar"):
                raw = raw or w != "-a"
                if i + 1 >= len(words) or not isinstance(words[i + 1], str):
                    return False
                array = str(words[i + 1])
                i += 1
            elif w.startswith("-"):
                return False
            else:
                names.append(w)
            i += 1
        if not stdin:
            return False
        first = stdin.split("\n", 1)[0]
        if not raw:
            first = re.sub(r"\\(.)", r"\1", first)
        var = state.get("IFS")
        ifs = " \t\n" if var is None else var.scalar
        if not isinstance(ifs, str):
            return False
        fields = ifs_fields(first, ifs)
        if array is not None:
            state.set(array, [f for f, _ in fields])
        targets = names or ([] if array else ["REPLY"])
        for k, name in enumerate(targets):
            if not names:  # REPLY: the whole line
                state.set(name, first)
            elif k == len(targets) - 1 and k < len(fields):  # the last name: the rest of the line
                state.set(name, first[fields[k][1] :].rstrip("".join(c for c in ifs if c in " \t\n")))
            else:
                state.set(name, fields[k][0] if k < len(fields) else "")
        state.status = 0
        return True

    def b_getopts(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        if len(argv) < 3 or not all(isinstance(a, str) for a in argv[1:3]):
            state.status = None
            return [state]
        spec, name = str(argv[1]), str(argv[2])
        args = list(argv[3:]) if len(argv) > 3 else list(state.positional)
        index = state.optind
        var = state.get("OPTIND")
        if var is not None and isinstance(var.scalar, str) and var.scalar.isdigit():
            index = int(var.scalar)
        if index - 1 >= len(args) or not isinstance(args[index - 1], str):
            state.status = 1 if index - 1 >= len(args) else None
            return [state]
        word = args[index - 1]
        assert isinstance(word, str)
        if not word.startswith("-") or word in ("-", "--"):
            state.status = 1
            if word == "--":
                state.set("OPTIND", str(index + 1))
            return [state]
        letter = word[1]
        at = spec.find(letter)
        if at < 0:
            state.set(name, "?")
            state.set("OPTIND", str(index + 1))
            state.status = 0
            return [state]
        state.set(name, letter)
        if at + 1 < len(spec) and spec[at + 1] == ":":
            if len(word) > 2:
                state.set("OPTARG", word[2:])
                state.set("OPTIND", str(index + 1))
            elif index < len(args):
                state.set("OPTARG", args[index])
                state.set("OPTIND", str(index + 2))
            else:
                state.set(name, ":" if spec.startswith(":") else "?")
                state.set("OPTIND", str(index + 1))
        else:
            if len(word) > 2:  # -ab: one letter now, the rest next time (rare in launchers: read as given)
                state.set("OPTIND", str(index + 1))
            else:
                state.set("OPTIND", str(index + 1))
        state.status = 0
        return [state]

    def b_local(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        state.status = 0
        return [state]

    def b_trap(self, argv, state, node, stdin):  # type: ignore[no-untyped-def]
        state.status = 0
        return [state]

    b_wait = b_trap
    b_shopt = b_trap
    b_umask = b_trap
    b_hash = b_trap
    b_ulimit = b_trap

    def substitute(self, stmts: list[Node], state: State, node: Node) -> Value:
        """$(...): what it prints, when it only runs what the reader evaluates; else deferred."""
        inner = state.copy()
        inner.subshell += 1
        inner.capture = []
        ran_before = len(inner.ran)
        forks_before = self.forks
        self.forks = MAX_PATHS  # inside $(...) no fork: a condition the start decides makes the output decided at start
        try:
            results = self.stmts(stmts, [inner])
        finally:
            self.forks = forks_before
        result = results[0]
        state.ran += result.ran[ran_before:]
        if any("assumed" in t for t in result.taken[len(state.taken) :]):
            return self.deferred(node, "the command substitution")
        output = result.capture or []
        if any(isinstance(o, Deferred) for o in output):
            return self.deferred(node, "the command substitution")
        return "".join(str(o) for o in output).rstrip("\n")


BUILTINS = frozenset(
    [
        ":",
        "true",
        "false",
        "test",
        "[",
        "echo",
        "printf",
        "cat",
        "tee",
        "pwd",
        "basename",
        "dirname",
        "export",
        "unset",
        "shift",
        "set",
        "cd",
        "pushd",
        "popd",
        "exit",
        "return",
        "break",
        "continue",
        "source",
        ".",
        "eval",
        "read",
        "mapfile",
        "readarray",
        "getopts",
        "local",
        "trap",
        "wait",
        "shopt",
        "umask",
        "hash",
        "ulimit",
    ]
)


QUERIES = frozenset({"grep", "egrep", "fgrep", "pgrep", "pidof", "cmp", "diff"})


def grep_known(argv: list[Value], text: str) -> int | None:
    """grep's status on known input: 0 a line matches, 1 none; None where the options or the pattern are ones
    the reader does not follow (a basic regular expression with \\( or \\{, a pattern file...)."""
    if not all(isinstance(a, str) for a in argv) or posixpath.basename(str(argv[0])) not in ("grep", "egrep", "fgrep"):
        return None
    flags, patterns_, i = set(), [], 1
    words = [str(a) for a in argv]
    extended, fixed = words[0].endswith("egrep"), words[0].endswith("fgrep")
    while i < len(words):
        w = words[i]
        if w == "-e" and i + 1 < len(words):
            patterns_.append(words[i + 1])
            i += 2
            continue
        if w.startswith("-") and len(w) > 1 and not w.startswith("--"):
            for c in w[1:]:
                if c not in "qsiEFxvwc":
                    return None
                flags.add(c)
        elif w.startswith("--"):
            return None
        elif not patterns_ and "e" not in flags:
            patterns_.append(w)
        else:
            return None  # a file operand: grep reads the file, not its input
        i += 1
    if not patterns_:
        return None
    extended, fixed = extended or "E" in flags, fixed or "F" in flags
    compiled = []
    for pat in patterns_:
        if fixed:
            body = re.escape(pat)
        elif extended or not re.search(r"[\\+?|(){}]", pat):
            body = pat
        else:
            return None
        if "w" in flags:
            body = rf"(?<!\w)(?:{body})(?!\w)"
        if "x" in flags:
            body = rf"^(?:{body})$"
        try:
            compiled.append(re.compile(body, re.I if "i" in flags else 0))
        except re.error:
            return None
    lines = text.split("\n")
    lines = lines[:-1] if lines and lines[-1] == "" else lines
    hit = any(any(c.search(ln) for c in compiled) != ("v" in flags) for ln in lines)
    return 0 if hit else 1


def _queries(argv: list[Value]) -> bool:
    """A command whose status is an answer (found or not), not success: grep and its kin, also as the last
    stage of a command run on another node (`ssh HOST "docker ps | grep -q NAME"`)."""
    name = argv[0]
    if not isinstance(name, str):
        return False
    base = posixpath.basename(name)
    if base in QUERIES:
        return True
    if base == "ssh" and isinstance(argv[-1], str) and len(argv) > 2:
        last = re.split(r"\|\|?|&&|;", argv[-1])[-1].split()
        return bool(last) and posixpath.basename(last[0]) in QUERIES
    return False


def ifs_fields(text: str, ifs: str) -> list[tuple[str, int]]:
    """The fields bash's word splitting makes of `text` by `ifs`, each with where it starts: IFS whitespace
    around the text is dropped, a run of it is one separator, and so is a non-space IFS character with the
    whitespace beside it (`a , b` is two fields, `a,,b` three, `a,b,` two)."""
    if ifs == "":
        return [(text, 0)] if text else []
    white = {c for c in ifs if c in " \t\n"}
    fields: list[tuple[str, int]] = []
    i, n = 0, len(text)
    while i < n and text[i] in white:
        i += 1
    start, cur = i, ""
    while i < n:
        c = text[i]
        if c in ifs:
            j = i
            while j < n and text[j] in white:
                j += 1
            if j < n and text[j] in ifs and text[j] not in white and (j == i or text[i] in white):
                j += 1  # whitespace, then one non-space separator
            elif text[i] not in white:
                j = i + 1
            while j < n and text[j] in white:
                j += 1
            fields.append((cur, start))
            cur, start, i = "", j, j
            continue
        cur += c
        i += 1
    if cur:
        fields.append((cur, start))
    return fields


def _loop_key(state: State) -> tuple[object, ...]:
    """What decides a loop's next turn: the variables, the arguments, the folder (not the commands run)."""
    return (
        tuple(sorted(state.globals.items())),
        tuple(tuple(sorted(f.items())) for f in state.frames),
        tuple(state.positional),
        state.cwd,
        state.optind,
    )


def unwrap(words: list[Value], takes_value: set[str], duration: bool) -> list[Value]:
    """The command a wrapper (nohup, sudo, timeout...) runs: its words after the wrapper's own options."""
    i = 0
    while i < len(words) and isinstance(words[i], str) and str(words[i]).startswith("-"):
        if words[i] in takes_value:
            i += 1
        i += 1
    if duration and i < len(words):
        i += 1  # timeout's DURATION
    return words[i:]


def test_words(words: list[Value], state: State, file_text: Callable[[str], str | None] | None = None) -> bool | None:
    """`test`/`[ ]` on its words, by POSIX's rules for how many there are."""
    if any(isinstance(w, Deferred) for w in words):
        return None
    w = [str(x) for x in words]
    if not w:
        return False
    if w[0] == "!" and len(w) > 1:
        inner = test_words(words[1:], state, file_text)
        return None if inner is None else not inner
    if "-a" in w[1:-1] or "-o" in w[1:-1]:
        for op in ("-o", "-a"):
            if op in w[1:-1]:
                at = w.index(op, 1)
                x, y = test_words(words[:at], state, file_text), test_words(words[at + 1 :], state, file_text)
                if x is None or y is None:
                    return None
                return (x or y) if op == "-o" else (x and y)
    if len(w) == 1:
        return w[0] != ""
    if len(w) == 2:
        op, arg = w
        if op == "-z":
            return arg == ""
        if op == "-n":
            return arg != ""
        if op in patterns.FILE_TESTS or op == "-e":
            text = state.files.get(arg) if file_text is None else file_text(arg)
            if (op in ("-e", "-f", "-r") and text is not None) or (op == "-s" and text):
                return True  # a file the script wrote itself, or one the reading was given
            return None  # a file on the node: the start decides
        return None
    if len(w) == 3:
        a, op, b = w
        if op in ("=", "=="):
            return a == b
        if op == "!=":
            return a != b
        from gb10check.deployment.shell.expand import binary_test

        return binary_test(op, a, b)
    if w[0] == "(" and w[-1] == ")":
        return test_words(words[1:-1], state, file_text)
    return None


def printf(fmt: str, args: list[str]) -> str:
    """printf FORMAT ARGS: %s %d %i %x %o %c %b %q %%, with flags and widths; the format reused for more args."""
    spec = re.compile(r"%(?P<flags>[-+ 0#]*)(?P<width>\d*)(?:\.(?P<prec>\d+))?(?P<conv>[sdiuxXocbqf%])")
    out, queue = [], list(args)
    while True:
        used = False

        def one(m: re.Match[str]) -> str:
            nonlocal used
            conv = m["conv"]
            if conv == "%":
                return "%"
            used = True
            arg = queue.pop(0) if queue else ""
            head = "%" + m["flags"] + m["width"] + (f".{m['prec']}" if m["prec"] else "")
            if conv in "diuxXo":
                number = patterns.parse_int(arg) if arg else 0
                return (head + ("d" if conv in "iu" else conv)) % (number or 0)
            if conv == "f":
                try:
                    return (head + "f") % float(arg or 0)
                except ValueError:
                    return (head + "f") % 0.0
            if conv == "c":
                return arg[:1]
            if conv == "b":
                return patterns.ansi_c(arg)
            if conv == "q":
                return arg if re.fullmatch(r"[\w@%+=:,./-]+", arg) else "'" + arg.replace("'", "'\\''") + "'"
            return (head + "s") % arg

        out.append(spec.sub(one, patterns.ansi_c(fmt)))
        if not queue or not used:
            break
    return "".join(out)


def read(
    text: str | Script,
    *,
    what: str,
    env: dict[str, Value],
    arguments: tuple[Value, ...] = (),
    arg0: str = "bash",
    dialect: str = "bash",
    files: Files | None = None,
    env_complete: bool = True,
    env_missing: str = "",
    depth: int = 0,
    cwd: Value = "",
) -> Reading:
    """Every path through `text` run by `dialect` with `env` (all exported) and its arguments; each path's
    commands, the conditions decided at start it took, and what it could not evaluate."""
    script = text if isinstance(text, Script) else syntax.parse(text, what)
    reader = Reader(script, dialect=dialect, files=files, env_complete=env_complete, env_missing=env_missing)
    reader.depth = depth
    state = State({k: Var(v, True) for k, v in env.items()}, list(arguments), arg0, cwd=cwd)
    if dialect not in POSIX_SHELLS and "BASH_SOURCE" not in env:  # bash: the script as it was invoked
        state.set("BASH_SOURCE", [arg0])
    paths = []
    for end in reader.stmts(script.stmts, [state]):
        ended = "end" if end.flow in (None, "return") else "exec" if end.flow == "exec" else f"exit {end.status}"
        paths.append(Path(tuple(end.ran), tuple(end.taken), ended, tuple(end.notes)))
    return Reading(tuple(paths), what)
