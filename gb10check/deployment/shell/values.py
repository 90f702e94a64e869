"""What a shell value can be when a script is read and not run: known text, or deferred to the start.

A value the script decides only when it runs (a command's output, a file on the node, a variable a
file it sources may set) is `Deferred`: it names what decides it and where, and reads in place as
`<...>`. Text around it is kept for display (`--port <$(get_port)>`); a deferred word that came from
an unquoted expansion may also make any number of words (`splits`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Deferred", "Value", "first_deferred", "known", "pieces", "shown"]


@dataclass(frozen=True)
class Deferred:
    """A value known only when the script runs: `why` names the construct and its line."""

    why: str  # "the command substitution `$(hostname -I)` (line 12)"
    shown: str = ""  # how the word reads with it in place: "--host=<$(hostname -I)>"
    splits: bool = False  # an unquoted expansion: the number of words it makes is decided at start too
    # what it is made of, where it joins known text and deferred values ("-v ", <$HF_HOME>, ":/root"): an
    # unquoted expansion of it still splits its known text into words (empty: it is one deferred value)
    parts: tuple[str | Deferred, ...] = field(default=(), compare=False, repr=False)

    def __str__(self) -> str:
        return self.shown or f"<{self.why}>"

    def placed(self, before: str, after: str) -> Deferred:
        """The same value with known text around it (one word)."""
        return Deferred(self.why, f"{before}{self}{after}", self.splits, pieces([before, self, after]))


def pieces(values: list[str | Deferred]) -> tuple[str | Deferred, ...]:
    """The known texts and deferred values a joined value is made of, flattened, adjacent texts merged."""
    out: list[str | Deferred] = []
    for v in values:
        for p in (v.parts or (v,)) if isinstance(v, Deferred) else (v,):
            if isinstance(p, str) and out and isinstance(out[-1], str):
                out[-1] += p
            elif p != "":
                out.append(p)
    return tuple(out)


Value = str | Deferred


def known(value: Value | None) -> bool:
    return isinstance(value, str)


def shown(value: Value | None) -> str:
    """How a value reads in a message: its text, `<...>` for a deferred one, `(unset)` for none."""
    return "(unset)" if value is None else str(value)


def first_deferred(values: list[Value] | tuple[Value, ...]) -> Deferred | None:
    return next((v for v in values if isinstance(v, Deferred)), None)
