"""What a process runs, in vLLM's and Ray's terms: `vllm serve` and its options, or a Ray node.

Read from a command the shell reader found (gb10check/deployment/shell/walk.py `Ran`) or from a running
process's argv (/proc/PID/cmdline): `vllm serve MODEL --opt value ...`, the pip entry point as the
kernel shows it (`/usr/bin/python3 /usr/local/bin/vllm serve ...`), `python3 -m vllm.entrypoints.cli.main
serve ...`, the older `python3 -m vllm.entrypoints.openai.api_server ...`; `ray start --head|--address=...`.
Option names are normalised as vLLM's argparse reads them (`--max_model_len` is `--max-model-len`);
a word decided at start stays Deferred (gb10check/deployment/shell/values.py). Pure.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from gb10check.deployment.shell.values import Deferred, Value
from gb10check.errors import DecidedAtStart

__all__ = ["BOOLEAN_FLAGS", "ENTRY_MODULES", "RayCommand", "VllmCommand", "entry_argv", "parse_ray", "parse_vllm"]

# vLLM's options that take no value (store_true, or the --x/--no-x pairs of its config booleans): after
# them, a word that does not start with `-` is the model or the next option's business, not their value
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
        "no-enable-log-requests",
        "disable-log-stats",
        "enable-chunked-prefill",
        "no-enable-chunked-prefill",
        "disable-custom-all-reduce",
        "enable-expert-parallel",
        "async-scheduling",
        "no-async-scheduling",
        "enable-sleep-mode",
        "disable-uvicorn-access-log",
        "disable-frontend-multiprocessing",
        "enable-prompt-tokens-details",
        "enable-force-include-usage",
        "enable-server-load-tracking",
        "disable-fastapi-docs",
        "enable-request-id-headers",
        "enable-log-outputs",
        "disable-cascade-attn",
        "skip-tokenizer-init",
        "enable-lora",
        "enable-eplb",
        "enable-dbo",
        "enable-multimodal-encoder-data-parallel",
        "enable-tokenizer-info-endpoint",
        "api-server-count-auto",
    }
)
_PYTHON = re.compile(r"python(?:3(?:\.\d+)?)?")
ENTRY_MODULES = {
    "vllm.entrypoints.openai.api_server": "python3 -m vllm.entrypoints.openai.api_server",
    "vllm.entrypoints.cli.main": "python3 -m vllm.entrypoints.cli.main",
}


@dataclass(frozen=True)
class VllmCommand:
    """One `vllm serve`: the model argument, the options (names normalised), the words as given."""

    model: Value | None
    options: dict[str, Value | None]  # "--max-model-len" -> "262144"; a flag -> None
    argv: tuple[Value, ...]
    entry: str  # how it was started: "vllm serve", "python3 -m vllm.entrypoints.openai.api_server", ...
    unknown: tuple[Deferred, ...] = field(default=())  # words decided at start that may be any options at all

    def has(self, option: str) -> bool:
        """Whether the option is given; when words decided at start could give it, DecidedAtStart."""
        if option in self.options:
            return True
        if self.unknown:
            raise DecidedAtStart(f"whether `vllm serve` gets {option} is decided at start ({self.unknown[0].why})")
        return False

    def value(self, option: str) -> str | None:
        """The option's value (None when not given or a flag); DecidedAtStart when the start decides it."""
        if option not in self.options:
            if self.unknown:
                raise DecidedAtStart(f"{option} of `vllm serve` is decided at start ({self.unknown[0].why})")
            return None
        value = self.options[option]
        if isinstance(value, Deferred):
            raise DecidedAtStart(f"{option} of `vllm serve` is decided at start ({value.why})")
        return value

    def raw(self, option: str) -> Value | None:
        """The option's value as read, deferred or not (for display)."""
        return self.options.get(option)

    @property
    def model_name(self) -> str | None:
        if isinstance(self.model, Deferred):
            raise DecidedAtStart(f"the model `vllm serve` loads is decided at start ({self.model.why})")
        return self.model

    def shown(self) -> str:
        return " ".join([self.entry, *(str(a) for a in self.argv)])


@dataclass(frozen=True)
class RayCommand:
    """`ray start`: the head (`--head`, its port) or a worker joining an address; `--block` keeps it the
    container's process. What vLLM runs on a worker the head sends at run time."""

    head: bool
    address: Value | None  # the worker's head address (host:port)
    port: Value | None
    argv: tuple[Value, ...]

    @property
    def role(self) -> str:
        return "ray head" if self.head else "ray worker"

    def shown(self) -> str:
        return " ".join(["ray", "start", *(str(a) for a in self.argv)])


