"""Word expansion as bash does it, on one path's state: quotes, parameters (every `${...}` form but the
ones that ask the terminal), arithmetic, command substitution of what the reader can evaluate, field
splitting and "$@"; a value only the start decides stays Deferred, named where it came from."""

from __future__ import annotations

import re
from typing import Any

from gb10check.deployment.shell import patterns
from gb10check.deployment.shell.state import State, Var
from gb10check.deployment.shell.syntax import Node, Script, line
from gb10check.deployment.shell.values import Deferred, Value, first_deferred
from gb10check.deployment.shell.values import pieces as parts_of
from gb10check.errors import ParseError

__all__ = [
    "IFS",
    "Expander",
    "Piece",
    "assigned_names",
    "binary_test",
    "clip",
    "dq_unescape",
    "join",
    "replace",
    "split",
    "trim",
    "unary_test",
    "unescape",
]

IFS = " \t\n"
_BREAK = object()  # between the words of "$@" inside one quoted word


class Piece:
    """Part of a word before splitting: text (or a deferred value), whether quoting protects it from
    splitting, and whether it came from an expansion (only those are split)."""

    __slots__ = ("expanded", "quoted", "text")

    def __init__(self, text: Value, quoted: bool, expanded: bool) -> None:
        self.text, self.quoted, self.expanded = text, quoted, expanded


