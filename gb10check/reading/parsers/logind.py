"""systemd-logind's RemoveIPC as logind would resolve it, and the users that linger (pure).

logind.conf(5): the main file (/etc/systemd/logind.conf), then the drop-ins `*.conf` of
/usr/lib, /run and /etc `systemd/logind.conf.d/`, in the lexical order of their file names (a name
in /etc masks the same name in /run and /usr/lib); a later assignment wins. RemoveIPC defaults to
yes. It removes the System V and POSIX IPC objects (shared memory, semaphores) of an ordinary user
(not root, not a system uid) when that user's last session ends.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from gb10check.errors import ParseError, excerpt
from gb10check.reading.parsers.framed import FileRead

__all__ = ["MAIN", "RemoveIpc", "parse_linger", "parse_remove_ipc"]

MAIN = "/etc/systemd/logind.conf"
_DROPIN_DIRS = ("/usr/lib/systemd/logind.conf.d", "/run/systemd/logind.conf.d", "/etc/systemd/logind.conf.d")
_BOOL = {"1": True, "yes": True, "y": True, "true": True, "t": True, "on": True}
_BOOL |= {"0": False, "no": False, "n": False, "false": False, "f": False, "off": False}
_SECTION = re.compile(r"^\[(?P<name>[^\]]+)\]\s*$")


@dataclass(frozen=True)
class RemoveIpc:
    enabled: bool
    source: str  # the file and line that set it, or "systemd's default"


def _order(files: list[FileRead]) -> list[FileRead]:
    by_path = {f.path: f for f in files}
    main = [by_path[MAIN]] if MAIN in by_path else []
    dropins: dict[str, FileRead] = {}
    for directory in _DROPIN_DIRS:  # later directories mask earlier ones for the same name
        for f in files:
            if posixpath.dirname(f.path) == directory and f.path.endswith(".conf"):
                dropins[posixpath.basename(f.path)] = f
    return main + [dropins[name] for name in sorted(dropins)]


def parse_remove_ipc(files: list[FileRead]) -> RemoveIpc:
    result = RemoveIpc(True, "systemd's default (RemoveIPC=yes)")
    for f in _order(files):
        section = None
        for number, raw in enumerate(f.text.splitlines(), 1):
            line = raw.strip()
            if not line or line[0] in "#;":
                continue
            if m := _SECTION.match(line):
                section = m["name"]
                continue
            key, sep, value = line.partition("=")
            if section != "Login" or not sep or key.strip() != "RemoveIPC":
                continue
            word = value.strip().lower()
            if word not in _BOOL:
                raise ParseError(
                    f.path, f"RemoveIPC={excerpt(value.strip(), 60)} is not a boolean logind takes", f.text
                )
            result = RemoveIpc(_BOOL[word], f"{f.path}:{number} (RemoveIPC={value.strip()})")
    return result


def parse_linger(text: str) -> list[str]:
    """`ls -1 /var/lib/systemd/linger`: one user name per line (none: nobody lingers)."""
    names = text.split()
    bad = [n for n in names if not re.fullmatch(r"[A-Za-z0-9_.][A-Za-z0-9_.-]*\$?", n)]
    if bad:
        raise ParseError("ls /var/lib/systemd/linger", f"not a user name: {excerpt(bad[0], 120)}", text)
    return names
