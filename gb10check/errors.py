"""The one error hierarchy of gb10check.

    GB10Error
    ├── InventoryError        cluster.toml missing or invalid (a setup problem, not a cluster fault)
    ├── HintCatalogueError    a hints file is malformed
    ├── ReportsUnwritable     the reports cannot be written where the settings say (checked before any node)
    ├── InputFileError        a file the suite reads (inventory, hints, scenario) is not text it can take
    ├── CommandLineError      the `gb10check` command line lacks a value or has a bad one (exit status 4)
    ├── SuiteFilesError       the suite's checks and plugin are neither inside the package nor beside it
    ├── ParseError            a tool printed something its parser does not recognise
    │   └── Unreadable        a launch script construct the bash reader cannot follow (deployment/shell/walk.py)
    ├── OutputCut             a tool printed more than a probe may send: its output was cut on the node
    ├── ComposeRejected       the node's Docker Compose refuses the compose file
    ├── DecidedAtStart        a value of the launch plan only the start decides: its checks skip, saying so
    ├── ToolMissing           a tool the check reads is not installed on the node
    ├── PrivilegeRequired     a root-only read was refused (not root, no passwordless sudo)
    ├── MissingFile           a file the check reads is not on the node
    ├── TransportError        reaching a node failed
    │   ├── NodeUnreachable   connect / auth / host key failed: the node's checks fail with node-unreachable
    │   └── CommandTimeout    a command outlived its bound (also recorded as CommandResult.timed_out)
    ├── ServiceError          the HTTP API could not be asked (refused, timeout, not JSON)
    ├── SimError              the simulated cluster could not be built or torn down
    └── CheckListError        docs/checks.md cannot be made: a check it cannot place (gb10check/commands/check_list.py)

Two exceptions are verdicts' control flow, not errors, and stay outside the tree: CheckFailed
(gb10check/judging/verdict.py, an AssertionError: pytest reports the check failed, with what was expected and found)
and NotApplicable (gb10check/deployment/launch/rules.py: a launch rule that does not apply to this deployment).

Third-party errors (paramiko, invoke, httpx, pydantic, tomllib) are translated at the boundary
with ``raise ... from exc``; nothing above this module leaks them. An error may carry hint ids,
which the pytest plugin turns into troubleshooting text.
"""

from __future__ import annotations

from gb10check.safe_text.neutralise import neutralise
from gb10check.safe_text.redact import redact, redact_known

__all__ = [
    "CommandLineError",
    "CommandTimeout",
    "ComposeRejected",
    "DecidedAtStart",
    "GB10Error",
    "HintCatalogueError",
    "InputFileError",
    "InventoryError",
    "MissingFile",
    "NodeUnreachable",
    "OutputCut",
    "ParseError",
    "PrivilegeRequired",
    "ReportsUnwritable",
    "ServiceError",
    "SimError",
    "SuiteFilesError",
    "ToolMissing",
    "TransportError",
    "clip",
    "excerpt",
]

# what a node said is masked with this much of its text around what is shown: a secret's name just
# outside an excerpt still hides its value inside it (and a 10 MB line costs no more than a short one)
_MARGIN = 4096


class GB10Error(Exception):
    hint_ids: tuple[str, ...] = ()

    def __init__(
        self, message: str, *, hint_ids: tuple[str, ...] = (), context: dict[str, str | list[str]] | None = None
    ) -> None:
        message = neutralise(message)  # shown, never obeyed: a node's escapes do not reach the terminal
        # the suite's own words stay as written; what they quote from a node was masked where it was
        # quoted (excerpt, clip, redact), and registered values and shaped tokens are masked here again
        super().__init__(redact_known(message))
        if hint_ids:
            self.hint_ids = hint_ids
        # fields for the hint's commands (gb10check/judging/hint_context.py): the command that hung, the missing file
        self.context = dict(context or {})

    def __reduce__(self) -> tuple[object, ...]:
        """Copies (a fresh one per check that re-raises a stored error) and pickles keep the message and
        every attribute, whatever a subclass's __init__ takes."""
        return (_rebuilt, (type(self), self.args, dict(self.__dict__)))