class Expander:
    """The expansion half of the reader (gb10check/deployment/shell/walk.py's Reader is the other)."""

    script: Script
    env_complete: bool
    env_missing: str  # why an unset name may still be set when the environment is not complete

    # -- provided by the reader -------------------------------------------------------------------------
    def substitute(self, stmts: list[Node], state: State, node: Node) -> Value:  # pragma: no cover - abstract
        raise NotImplementedError

    def fail(self, node: Node | None, detail: str) -> ParseError:  # pragma: no cover - abstract
        raise NotImplementedError

    def file_text(self, path: str, state: State) -> str | None:  # pragma: no cover - abstract
        """A file's text on the node as the reader knows it (written by the script, or given), else None."""
        raise NotImplementedError

    # -- words --------------------------------------------------------------------------------------------
    def fields(self, word: Node, state: State) -> list[Value]:
        """The words one argument becomes (braces expanded, split, "$@" spread, empty unquoted expansions
        gone)."""
        out: list[Value] = []
        for one in self.braces(word):
            out += split(self.pieces(one, state, quoted=False, first=True))
        return out

    def braces(self, word: Node) -> list[Node]:
        """bash's brace expansion, before every other (`{1..60}`, `{a,b}x`): the word once per alternative.
        Only in an unquoted literal part of the word, as bash; sh (dash) has none."""
        if getattr(self, "posix", False):
            return [word]
        parts = word.get("Parts") or []
        for i, part in enumerate(parts):
            if part.get("Type") != "Lit":
                continue
            found = patterns.brace(part.get("Value", ""))
            if found is None:
                continue
            start, end, alternatives = found
            text = part.get("Value", "")
            words: list[Node] = []
            for alt in alternatives:
                lit = {**part, "Value": text[:start] + alt + text[end:]}
                words += self.braces({**word, "Parts": [*parts[:i], lit, *parts[i + 1 :]]})
                if len(words) > patterns.MAX_BRACE_WORDS:
                    raise self.fail(word, f"the brace expansion makes more than {patterns.MAX_BRACE_WORDS} words")
            return words
        return [word]

    def fields_of(self, words: list[Node], state: State) -> list[Value]:
        out: list[Value] = []
        for word in words:
            out += self.fields(word, state)
        return out

    def value(self, word: Node | None, state: State, *, assignment: bool = False) -> Value:
        """A word as one value, not split (an assignment's value, a case subject, a here-string)."""
        if word is None:
            return ""
        pieces = self.pieces(word, state, quoted=False, first=True, assignment=assignment)
        return join([Piece(" ", True, False) if p is _BREAK else p for p in pieces], "")

    def pieces(
        self,
        word: Node,
        state: State,
        *,
        quoted: bool,
        first: bool = False,
        assignment: bool = False,
        glob: bool = False,
    ) -> list[Any]:
        out: list[Any] = []
        parts = word.get("Parts") or []
        for i, part in enumerate(parts):
            kind = part.get("Type")
            if kind == "Lit":
                text = part.get("Value", "")
                if not quoted:
                    if first and i == 0 and text.startswith("~"):
                        out.append(Piece(self.tilde(text, state), True, False))
                        continue
                    if assignment and ":~" in text:
                        text = text.replace(":~/", ":" + str(self.lookup("HOME", state) or "~") + "/")
                    out.append(Piece(text if glob else unescape(text), False, False))
                else:
                    out.append(Piece(dq_unescape(text), True, False))
            elif kind == "SglQuoted":
                text = part.get("Value", "")
                out.append(Piece(patterns.ansi_c(text) if part.get("Dollar") else text, True, False))
            elif kind == "DblQuoted":
                inner = self.pieces(part, state, quoted=True, glob=glob)
                spread = any(self._spreads(p) for p in part.get("Parts") or [])
                out += inner if inner or spread else [Piece("", True, False)]  # "$@" of nothing is no word
            elif kind == "ParamExp":
                out += self.param(part, state, quoted)
            elif kind == "CmdSubst":
                out.append(Piece(self.substitute(part.get("Stmts") or [], state, part), quoted, True))
            elif kind == "ArithmExp":
                value = self.arithmetic(part.get("X"), state, part)
                out.append(Piece(str(value) if isinstance(value, int) else value, quoted, True))
            elif kind == "ProcSubst":
                out.append(Piece(self.deferred(part, "the process substitution"), True, False))
            elif kind == "ExtGlob":
                out.append(Piece(f"{part.get('Op', '')}{(part.get('Pattern') or {}).get('Value', '')})", False, False))
            else:
                raise self.fail(part, f"cannot read the word part {kind}")
        return out

    def deferred(self, node: Node, what: str) -> Deferred:
        text = self.script.source(node) or what
        return Deferred(f"{what} `{clip(text)}` (line {line(node)})", f"<{clip(text, 60)}>")

    def tilde(self, text: str, state: State) -> Value:
        prefix, slash, rest = text.partition("/")
        if prefix == "~":
            home = self.lookup("HOME", state)
            if home is None:
                return Deferred("the home directory `~` (HOME is not in the environment)", "<~>").placed(
                    "", slash + rest
                )
            if isinstance(home, Deferred):
                return home.placed("", slash + unescape(rest))
            return home + slash + unescape(rest)
        return Deferred(f"the home directory `{prefix}` of a user", f"<{prefix}>").placed("", slash + rest)

    # -- parameters -----------------------------------------------------------------------------------
    def lookup(self, name: str, state: State) -> Value | None:
        """A scalar's value; None when unset. An unset name with an environment not read whole is deferred."""
        if name.isdigit():
            n = int(name)
            if n == 0:
                return state.arg0
            return state.positional[n - 1] if n <= len(state.positional) else None
        if name == "#":
            return str(len(state.positional))
        if name == "?":
            return self.status(state)
        if name == "-":
            return "hB"
        if name in ("$", "!", "_", "RANDOM", "SECONDS", "LINENO", "PPID", "BASHPID", "EPOCHSECONDS"):
            return Deferred(f"`${name}` (the shell's own, at start)", f"<${name}>")
        var = state.get(name)
        if var is not None and var.assigned:
            return var.scalar
        if name == "PWD":
            return state.cwd or Deferred("the working directory", "<$PWD>")
        if name == "IFS":
            return IFS
        return self.missing(name, state)

    def missing(self, name: str, state: State) -> Value | None:
        if state.opaque:
            return Deferred(f"{name}, which {state.opaque} may set", f"<${name}>")
        if not self.env_complete:
            return Deferred(f"{name}, not in the environment read ({self.env_missing})", f"<${name}>")
        return None

    def status(self, state: State) -> Value:
        return str(state.status) if state.status is not None else Deferred("`$?` (an exit status)", "<$?>")

    def param(self, node: Node, state: State, quoted: bool) -> list[Any]:
        name = (node.get("Param") or {}).get("Value", "")
        index = node.get("Index")
        if name in ("@", "*") or (index is not None and self.index_word(index) in ("@", "*")):
            values = self.many(name, index, state, node)
            if node.get("Length"):
                return [Piece(str(len(values)), quoted, True)]
            if node.get("Exp") or node.get("Repl") or node.get("Slice"):
                if node.get("Slice"):
                    values = self.slice_list(values, node, state, name in ("@", "*"))
                else:
                    values = [self.operate(node, v, state) or "" for v in values]
            star = name == "*" or self.index_word(index) == "*"
            if quoted and not star:  # "$@": each one a word
                out: list[Any] = []
                for i, v in enumerate(values):
                    if i:
                        out.append(_BREAK)
                    out.append(Piece(v, True, True))
                return out if values else []
            return [Piece(join(values, " " if not star else IFS[:1]), quoted, True)]
        if node.get("Excl") and not node.get("Names"):  # ${!NAME}: the variable NAME names
            target = self.lookup(name, state)
            if target is None or isinstance(target, Deferred):
                return [Piece(self.deferred(node, "the indirect expansion") if target else "", quoted, True)]
            name = target
        if node.get("Names"):
            prefix = name
            names = sorted(n for n in {*state.globals, *(k for f in state.frames for k in f)} if n.startswith(prefix))
            return [Piece(" ".join(names), quoted, True)]
        value = self.scalar(name, index, state, node)
        if node.get("Length"):
            return [
                Piece(str(len(value)) if isinstance(value, str) else self.deferred(node, "the length"), quoted, True)
            ]
        if node.get("Slice"):
            value = self.slice_scalar(value, node, state)
        elif node.get("Repl") or node.get("Exp"):
            value = self.operate(node, value, state)
        return [Piece("" if value is None else value, quoted, True)]

    def _spreads(self, part: Node) -> bool:
        """ "$@" or "${ARR[@]}": as many words as there are values (none for none)."""
        if part.get("Type") != "ParamExp" or part.get("Length"):
            return False
        name = (part.get("Param") or {}).get("Value", "")
        return name == "@" or self.index_word(part.get("Index")) == "@"

    @staticmethod
    def index_word(index: Node | None) -> str | None:
        if index is None:
            return None
        parts = index.get("Parts") or []
        if len(parts) == 1 and parts[0].get("Type") == "Lit":
            return str(parts[0].get("Value"))
        return None

    def many(self, name: str, index: Node | None, state: State, node: Node) -> list[Value]:
        if name in ("@", "*"):
            return list(state.positional)
        var = state.get(name)
        if var is None or not var.assigned:
            missing = self.missing(name, state)
            return [missing] if missing is not None else []
        if isinstance(var.value, list):
            return list(var.value)
        if isinstance(var.value, dict):
            return list(var.value.values())
        return [var.value]

    def scalar(self, name: str, index: Node | None, state: State, node: Node) -> Value | None:
        if index is None:
            return self.lookup(name, state)
        var = state.get(name)
        if var is None or not var.assigned:
            return self.missing(name, state)
        if isinstance(var.value, dict):
            key = self.value(index, state) if index.get("Type") == "Word" else self.arithmetic(index, state, node)
            return var.value.get(str(key)) if isinstance(key, (str, int)) else self.deferred(node, "an array element")
        at = self.arithmetic(index, state, node)
        if isinstance(at, Deferred):
            return at
        values = var.value if isinstance(var.value, list) else [var.value]
        return values[at] if -len(values) <= at < len(values) else None

    def operate(self, node: Node, value: Value | None, state: State) -> Value | None:
        """${NAME:-word} and the other operators on one value (None: unset)."""
        repl, exp = node.get("Repl"), node.get("Exp")
        name = (node.get("Param") or {}).get("Value", "")
        if repl is not None:
            if value is None:
                return None
            orig = self.pattern(repl.get("Orig"), state)
            with_ = self.value(repl.get("With"), state)
            if isinstance(value, Deferred) or isinstance(orig, Deferred) or isinstance(with_, Deferred):
                return self.deferred(node, "the replacement")
            return replace(value, orig, with_, bool(repl.get("All")))
        assert exp is not None
        op = exp.get("Op", "")
        if op in (":-", "-", ":=", "=", ":+", "+", ":?", "?"):
            unset = value is None or (op.startswith(":") and value == "")
            if isinstance(value, Deferred) and op.startswith(":"):  # whether it is empty is decided at start too
                return value if op in (":-", ":=", ":?") else self.deferred(node, "the expansion")
            if op in (":+", "+"):
                return "" if unset else self.value(exp.get("Word"), state)
            if not unset:
                return value
            word = self.value(exp.get("Word"), state)
            if op in (":=", "="):
                state.set(name, word)
            if op in (":?", "?"):
                said = word if isinstance(word, str) and word else "parameter null or not set"
                raise self.fail(node, f"{name} is not set, so bash stops here ({said})")
            return word
        if value is None:
            return None
        if isinstance(value, Deferred):
            return self.deferred(node, "the expansion")
        if op in ("#", "##", "%", "%%"):
            pattern = self.pattern(exp.get("Word"), state)
            if isinstance(pattern, Deferred):
                return self.deferred(node, "the expansion")
            return trim(value, pattern, op)
        if op in ("^^", ",,", "^", ","):
            upper = op.startswith("^")
            whole = len(op) == 2
            if whole:
                return value.upper() if upper else value.lower()
            return (value[:1].upper() if upper else value[:1].lower()) + value[1:]
        if op == "@":
            how = self.value(exp.get("Word"), state)
            if how == "Q":
                return "'" + value.replace("'", "'\\''") + "'"
            if how in ("U", "u", "L"):
                return value.upper() if how == "U" else value.lower() if how == "L" else value[:1].upper() + value[1:]
            return value
        raise self.fail(node, f"cannot follow the expansion `{clip(self.script.source(node))}`")

    def slice_scalar(self, value: Value | None, node: Node, state: State) -> Value | None:
        if value is None:
            return None
        start, length = self.slice_bounds(node, state)
        if isinstance(value, Deferred) or start is None:
            return self.deferred(node, "the substring")
        if start < 0:
            start = max(len(value) + start, 0)
        if length is None:
            return value[start:]
        if isinstance(length, Deferred):
            return self.deferred(node, "the substring")
        end = start + length if length >= 0 else len(value) + length
        return value[start:end]

    def slice_list(self, values: list[Value], node: Node, state: State, positional: bool) -> list[Value]:
        start, length = self.slice_bounds(node, state)
        if start is None or isinstance(length, Deferred):
            return [self.deferred(node, "the slice")]
        if positional and start > 0:
            start -= 1  # ${@:1} starts at $1
        elif positional and start == 0:
            values = [state.arg0, *values]
        if start < 0:
            start = max(len(values) + start, 0)
        return values[start:] if length is None else values[start : start + max(length, 0)]

    def slice_bounds(self, node: Node, state: State) -> tuple[int | None, int | Deferred | None]:
        sl = node.get("Slice") or {}
        start = self.arithmetic(sl.get("Offset"), state, node) if sl.get("Offset") else 0
        length = self.arithmetic(sl.get("Length"), state, node) if sl.get("Length") else None
        return (start if isinstance(start, int) else None), length

    def pattern(self, word: Node | None, state: State) -> str | Deferred:
        """A word as a glob pattern's regular expression: quoted parts literal, the rest glob."""
        if word is None:
            return ""
        out = []
        for piece in self.pieces(word, state, quoted=False, glob=True):
            if piece is _BREAK:
                out.append(" ")
                continue
            if isinstance(piece.text, Deferred):
                return piece.text
            out.append("".join("\\" + c for c in piece.text) if piece.quoted else piece.text)
        return patterns.glob_regex("".join(out))  # one pattern: a bracket may hold quoted characters

    # -- arithmetic ----------------------------------------------------------------------------------
    def arithmetic(self, expr: Node | None, state: State, at: Node) -> int | Deferred:
        try:
            return self._arith(expr, state, at, 0)
        except _ArithDeferred as exc:
            return exc.value

    def _arith(self, expr: Node | None, state: State, at: Node, depth: int) -> int:
        if expr is None:
            return 0
        if depth > 64:
            raise self.fail(at, "the arithmetic nests deeper than a launch script does")
        kind = expr.get("Type")
        if kind == "ParenArithm":
            return self._arith(expr.get("X"), state, at, depth + 1)
        if kind == "Word":
            return self._operand(expr, state, at, depth)
        if kind == "UnaryArithm":
            op, operand = expr.get("Op"), expr.get("X")
            if op in ("++", "--"):
                name = self._name_of(operand, at)
                old = self._var_number(name, state, at, depth)
                new = patterns.wrap(old + (1 if op == "++" else -1))
                state.set(name, str(new))
                return old if expr.get("Post") else new
            x = self._arith(operand, state, at, depth + 1)
            return {"!": int(not x), "~": ~x, "-": patterns.wrap(-x), "+": x}[str(op)]
        if kind == "BinaryArithm":
            op = expr.get("Op", "")
            if op == "?":
                cond = self._arith(expr.get("X"), state, at, depth + 1)
                branches = expr.get("Y") or {}
                chosen = branches.get("X") if cond else branches.get("Y")
                return self._arith(chosen, state, at, depth + 1)
            if op.endswith("=") and op not in ("==", "!=", "<=", ">="):
                name = self._name_of(expr.get("X"), at)
                y = self._arith(expr.get("Y"), state, at, depth + 1)
                value = (
                    y
                    if op == "="
                    else patterns.binary(op[:-1], self._var_number(name, state, at, depth), y, self._what(at))
                )
                state.set(name, str(value))
                return value
            if op in ("&&", "||"):
                x = self._arith(expr.get("X"), state, at, depth + 1)
                if (op == "&&" and not x) or (op == "||" and x):
                    return int(bool(x))
                return int(bool(self._arith(expr.get("Y"), state, at, depth + 1)))
            x = self._arith(expr.get("X"), state, at, depth + 1)
            y = self._arith(expr.get("Y"), state, at, depth + 1)
            return patterns.binary(op, x, y, self._what(at))
        raise self.fail(at, f"cannot evaluate the arithmetic `{clip(self.script.source(at))}`")

    def _what(self, at: Node) -> str:
        return f"`{clip(self.script.source(at))}` (line {line(at)})"

    def _name_of(self, word: Node | None, at: Node) -> str:
        parts = (word or {}).get("Parts") or []
        if (
            len(parts) == 1
            and parts[0].get("Type") == "Lit"
            and re.fullmatch(r"[A-Za-z_]\w*", parts[0].get("Value", ""))
        ):
            return str(parts[0]["Value"])
        raise self.fail(at, f"cannot assign to `{clip(self.script.source(word or at))}` in an arithmetic expansion")

    def _operand(self, word: Node, state: State, at: Node, depth: int) -> int:
        parts = word.get("Parts") or []
        if len(parts) == 1 and parts[0].get("Type") == "Lit":
            text = parts[0].get("Value", "")
            if re.fullmatch(r"[A-Za-z_]\w*", text):
                return self._var_number(text, state, at, depth)
            number = patterns.parse_int(text)
            if number is None:
                raise self.fail(at, f"`{text}` is not a number bash reads in `{clip(self.script.source(at))}`")
            return number
        value = self.value(word, state)
        if isinstance(value, Deferred):
            raise _ArithDeferred(
                Deferred(
                    f"the arithmetic `{clip(self.script.source(at))}` ({value.why})",
                    f"<$(( {clip(self.script.source(at), 40)} ))>",
                )
            )
        return self._text_number(value, state, at, depth)

    def _var_number(self, name: str, state: State, at: Node, depth: int) -> int:
        value = self.lookup(name, state)
        if value is None or value == "":
            return 0  # bash: an unset or empty name is 0 in arithmetic
        if isinstance(value, Deferred):
            raise _ArithDeferred(
                Deferred(
                    f"the arithmetic `{clip(self.script.source(at))}` ({value.why})",
                    f"<$(( {clip(self.script.source(at), 40)} ))>",
                )
            )
        return self._text_number(value, state, at, depth)

    def _text_number(self, text: str, state: State, at: Node, depth: int) -> int:
        number = patterns.parse_int(text)
        if number is not None:
            return number
        if depth > 8 or not re.fullmatch(r"[\w\s+\-*/%()<>=!&|^~?:,]+", text):
            raise self.fail(at, f"{text!r} is not a number in `{clip(self.script.source(at))}`")
        from gb10check.deployment.shell import syntax  # a variable holding an expression: bash evaluates it

        tree = syntax.parse(f"(( {text} ))", self.script.what)
        inner = tree.stmts[0].get("Cmd", {}).get("X") if tree.stmts else None
        return self._arith(inner, state, at, depth + 1)

    # -- conditions: [[ ... ]] ------------------------------------------------------------------------------
    def test_expr(self, expr: Node | None, state: State) -> bool | None:
        """A [[ ]] expression: True, False, or None when the start decides it (a node's file, a deferred value)."""
        if expr is None:
            return False
        kind = expr.get("Type")
        if kind == "ParenTest":
            return self.test_expr(expr.get("X"), state)
        if kind == "Word":
            value = self.value(expr, state)
            return None if isinstance(value, Deferred) else value != ""
        if kind == "UnaryTest":
            op = expr.get("Op", "")
            if op == "!":
                inner = self.test_expr(expr.get("X"), state)
                return None if inner is None else not inner
            value = self.value(expr.get("X"), state)
            return unary_test(op, value, state, self)
        if kind == "BinaryTest":
            op = expr.get("Op", "")
            if op in ("&&", "||"):
                x = self.test_expr(expr.get("X"), state)
                if x is not None and (x if op == "||" else not x):
                    return x
                y = self.test_expr(expr.get("Y"), state)
                if x is None:
                    return None if y is None or y == (op == "&&") else y
                return y
            left = self.value(expr.get("X"), state)
            if op in ("==", "=", "!="):
                pattern = self.pattern(expr.get("Y"), state)
                if isinstance(left, Deferred) or isinstance(pattern, Deferred):
                    return None
                hit = re.fullmatch(pattern, left, re.S) is not None
                return hit if op != "!=" else not hit
            right = self.value(expr.get("Y"), state)
            if isinstance(left, Deferred) or isinstance(right, Deferred):
                return None
            if op == "=~":
                try:
                    return re.search(right, left) is not None
                except re.error:
                    return None
            return binary_test(op, left, right)
        return None