def entry_argv(argv: tuple[Value, ...] | list[Value]) -> tuple[str, tuple[Value, ...]] | None:
    """(how vLLM was started, the words after `serve` or the entry module), or None when argv is no vLLM."""
    words = list(argv)
    if not words or not isinstance(words[0], str):
        return None
    first = posixpath.basename(words[0])
    if first == "vllm" and len(words) >= 2 and words[1] == "serve":
        return "vllm serve", tuple(words[2:])
    if _PYTHON.fullmatch(first):
        rest = words[1:]
        while rest and isinstance(rest[0], str) and rest[0].startswith("-") and rest[0] not in ("-m", "-c"):
            rest = rest[1:]  # python3 -u -X ...
        if len(rest) >= 2 and rest[0] == "-m" and rest[1] in ENTRY_MODULES:
            tail = rest[2:]
            if rest[1] == "vllm.entrypoints.cli.main":
                if not tail or tail[0] != "serve":
                    return None
                tail = tail[1:]
            return ENTRY_MODULES[str(rest[1])], tuple(tail)
        if (
            rest
            and isinstance(rest[0], str)
            and posixpath.basename(rest[0]) == "vllm"
            and len(rest) >= 2
            and rest[1] == "serve"
        ):
            return "vllm serve", tuple(
                rest[2:]
            )  # the pip entry point as /proc shows it: python3 /usr/local/bin/vllm serve
    return None


def parse_vllm(argv: tuple[Value, ...] | list[Value]) -> VllmCommand | None:
    found = entry_argv(argv)
    if found is None:
        return None
    entry, args = found
    model, options, unknown = _options(list(args))
    return VllmCommand(model, options, args, entry, tuple(unknown))


def _options(argv: list[Value]) -> tuple[Value | None, dict[str, Value | None], list[Deferred]]:
    model: Value | None = None
    options: dict[str, Value | None] = {}
    unknown: list[Deferred] = []
    i = 0
    if argv and not str(argv[0]).startswith("-"):
        model, i = argv[0], 1
        if isinstance(model, Deferred) and model.splits:  # `vllm serve $ARGS`: the model and maybe options
            unknown.append(model)
    while i < len(argv):
        arg = argv[i]
        if isinstance(arg, Deferred) and arg.splits and not str(arg).startswith("-"):
            unknown.append(arg)  # `$EXTRA_ARGS`: any options at all, decided at start
            i += 1
            continue
        text = str(arg)
        if text.startswith("--"):
            key, eq, value = text.partition("=")
            key = "--" + key[2:].replace("_", "-")
            if eq:
                options[key] = value if isinstance(arg, str) else Deferred(arg.why, value, False)
            elif key[2:] in BOOLEAN_FLAGS or i + 1 >= len(argv) or _is_option(argv[i + 1]):
                options[key] = None
            else:
                options[key] = argv[i + 1]
                i += 1
        elif text.startswith("-") and "=" in text:  # vLLM's dotted config args: -cc.mode=0, -O.level=3
            key, _, value = text.partition("=")
            options[key] = value if isinstance(arg, str) else Deferred(arg.why, value, False)
        elif text.startswith("-"):
            options[text] = None
        elif model is None:
            model = arg
        i += 1
    if "--model" in options and model is None:
        model = options["--model"]
    return model, options, unknown


def _is_option(word: Value) -> bool:
    return str(word).startswith("--") or (isinstance(word, str) and re.match(r"^-[A-Za-z]", word) is not None)


def parse_ray(argv: tuple[Value, ...] | list[Value]) -> RayCommand | None:
    """`ray start ...` (the Ray node a container runs), else None."""
    words = list(argv)
    if len(words) < 2 or not isinstance(words[0], str) or posixpath.basename(words[0]) != "ray" or words[1] != "start":
        return None
    args = tuple(words[2:])
    head, address, port = False, None, None
    for i, arg in enumerate(args):
        text = str(arg)
        if text == "--head":
            head = True
        elif text.startswith("--address"):
            address = text.partition("=")[2] if "=" in text else (args[i + 1] if i + 1 < len(args) else None)
            if isinstance(arg, Deferred) and "=" in text:
                address = Deferred(arg.why, text.partition("=")[2])
        elif text.startswith("--port"):
            port = text.partition("=")[2] if "=" in text else (args[i + 1] if i + 1 < len(args) else None)
    return RayCommand(head, address, port, args)
