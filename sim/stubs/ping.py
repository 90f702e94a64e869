"""ping in a simulated node's language: the real ping, its lines as a gettext build of iputils prints them."""

from __future__ import annotations

import re

__all__ = ["PING_ZH_CN", "TYPE_CHECKING", "ping"]

TYPE_CHECKING = False  # mypy reads it as True; importing typing would cost every stub call ~5 ms

if TYPE_CHECKING:  # stdlib-only and started often: no typing import at run time
    from typing import Any

# -- ping in the node's language ----------------------------------------------------------------------
# iputils' translations (po/zh_CN.po of github:iputils/iputils at 092d36fde0b9; an empty msgstr stays
# English, as the rtt line does): Debian's iputils here is built without gettext, so the stub runs the
# real ping in C and translates its lines as a gettext-enabled build prints them.
PING_ZH_CN = (
    (r"(\d+\(\d+\)) bytes of data\.$", r"\1 字节的数据。"),
    (r"^(\d+) bytes from ([^:]+):", r"\1 字节，来自 \2:"),
    (r" time=([\d.]+) ms", r" 时间=\1 毫秒"),
    (r"^--- (\S+) ping statistics ---$", r"--- \1 ping 统计 ---"),
    (r"^(\d+) packets transmitted, ", r"已发送 \1 个包， "),
    (r"(?<=个包， )(\d+) received", r"已接收 \1 个包"),
    (r", \+(\d+) errors", r", +\1 错误"),
    (r", ([\d.]+)% packet loss", r", \1% 包丢失"),
    (r", time (\d+)ms$", r", 耗时 \1 毫秒"),
    (r"^From (\S+) icmp_seq=(\d+) Destination Host Unreachable$", r"来自 \1 icmp_seq=\2 目标主机不可达"),
)


def _message_languages(env: dict[str, str]) -> list[str]:
    """The languages GNU gettext translates into: none when the locale in force is C (LC_ALL, else
    LC_MESSAGES, else LANG; LANGUAGE is then ignored), else LANGUAGE's list or that locale's language."""
    locale = env.get("LC_ALL") or env.get("LC_MESSAGES") or env.get("LANG") or "C"
    if locale.split(".")[0] in ("C", "POSIX"):
        return []
    return [lang.split(".")[0] for lang in (env.get("LANGUAGE") or locale).split(":") if lang]


def ping(state: dict[str, Any], args: list[str]) -> tuple[str, str, int]:
    """The real ping (iputils), in the node's language when it is one iputils translates."""
    import os
    import subprocess

    proc = subprocess.run(["/usr/bin/ping", *args], capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"})
    out = proc.stdout
    if next(iter(_message_languages(dict(os.environ))), None) in ("zh_CN", "zh"):
        for pattern, replacement in PING_ZH_CN:
            out = re.sub(pattern, replacement, out, flags=re.M)
    return out, proc.stderr, proc.returncode