class _ArithDeferred(Exception):
    def __init__(self, value: Deferred) -> None:
        self.value = value


def unary_test(op: str, value: Value, state: State, expander: Expander) -> bool | None:
    if isinstance(value, Deferred):
        return None
    if op == "-z":
        return value == ""
    if op == "-n":
        return value != ""
    if op == "-v":
        return state.get(value) is not None
    if op in patterns.FILE_TESTS or op in ("-e", "-o", "-R"):
        if op in ("-e", "-f", "-r") and expander.file_text(value, state) is not None:
            return True  # a file the script wrote itself, or one the reading was given
        if op == "-s" and expander.file_text(value, state):
            return True
        return None  # a file on the node: the start decides
    return None


def binary_test(op: str, left: str, right: str) -> bool | None:
    if op in patterns.NUMERIC_TESTS:
        a, b = patterns.parse_int(left), patterns.parse_int(right)
        if a is None or b is None:
            return False  # bash: "integer expression expected", status 2: not true
        return patterns.numeric(op, a, b)
    if op == "<":
        return left < right
    if op == ">":
        return left > right
    return None  # -nt, -ot, -ef: files on the node


# -- pure helpers --------------------------------------------------------------------------------------------


def unescape(text: str) -> str:
    """An unquoted word's backslashes: `\\x` is x, a backslash-newline is nothing."""
    return re.sub(r"\\(.)", r"\1", text.replace("\\\n", ""), flags=re.S)


