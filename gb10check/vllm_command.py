"""What a vLLM container's command runs on a given rank, read with bash's grammar (never executed).

The command is usually a bash script that branches on NODE_RANK. tree-sitter's bash grammar parses
it (quotes across lines, comments, continuations, `if/elif/else`, `case`); this module walks the
tree for one rank with the container's environment: the script's own assignments, `export`
(what vLLM really gets), `unset`, `exec`, a leading `~`. selftests/unit/test_script_differential.py
compares the walk with what real bash runs. What the grammar reads but this walk cannot follow (a function
or loop that runs vLLM or sets variables, a command substitution that decides an argument, a
condition it cannot evaluate) is a ParseError naming the construct. Pure.
"""

from __future__ import annotations

import contextlib
import fnmatch
import posixpath
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache

import tree_sitter
import tree_sitter_bash

from gb10check.compose import ComposeService
from gb10check.errors import ParseError
from gb10check.redact import redact

WHAT = "the container command"
BOOLEAN_FLAGS = frozenset(
    {
        "headless",
        "enable-prefix-caching",
        "no-enable-prefix-caching",
        "enable-auto-tool-choice",
        "trust-remote-code",
        "enforce-eager",
        "disable-log-requests",
        "enable-log-requests",
        "disable-log-stats",
        "enable-chunked-prefill",
        "no-enable-chunked-prefill",
        "disable-custom-all-reduce",
        "enable-expert-parallel",
        "async-scheduling",
    }
)
# constructs the walk cannot follow when they run vLLM or set variables (elsewhere they are skipped)
_OPAQUE = {
    "function_definition": "a function",
    "for_statement": "a for loop",
    "c_style_for_statement": "a for loop",
    "while_statement": "a while/until loop",
    "subshell": "a subshell",
}


@dataclass(frozen=True)
class VllmRun:
    """One `vllm serve` invocation: the model argument, the options (names normalised), and the
    environment vLLM gets (the container's, with what the script exports)."""

    model: str | None
    options: dict[str, str | None]  # "--max-model-len" -> "262144"; flags -> None
    argv: tuple[str, ...]
    environment: dict[str, str] = field(default_factory=dict)

    def has(self, option: str) -> bool:
        return option in self.options

    def value(self, option: str) -> str | None:
        return self.options.get(option)


@cache
def _parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


class _Unknown(str):
    """A value the walk cannot know (a command substitution): fine until it decides something."""

    __slots__ = ("construct",)
    construct: str

    def __new__(cls, construct: str) -> _Unknown:
        value = super().__new__(cls, f"<{construct}>")
        value.construct = construct
        return value


def _text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode()


def _line(node: tree_sitter.Node) -> int:
    return node.start_point[0] + 1


def _unreadable(detail: str, script: str) -> ParseError:
    """The script does what this reading cannot follow (or what bash itself refuses); `detail` quotes the
    script throughout (its words, conditions, expansions, values): masked whole, as a node's text."""
    return ParseError(WHAT, redact(detail), script, hint_ids=("container-script-unreadable",))


class _ScriptEnds(Exception):
    """`exec CMD` or `exit` ran: the walk stops where the shell would."""