def _rebuilt(cls: type[GB10Error], args: tuple[object, ...], state: dict[str, object]) -> GB10Error:
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


class InventoryError(GB10Error):
    pass


class HintCatalogueError(GB10Error):
    pass


class ReportsUnwritable(GB10Error):
    pass


class InputFileError(GB10Error):
    pass


class CommandLineError(GB10Error):
    pass


class SuiteFilesError(GB10Error):
    pass


def clip(text: str, limit: int = 300) -> str:
    """At most about `limit` characters of a tool's error: its first line (what failed) and its end
    (why), an ellipsis between, both cut at word boundaries; masked, as all a node says."""
    if len(text) > 2 * (limit + _MARGIN):  # only the ends are shown: only they are masked
        text = f"{text[: limit + _MARGIN]} ... {text[-(limit + _MARGIN) :]}"
    text = redact(text)
    if len(text) <= limit:
        return text
    first = text.split("\n", 1)[0]
    head = first if len(first) <= limit * 2 // 3 else first[: limit * 2 // 3].rsplit(" ", 1)[0]
    room = max(limit - len(head) - 5, 20)
    tail = text[-room:]
    space = tail.find(" ")
    if 0 <= space < room // 3:  # do not start mid-word
        tail = tail[space + 1 :]
    return f"{head.rstrip()} ... {tail.lstrip()}"


def excerpt(text: str, limit: int = 300) -> str:
    """A bounded, masked, single-quoted view of raw output for error messages: how a message quotes a node."""
    shown = redact(text[: limit + _MARGIN])
    if len(shown) <= limit and len(text) <= limit + _MARGIN:
        return repr(shown)
    return repr(shown[:limit] + f"... [{max(len(text) - limit, 1)} more chars]")


class ParseError(GB10Error):
    hint_ids = ("unexpected-output",)

    def __init__(self, what: str, detail: str, text: str, *, hint_ids: tuple[str, ...] = ()) -> None:
        self.what = what
        self.text = text
        # a parser that recognises the tool's own error text names the hint for it
        super().__init__(f"cannot parse {what}: {detail}; output was {excerpt(text)}", hint_ids=hint_ids)
        self.context = {}


class OutputCut(GB10Error):
    """A probe's output was larger than the snapshot sends (a flooding tool): only its head and tail came."""

    hint_ids = ("output-cut",)


class ComposeRejected(GB10Error):
    """The node's own Docker Compose refuses the deployment's compose file (`docker compose up` would too).
    One check owns it (OWNER, the node's); every other check that needs the node's launch plan follows
    from it (fixtures/hints.py skips it, naming the owner, when the owner is in the run)."""

    hint_ids = ("compose-invalid",)
    OWNER = "tests_preflight/test_deployment_files.py::test_compose_accepted[{node}]"

    def __init__(self, message: str, *, node: str) -> None:
        super().__init__(message)
        self.node = node


class DecidedAtStart(GB10Error):
    """A value of the launch plan that only the start decides (a command's output in the launcher, a file
    on the node it sources): a check that needs it skips with this reason, never fails; once the deployment
    runs, `gb10check plan --running` reads it from the container (gb10check/deployment/launch/running.py; the
    preflight checks judging the running container in its place is planned)."""


class ToolMissing(GB10Error):
    hint_ids = ("tool-missing",)


class PrivilegeRequired(GB10Error):
    hint_ids = ("sudo-required",)


class MissingFile(GB10Error):
    hint_ids = ("file-missing",)


class TransportError(GB10Error):
    pass


class NodeUnreachable(TransportError):
    hint_ids = ("node-unreachable",)


class CommandTimeout(TransportError):
    hint_ids = ("command-timeout",)


class ServiceError(GB10Error):
    hint_ids = ("service-unreachable",)


class SimError(GB10Error):
    pass