def dq_unescape(text: str) -> str:
    """Inside double quotes, a backslash escapes only $ ` " \\ and a newline."""
    return re.sub(r"\\([$`\"\\\n])", lambda m: "" if m[1] == "\n" else m[1], text)


def clip(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def join(values: list[Any], sep: str) -> Value:
    """Values as one: text, or a deferred value shown in place when any part is deferred."""
    texts = [v.text if isinstance(v, Piece) else v for v in values]
    deferred = first_deferred(texts)
    if deferred is None:
        return sep.join(str(t) for t in texts)
    spaced: list[Value] = []
    for i, t in enumerate(texts):
        spaced += [sep, t] if i else [t]
    return Deferred(
        deferred.why,
        sep.join(str(t) for t in texts),
        any(isinstance(t, Deferred) and t.splits for t in texts),
        parts_of([t if isinstance(t, Deferred) else str(t) for t in spaced]),
    )


def split(pieces: list[Any]) -> list[Value]:
    """Field splitting: unquoted expansions split at IFS whitespace; empty unquoted expansions vanish."""
    fields: list[list[Value]] = []
    current: list[Value] = []
    has = False  # the current field has something (a quoted empty string counts)
    items: list[Any] = []
    for piece in pieces:  # an unquoted deferred value made of known text and deferred parts: each on its own
        if piece is not _BREAK and piece.expanded and not piece.quoted and isinstance(piece.text, Deferred):
            items += [(p, True, False) for p in piece.text.parts] or [(piece.text, True, False)]
        else:
            items.append(piece if piece is _BREAK else (piece.text, piece.expanded and not piece.quoted, piece.quoted))
    for item in items:
        if item is _BREAK:
            fields.append(current)
            current, has = [], False
            continue
        text, unquoted, quoted = item
        if not unquoted:
            current.append(text)
            has = has or quoted or text != ""
            continue
        if isinstance(text, Deferred):
            current.append(Deferred(text.why, str(text), True))
            has = True
            continue
        words = re.split(f"[{re.escape(IFS)}]+", text)
        if words[0] == "" and len(words) > 1:  # leading IFS: ends the field so far
            if has:
                fields.append(current)
            current, has = [], False
            words = words[1:]
        for j, w in enumerate(words):
            if j:
                if has:
                    fields.append(current)
                current, has = [], False
            if w:
                current.append(w)
                has = True
    if has:
        fields.append(current)
    out: list[Value] = []
    for field in fields:
        deferred = first_deferred(field)
        if deferred is None:
            out.append("".join(str(f) for f in field))
        else:
            splits = any(isinstance(f, Deferred) and f.splits for f in field)
            out.append(Deferred(deferred.why, "".join(str(f) for f in field), splits, parts_of(field)))
    return out


def trim(value: str, pattern: str, op: str) -> str:
    """${NAME#pattern} and its kin: the shortest or longest match removed from the front or the back."""
    sizes = range(len(value) + 1)
    if op in ("#", "##"):
        order = sizes if op == "#" else reversed(sizes)
        for n in order:
            if re.fullmatch(pattern, value[:n], re.S):
                return value[n:]
        return value
    order = sizes if op == "%" else reversed(sizes)
    for n in order:
        if re.fullmatch(pattern, value[len(value) - n :], re.S):
            return value[: len(value) - n]
    return value


def replace(value: str, pattern: str, with_: str, every: bool) -> str:
    anchor = ""
    if pattern.startswith("\\#"):  # ${A/#p/r}: at the start (the pattern's `#` came out escaped)
        anchor, pattern = "^", pattern[2:]
    elif pattern.startswith("\\%"):
        anchor, pattern = "$", pattern[2:]
    if not pattern:
        return value
    if anchor == "^":
        m = re.match(f"(?:{pattern})", value, re.S)
        return with_ + value[m.end() :] if m else value
    if anchor == "$":
        for n in range(len(value) + 1):
            if re.fullmatch(pattern, value[n:], re.S):
                return value[:n] + with_
        return value
    greedy = re.compile(pattern, re.S)
    return greedy.sub(lambda _m: with_, value, count=0 if every else 1)


def assigned_names(var: Var | None) -> bool:
    return var is not None and var.assigned