class _Walk:
    def __init__(self, script: str, env: dict[str, str], arguments: tuple[str, ...] = ()) -> None:
        self.script = script
        self.arguments = arguments  # $0, $1, ...: the words after the script in `bash -c SCRIPT NAME ARGS`
        self.env = dict(env)  # exported: the container's environment, then the script's exports
        self.local: dict[str, str] = {}  # set by the script, not exported
        self.exported: set[str] = set()  # `export NAME` before NAME has a value
        self.runs: list[VllmRun] = []
        self.subshells = 0  # inside a pipeline's part: its `exec` or `exit` ends only that part

    def fail(self, node: tree_sitter.Node, detail: str) -> ParseError:
        return _unreadable(f"line {_line(node)}: {detail}", self.script)

    def lookup(self, name: str) -> str | None:
        if name.isdigit():
            return self.arguments[int(name)] if int(name) < len(self.arguments) else None
        if name in ("@", "*"):  # unquoted: the arguments, split again (as one text, split the same way)
            return " ".join(self.arguments[1:])
        if name == "#":
            return str(max(len(self.arguments) - 1, 0))
        return self.local.get(name, self.env.get(name))

    # -- statements --------------------------------------------------------------------------------
    def statements(self, node: tree_sitter.Node) -> None:
        for child in node.named_children:
            self.statement(child)

    def statement(self, node: tree_sitter.Node) -> None:
        kind = node.type
        if kind in ("comment", "test_command", "negated_command"):
            return
        if kind in ("compound_statement", "program"):
            self.statements(node)
        elif kind == "redirected_statement":
            self.statement(node.named_children[0])  # `vllm serve ... >log 2>&1`
        elif kind == "pipeline":  # `vllm serve ... | tee log`: each part runs, in a subshell of its own
            self.subshells += 1
            try:
                self.statements(node)
            finally:
                self.subshells -= 1
        elif kind == "list":
            self.and_or(node)
        elif kind == "variable_assignment":
            self.assign(node, export=False)
        elif kind == "variable_assignments":
            for child in node.named_children:
                self.assign(child, export=False)
        elif kind == "declaration_command":
            self.declare(node)
        elif kind == "unset_command":  # `unset A B`, `unset -v A`; `unset -f fn` removes functions
            words = [_text(c) for c in node.named_children]
            if not any(w.startswith("-") and "f" in w for w in words):
                for name in (w for w in words if not w.startswith("-")):
                    self.env.pop(name, None)
                    self.local.pop(name, None)
                    self.exported.discard(name)
        elif kind == "command":
            self.command(node)
        elif kind == "if_statement":
            self.if_statement(node)
        elif kind == "case_statement":
            self.case_statement(node)
        elif kind in _OPAQUE:
            if _contains_vllm(node) or _assigns(node):
                raise self.fail(node, f"{_OPAQUE[kind]} that runs vLLM or sets variables cannot be followed")
        else:
            if _contains_vllm(node):
                raise self.fail(node, f"`{node.type}` around `vllm serve` cannot be followed")

    def and_or(self, node: tree_sitter.Node) -> None:
        """`a && b` runs both on success; `a || b` runs b only when a fails, which is never assumed."""
        parts = node.named_children
        operator = next((_text(c) for c in node.children if not c.is_named), "&&")
        self.statement(parts[0])
        if operator == "&&":
            for part in parts[1:]:
                self.statement(part)
        elif any(_contains_vllm(p) for p in parts[1:]):
            raise self.fail(node, "`|| vllm serve` runs only when the command before it fails")

    def assign(self, node: tree_sitter.Node, *, export: bool) -> None:
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        if name_node is None or name_node.type != "variable_name":
            raise self.fail(node, f"cannot follow the assignment `{_text(node)}`")
        name = _text(name_node)
        value = "" if value_node is None else self.word(value_node, split=False)[0]
        if export or name in self.env or name in self.exported:  # an exported name: what children get
            self.env[name] = value
            self.local.pop(name, None)
        else:
            self.local[name] = value

    def declare(self, node: tree_sitter.Node) -> None:
        keyword = _text(node.children[0])
        options = [_text(c) for c in node.named_children if c.type == "word" and _text(c).startswith("-")]
        export = keyword == "export" or any("x" in o for o in options)
        for child in node.named_children:
            if child.type == "variable_assignment":
                self.assign(child, export=export)
            elif child.type == "variable_name" and export:
                name = _text(child)
                if name in self.local:
                    self.env[name] = self.local.pop(name)
                elif name not in self.env:
                    self.exported.add(name)

    def command(self, node: tree_sitter.Node) -> None:
        prefix: dict[str, str] = {}
        words: list[str] = []
        for child in node.named_children:
            if child.type == "variable_assignment":  # `NCCL_DEBUG=INFO vllm serve ...`: that command's env
                name = child.child_by_field_name("name")
                value = child.child_by_field_name("value")
                prefix[_text(name) if name else ""] = "" if value is None else self.word(value, split=False)[0]
            elif child.type == "command_name":
                words += self.word(child.named_children[0] if child.named_children else child)
            elif child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                continue
            else:
                words += self.word(child)
        # `exec CMD` replaces the shell and `exit` leaves it: nothing after them runs (`exec >log` alone does not)
        ends = (words[:1] == ["exec"] and len(words) > 1) or words[:1] == ["exit"]
        while words and words[0] == "exec":
            words = words[1:]
        if words and words[0] in ("source", ".") and len(words) > 1:
            raise self.fail(
                node,
                f"`{words[0]} {words[1]}` sets what a file inside the image says, which the suite cannot read "
                "(set those variables in the compose's environment instead)",
            )
        if words and words[0] == "eval" and any(re.search(r"\bvllm\b", w) for w in words[1:]):
            raise self.fail(node, "`eval` builds the vLLM command at run time: it cannot be followed")
        argv = _vllm_argv(words)
        if argv is not None:
            unknown = next((w for w in argv if isinstance(w, _Unknown)), None)
            if unknown is not None:
                raise self.fail(node, f"{unknown.construct} decides an argument of `vllm serve`")
            model, options = _vllm_options(argv)
            self.runs.append(VllmRun(model, options, tuple(argv), {**self.env, **prefix}))
        if ends and not self.subshells:
            raise _ScriptEnds

    # -- branches ------------------------------------------------------------------------------------
    def if_statement(self, node: tree_sitter.Node) -> None:
        """The first branch whose condition holds for this rank runs; the others never do."""
        branches = [_branch(node)] + [_branch(c) for c in node.children if c.type in ("elif_clause", "else_clause")]
        for cond, statements in branches:
            if cond is None or self.condition(cond):
                for statement in statements:
                    self.statement(statement)
                return

    def case_statement(self, node: tree_sitter.Node) -> None:
        subject_node = node.child_by_field_name("value")
        if subject_node is None:
            raise self.fail(node, "a case without a subject")
        subject = self.word(subject_node, split=False, strict=True)[0]
        for item in (c for c in node.named_children if c.type == "case_item"):
            patterns = [c for c in item.children_by_field_name("value")]
            if any(fnmatch.fnmatchcase(subject, self.word(p, split=False)[0]) for p in patterns):
                for statement in item.named_children:
                    if statement not in patterns and statement.type != "comment":
                        self.statement(statement)
                return

    def condition(self, node: tree_sitter.Node) -> bool:
        """`[ "$NODE_RANK" = 0 ]`, `[[ $NODE_RANK -eq 0 ]]`, `test -z "$X"`, `(( NODE_RANK == 0 ))`, with
        this rank's values."""
        what = _text(node).strip().rstrip(";").strip()
        if node.type == "negated_command" and node.named_children:  # `! [ ... ]`
            return not self.condition(node.named_children[0])
        if node.type == "list" and len(node.named_children) == 2:  # `[ a ] && [ b ]`, `[ a ] || [ b ]`
            operator = next((_text(c) for c in node.children if not c.is_named), "")
            first = self.condition(node.named_children[0])
            if operator == "&&":
                return first and self.condition(node.named_children[1])
            if operator == "||":
                return first or self.condition(node.named_children[1])
        if node.type == "compound_statement" and node.children and _text(node.children[0]) == "((":
            return self._arithmetic(node, what)
        inner = node
        if node.type == "test_command" and node.named_children:
            inner = node.named_children[0]
        elif node.type == "command":
            words = self.word_list(node.named_children, strict=True, what=what)
            if words[:1] == ["test"]:
                return self._compare(words[1:], what, node)
            raise self.fail(node, f"cannot evaluate the condition `{what}` for this rank")
        while inner.type == "parenthesized_expression" and inner.named_children:
            inner = inner.named_children[0]
        if inner.type == "binary_expression":
            left, right = inner.child_by_field_name("left"), inner.child_by_field_name("right")
            op = inner.child_by_field_name("operator")
            if left is None or right is None or op is None:
                raise self.fail(node, f"cannot evaluate the condition `{what}` for this rank")
            a = self.word(left, split=False, strict=True, what=what)[0]
            b = self.word(right, split=False, strict=True, what=what)[0]
            return self._compare([a, _text(op), b], what, node)
        if inner.type == "unary_expression":
            unary = _text(inner.children[0])
            operand = self.word(inner.named_children[-1], split=False, strict=True, what=what)[0]
            return self._compare([unary, operand], what, node)
        raise self.fail(node, f"cannot evaluate the condition `{what}` for this rank")

    def _arithmetic(self, node: tree_sitter.Node, what: str) -> bool:
        """`(( NODE_RANK == 0 ))`: one comparison of names and numbers (an unset name is never taken as 0)."""
        inner = node.named_children[0] if len(node.named_children) == 1 else None
        op = inner.child_by_field_name("operator") if inner is not None else None
        sides = [inner.child_by_field_name(f) for f in ("left", "right")] if inner is not None else []
        if inner is None or inner.type != "binary_expression" or op is None or _text(op) not in _ARITHMETIC:
            raise self.fail(node, f"cannot evaluate the condition `{what}` for this rank")
        values = []
        for side in sides:
            if side is not None and side.type == "variable_name":
                value = self.lookup(_text(side))
                if value is None:
                    raise self.fail(
                        node,
                        f"cannot evaluate the condition `{what}` for this rank: {_text(side)} is not in the "
                        "container's environment",
                    )
            elif side is not None and side.type in ("number", "simple_expansion", "expansion"):
                value = self.word(side, split=False, strict=True, what=what)[0]
            else:
                raise self.fail(node, f"cannot evaluate the condition `{what}` for this rank")
            values.append(value)
        return self._compare([values[0], _ARITHMETIC[_text(op)], values[1]], what, node)

    def _compare(self, words: list[str], what: str, node: tree_sitter.Node) -> bool:
        if len(words) == 2 and words[0] in ("-z", "-n"):
            return (words[1] == "") == (words[0] == "-z")
        if len(words) != 3:
            raise self.fail(node, f"cannot evaluate the condition `{what}` for this rank")
        a, op, b = words
        if op in ("-eq", "-ne", "-lt", "-gt", "-le", "-ge"):
            try:
                x, y = int(a), int(b)
            except ValueError as exc:
                raise self.fail(node, f"`{what}` compares non-numbers ({a!r}, {b!r})") from exc
            return {"-eq": x == y, "-ne": x != y, "-lt": x < y, "-gt": x > y, "-le": x <= y, "-ge": x >= y}[op]
        if op in ("=", "=="):
            return a == b
        if op == "!=":
            return a != b
        raise self.fail(node, f"cannot evaluate the condition `{what}` for this rank")

    # -- words ---------------------------------------------------------------------------------------
    def word_list(self, nodes: list[tree_sitter.Node], **kw: object) -> list[str]:
        out: list[str] = []
        for n in nodes:
            out += self.word(n.named_children[0] if n.type == "command_name" and n.named_children else n, **kw)  # type: ignore[arg-type]
        return out

    def word(
        self, node: tree_sitter.Node, *, split: bool = True, strict: bool = False, what: str = "", at_start: bool = True
    ) -> list[str]:
        """The words one argument node becomes: quotes removed, expansions made, an unquoted
        expansion split at whitespace as sh does. strict: an unset variable is an error (a condition
        never guesses)."""
        kind = node.type
        if kind in ("word", "number", "extglob_pattern"):
            text = _text(node)
            if at_start and text.startswith("~"):  # an unquoted word's leading `~`: a home directory
                return [self._tilde(text)]
            return [re.sub(r"\\(.)", r"\1", text.replace("\\\n", ""))]
        if kind == "raw_string":
            return [_text(node)[1:-1]]
        if kind == "string":
            inner = node.named_children
            if any(_text(c) in ("$@", "${@}") for c in inner):
                if len(inner) != 1:
                    raise self.fail(node, f"cannot follow `$@` inside the longer quoted word {_text(node)}")
                return list(self.arguments[1:])  # "$@": each argument one word, as given
            return [self._double_quoted(node, strict, what)]
        if kind == "ansi_c_string":
            return [_text(node)[2:-1].encode().decode("unicode_escape")]
        if kind in ("simple_expansion", "expansion"):
            value = self._expansion(node, strict, what)
            if isinstance(value, _Unknown):
                return [value]
            return value.split() if split else [value]
        if kind == "concatenation":
            parts = [
                self.word(c, split=False, strict=strict, what=what, at_start=i == 0)[0]
                for i, c in enumerate(node.named_children)
            ]
            unknown = next((p for p in parts if isinstance(p, _Unknown)), None)
            return [unknown if unknown is not None else "".join(parts)]
        if kind in ("command_substitution", "process_substitution", "arithmetic_expansion"):
            return [_Unknown(f"the command substitution `{_text(node)}`")]
        raise self.fail(node, f"cannot read the shell word `{_text(node)}` ({kind})")

    def _tilde(self, text: str) -> str:
        prefix, slash, rest = text.partition("/")
        home = self.lookup("HOME") if prefix == "~" else None
        if prefix != "~":
            return _Unknown(f"the home directory `{prefix}` of a user in the image")
        if home is None:
            return _Unknown("the home directory `~` (HOME is not in the container's environment)")
        return home + slash + re.sub(r"\\(.)", r"\1", rest)

    def _double_quoted(self, node: tree_sitter.Node, strict: bool, what: str) -> str:
        """The text between the quotes, with each expansion's value and bash's escapes in "..."."""
        source = node.text or b""
        base, out, pos = node.start_byte, [], 1
        for child in node.named_children:
            start, end = child.start_byte - base, child.end_byte - base
            out.append(_dq_escapes(source[pos:start].decode()))
            if child.type in ("string_content",):
                out.append(_dq_escapes(_text(child)))
            else:
                part = self.word(child, split=False, strict=strict, what=what)[0]
                if isinstance(part, _Unknown):
                    return part
                out.append(part)
            pos = end
        out.append(_dq_escapes(source[pos:-1].decode()))
        return "".join(out)

    def _expansion(self, node: tree_sitter.Node, strict: bool, what: str) -> str:
        name_node = next((c for c in node.named_children if c.type in ("variable_name", "special_variable_name")), None)
        if name_node is None:
            raise self.fail(node, f"cannot follow the expansion `{_text(node)}`")
        name = _text(name_node)
        value = self.lookup(name)
        if node.type == "expansion":
            if any(c.type == "#" and c.end_byte <= name_node.start_byte for c in node.children):
                return str(len(value or ""))  # ${#NAME}: the value's length
            rest = [c for c in node.children if c.start_byte >= name_node.end_byte and c.type != "}"]
            if rest:
                op = _text(rest[0])
                if op not in (":-", "-", ":=", "=", ":+", "+", ":?", "?"):  # ${A//x/y}, ${A,,}, ${A#p}, ${A:1:2}
                    raise self.fail(node, f"cannot follow the expansion `{_text(node)}`")
                parts = [self.word(c, split=False, strict=strict, what=what)[0] for c in rest[1:] if c.is_named]
                unknown = next((p for p in parts if isinstance(p, _Unknown)), None)
                arg = unknown if unknown is not None else "".join(parts)
                if op in (":?", "?") and (value is None or (op == ":?" and value == "")):
                    raise self.fail(
                        node, f"{name} is not set, so bash stops here ({arg or 'parameter null or not set'})"
                    )
                if op in (":-", "-", ":=", "="):
                    empty = value is None or (op.startswith(":") and value == "")
                    if empty:
                        value = arg
                        if "=" in op:
                            self.local[name] = arg
                elif op in (":+", "+"):
                    value = "" if value is None or (op == ":+" and value == "") else arg
        if value is None:
            if strict:
                raise self.fail(
                    node,
                    f"cannot evaluate the condition `{what}` for this rank: {name} is not in the container's "
                    "environment",
                )
            return ""
        return value


