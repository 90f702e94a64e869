"""A node installed in another language (sim/spec.py `login_env`): what its tools then print.

The node's sshd sets the scenario's LANG / LANGUAGE / LC_* for every session (as pam_env reads
/etc/default/locale on Ubuntu), and the real tools inside the node honour them:
- glibc's locales the variables name are compiled with localedef into the node's folder and mounted
  over /usr/lib/locale in its mount namespace (C.utf8 kept), so coreutils, sudo and glibc's own
  messages translate (their catalogues are the machine's /usr/share/locale);
- ufw's catalogue, which Debian ships in /usr/share/ufw/messages/<lang>.mo where its gettext does
  not look, is laid over /usr/share/locale/<lang>/LC_MESSAGES/ufw.mo, as Ubuntu's language packs
  install it: the real ufw then prints "状态：不活动";
- ping: Debian's iputils here is built without gettext, so the node's ping is the sim's stub
  (sim/stubs/ping.py), which runs the real one and translates its lines as a gettext-enabled iputils
  prints them (iputils' po/zh_CN.po). That one is the stub honouring the locale itself.
Nothing of this touches the machine: the mounts live in the node's own mount namespace.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from gb10check.errors import SimError

__all__ = [
    "LOCALE_SOURCES",
    "MESSAGES",
    "SYSTEM_LOCALES",
    "UFW_CATALOGUES",
    "boot_lines",
    "compile_locales",
    "locales_named",
    "message_overlays",
]

SYSTEM_LOCALES = Path("/usr/lib/locale")
LOCALE_SOURCES = Path("/usr/share/i18n/locales")
UFW_CATALOGUES = Path("/usr/share/ufw/messages")
MESSAGES = Path("/usr/share/locale")
_PLAIN = {"C", "POSIX", "C.UTF-8", "C.utf8"}
_NAME = re.compile(r"^(?P<lang>[a-z]{2,3})(?:_(?P<region>[A-Z]{2}))?(?:\.(?P<codeset>[A-Za-z0-9-]+))?$")


def locales_named(env: dict[str, str]) -> list[str]:
    """The locales the node's login environment names (LANG, LC_ALL, LC_*), other than C's."""
    names = [v for k, v in env.items() if (k == "LANG" or k.startswith("LC_")) and v not in _PLAIN]
    return list(dict.fromkeys(names))


def _normalised(name: str) -> tuple[str, str, str]:
    """("zh_CN", "UTF-8", "zh_CN.utf8"): localedef's input, its charmap, and the folder glibc finds."""
    match = _NAME.match(name)
    if match is None:
        raise SimError(f"login_env names the locale {name!r}: expected a name like zh_CN.UTF-8")
    base = match["lang"] + (f"_{match['region']}" if match["region"] else "")
    codeset = match["codeset"] or "UTF-8"
    return base, codeset, f"{base}.{codeset.lower().replace('-', '')}"


def compile_locales(env: dict[str, str], folder: Path) -> bool:
    """The node's /usr/lib/locale in `folder`: the machine's (C.utf8), plus each locale `env` names,
    compiled by localedef. False when `env` names none (nothing to mount)."""
    names = locales_named(env)
    if not names:
        return False
    shutil.copytree(SYSTEM_LOCALES, folder, symlinks=True)
    for name in names:
        base, codeset, out = _normalised(name)
        if not (LOCALE_SOURCES / base).is_file():
            raise SimError(f"login_env names {name}, but {LOCALE_SOURCES / base} is not here (Debian's `locales`)")
        proc = subprocess.run(
            ["localedef", "-i", base, "-f", codeset, str(folder / out)], capture_output=True, text=True, timeout=60
        )
        if not (folder / out / "LC_CTYPE").is_file():  # localedef exits 1 for warnings too: judge what it made
            raise SimError(f"localedef could not compile {name}: {proc.stderr.strip()[-300:]}")
    return True


def message_overlays(env: dict[str, str], folder: Path) -> dict[Path, Path]:
    """For each language the environment names: a folder holding ufw's catalogue, to lay over that
    language's /usr/share/locale/<lang>/LC_MESSAGES (target -> the folder)."""
    overlays: dict[Path, Path] = {}
    for name in locales_named(env) + [v for v in env.get("LANGUAGE", "").split(":") if v]:
        base = _normalised(name)[0]
        for lang in (base, base.split("_")[0]):  # gettext tries zh_CN, then zh
            catalogue, target = UFW_CATALOGUES / f"{lang}.mo", MESSAGES / lang / "LC_MESSAGES"
            if catalogue.is_file() and target.is_dir() and target not in overlays:
                overlays[target] = folder / lang
                overlays[target].mkdir(parents=True, exist_ok=True)
                shutil.copy2(catalogue, overlays[target] / "ufw.mo")
                break
    return overlays


def boot_lines(node_dir: Path, env: dict[str, str]) -> str:
    """The boot script's mounts for the node's language ("" for a node in C)."""
    lines = []
    if compile_locales(env, node_dir / "locale"):
        lines.append(f"mount --bind {node_dir / 'locale'} {SYSTEM_LOCALES}")
    for target, extra in message_overlays(env, node_dir / "messages").items():
        lines.append(f"mount -t overlay gb10sim-messages -o lowerdir={extra}:{target} {target}")
    return "\n".join(lines)