def _branch(clause: tree_sitter.Node) -> tuple[tree_sitter.Node | None, list[tree_sitter.Node]]:
    """(condition, body) of `if`/`elif` (the condition is what comes before `then`), (None, body) of `else`."""
    condition, body, after_then = None, [], clause.type == "else_clause"
    for child in clause.children:
        if child.type == "then":
            after_then = True
        elif child.type in ("elif_clause", "else_clause", "comment") or not child.is_named:
            continue
        elif after_then:
            body.append(child)
        elif condition is None:
            condition = child
    return condition, body


def _dq_escapes(text: str) -> str:
    """Inside double quotes, a backslash escapes only $ ` " \\ and a newline."""
    return re.sub(r"\\([$`\"\\\n])", lambda m: "" if m[1] == "\n" else m[1], text)


def _descendants(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(n.children)


def _contains_vllm(node: tree_sitter.Node) -> bool:
    return any(n.type == "command" and re.search(r"\bvllm\b", _text(n)) for n in _descendants(node))


def _assigns(node: tree_sitter.Node) -> bool:
    return any(n.type in ("variable_assignment", "declaration_command") for n in _descendants(node))


_PYTHON = re.compile(r"python(?:3(?:\.\d+)?)?")
_API_SERVER = "vllm.entrypoints.openai.api_server"  # the entry point before `vllm serve`; still served
_ARITHMETIC = {"==": "-eq", "!=": "-ne", "<": "-lt", ">": "-gt", "<=": "-le", ">=": "-ge"}


def _vllm_argv(words: list[str]) -> list[str] | None:
    """The arguments after `vllm serve` or `python3 -m vllm.entrypoints.openai.api_server`, else None."""
    if len(words) >= 2 and posixpath.basename(words[0]) == "vllm" and words[1] == "serve":
        return words[2:]
    if len(words) >= 3 and _PYTHON.fullmatch(posixpath.basename(words[0])) and words[1:3] == ["-m", _API_SERVER]:
        return words[3:]
    return None


def _vllm_options(argv: list[str]) -> tuple[str | None, dict[str, str | None]]:
    model = None
    options: dict[str, str | None] = {}
    i = 0
    if argv and not argv[0].startswith("-"):
        model, i = argv[0], 1
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("--"):
            key, eq, value = arg.partition("=")
            key = "--" + key[2:].replace("_", "-")
            if eq:
                options[key] = value
            elif key[2:] in BOOLEAN_FLAGS or i + 1 >= len(argv) or argv[i + 1].startswith("--"):
                options[key] = None
            else:
                options[key] = argv[i + 1]
                i += 1
        elif arg.startswith("-") and "=" in arg:  # vLLM's dotted config args: -cc.mode=0, -O.level=3
            key, _, value = arg.partition("=")
            options[key] = value
        elif arg.startswith("-"):
            options[arg] = None
        elif model is None:
            model = arg
        i += 1
    if "--model" in options and model is None:
        model = options["--model"]
    return model, options


_CLOSERS = {"if": "fi", "case": "esac", "do": "done", "{": "}", "(": ")", "$(": ")", '"': '"'}


def vllm_runs(script: str, env: dict[str, str], arguments: tuple[str, ...] = (), shell: str = "bash") -> list[VllmRun]:
    """The `vllm serve` invocations that run with this environment (NODE_RANK chooses branches);
    `arguments` are the script's $0, $1, ... (`bash -c SCRIPT NAME ARGS`); `shell` the one that runs
    it (under sh, bash's own syntax is refused: it would not do there what it says)."""
    tree = _parser().parse(script.encode())
    if tree.root_node.has_error:
        bad = next((n for n in _descendants(tree.root_node) if n.is_missing), None)
        if bad is not None:
            raise _unreadable(f"bash cannot parse it: `{bad.type}` is missing at line {_line(bad)}", script)
        bad = next((n for n in _descendants(tree.root_node) if n.type == "ERROR"), tree.root_node)
        opener = next((c.type for c in bad.children if c.type in _CLOSERS), None)
        if opener == '"':
            raise _unreadable(f'bash cannot parse it: a `"` quote never closes (line {_line(bad)})', script)
        if opener is not None:
            raise _unreadable(f"`{opener}` without `{_CLOSERS[opener]}` (line {_line(bad)})", script)
        raise _unreadable(f"bash cannot parse it near line {_line(bad)}: {_text(bad)[:80]!r}", script)
    if shell in _POSIX_SHELLS:
        for node in _descendants(tree.root_node):
            bashism = _bashism(node)
            if bashism:
                raise _unreadable(
                    f"line {_line(node)}: {bashism} is bash's, and this script runs under {shell} (dash in "
                    "Debian/Ubuntu-based images such as vLLM's, where it does not do what it says): run it with "
                    "bash -c, or write it for sh",
                    script,
                )
    walk = _Walk(script, env, arguments)
    with contextlib.suppress(_ScriptEnds):
        walk.statements(tree.root_node)
    return walk.runs


_POSIX_SHELLS = frozenset({"sh", "dash", "ash"})


def _bashism(node: tree_sitter.Node) -> str | None:
    """What in this node sh (dash) does not read as bash does, or None."""
    first = node.children[0].type if node.children else ""
    if node.type == "test_command" and first == "[[":
        return "`[[ ... ]]`"
    if (
        node.type == "test_command"
        and first == "["
        and any(c.type == "binary_expression" and any(o.type == "==" for o in c.children) for c in node.named_children)
    ):
        return "`==` inside `[ ]` (sh's test knows `=`)"
    if node.type == "compound_statement" and first == "((":
        return "`(( ... ))`"
    if node.type == "ansi_c_string":
        return "`$'...'`"
    if node.type == "array":
        return "an array"
    if node.type == "file_redirect" and first in ("&>", "&>>"):
        return "`&>` (sh runs the command in the background and empties the file)"
    if node.type == "function_definition" and first == "function":
        return "`function NAME`"
    if node.type == "herestring_redirect":
        return "`<<<`"
    if node.type == "command_name" and _text(node) == "source":
        return "`source` (sh has `.`)"
    return None


def rank_run(service: ComposeService, rank: int, what: str) -> VllmRun:
    """The one `vllm serve` this rank runs, read from the service's entrypoint and command.

    The service must have been read with this rank's .env: its NODE_RANK chooses the branch.
    """
    script, arguments, shell = shell_script(service.script_argv)
    env = service.environment
    if "HOME" not in env and not service.get("user"):  # Docker sets HOME to its user's: root's without `user:`
        env = {**env, "HOME": "/root"}
    runs = vllm_runs(script, env, arguments, shell)
    if len(runs) != 1:
        found = "no `vllm serve`" if not runs else f"{len(runs)} `vllm serve` commands"
        raise ParseError(
            what, f"rank {rank} runs {found}; expected exactly one", script, hint_ids=("container-script-unreadable",)
        )
    return runs[0]


_SHELLS = frozenset({"sh", "bash", "dash", "ash", "ksh", "zsh"})
_SHORT_OPTIONS = re.compile(r"-[A-Za-z]+")


def shell_script(argv: list[str]) -> tuple[str, tuple[str, ...], str]:
    """(the shell text, its $0 $1 ..., the shell) of `bash -lc SCRIPT NAME ARGS` / `sh -c SCRIPT`, or
    the argv itself as the text (for bash's reading) when exec'd directly.

    Only a shell's own leading short options count: `vllm serve m -cc.cudagraph_mode=...` is no `-c`."""
    if argv and posixpath.basename(argv[0]) in _SHELLS:
        for i, arg in enumerate(argv[1:-1], 1):
            if not _SHORT_OPTIONS.fullmatch(arg):
                break
            if "c" in arg[1:]:
                shell = posixpath.basename(argv[0])
                return argv[i + 1], tuple(argv[i + 2 :]) or (argv[0],), shell  # without NAME, $0 is the shell
    return " ".join(shlex.quote(a) for a in argv), (), "bash"
