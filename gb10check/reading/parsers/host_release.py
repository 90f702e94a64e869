"""What a node runs and boots from, as the kernel and the OS state it: the kernel release
(/proc/sys/kernel/osrelease, what `uname -r` prints), the OS release (/etc/os-release), the BIOS
(/sys/class/dmi/id, readable without root), the ConnectX firmware (/sys/class/infiniband/*/fw_ver) and
DGX OS's release (/etc/dgx-release, absent on other systems).
Pure: text in, values out, ParseError with the excerpt otherwise."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from gb10check.errors import ParseError
from gb10check.reading.parsers.framed import parse_word

__all__ = [
    "NO_DGX_RELEASE",
    "Bios",
    "OsRelease",
    "firmware_shown",
    "parse_bios",
    "parse_dgx_release",
    "parse_fw_versions",
    "parse_kernel_release",
    "parse_os_release",
]


def parse_kernel_release(text: str) -> str:
    """`cat /proc/sys/kernel/osrelease`: one word, e.g. 6.17.0-1014-nvidia."""
    return parse_word(text, "/proc/sys/kernel/osrelease")


@dataclass(frozen=True)
class OsRelease:
    fields: dict[str, str]

    @property
    def shown(self) -> str:
        """What the release is called: PRETTY_NAME (Ubuntu 24.04.3 LTS), else NAME VERSION_ID, else ID."""
        f = self.fields
        return f.get("PRETTY_NAME") or " ".join(v for v in (f.get("NAME"), f.get("VERSION_ID")) if v) or f["ID"]


_ASSIGNMENT = re.compile(r"([A-Z][A-Z0-9_]*)=(.*)")


def parse_os_release(text: str, what: str = "/etc/os-release") -> OsRelease:
    """os-release(5): `KEY=value` lines, values shell-quoted, `#` comments and blank lines ignored."""
    fields = _assignments(text, what)
    if not any(k in fields for k in ("PRETTY_NAME", "NAME", "ID")):
        raise ParseError(what, "no PRETTY_NAME, NAME or ID", text)
    return OsRelease(fields)


def _assignments(text: str, what: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = _ASSIGNMENT.fullmatch(line)
        if m is None:
            raise ParseError(what, f"not KEY=value: {line[:80]!r}", text)
        try:
            words = shlex.split(m[2])
        except ValueError as exc:
            raise ParseError(what, f"{m[1]}: {exc}", text) from None
        fields[m[1]] = " ".join(words)
    return fields


# what the read prints on a system without /etc/dgx-release (not DGX OS)
NO_DGX_RELEASE = "gb10check: no /etc/dgx-release"


def parse_dgx_release(text: str) -> str | None:
    """DGX OS's version from /etc/dgx-release (os-release's KEY="value" shape): DGX_OTA_VERSION, the release
    its updates brought it to, else DGX_SWBUILD_VERSION, the release it was installed as; None on a system
    without the file (the read prints NO_DGX_RELEASE). Only those two keys are kept: the file also holds the
    system's serial number."""
    if text.strip() == NO_DGX_RELEASE:
        return None
    text = "\n".join(line for line in text.splitlines() if "SERIAL" not in line)  # never quoted in an error
    fields = _assignments(text, "/etc/dgx-release")
    version = fields.get("DGX_OTA_VERSION") or fields.get("DGX_SWBUILD_VERSION")
    if not version or not re.fullmatch(r"\d+(\.\d+)+", version):
        raise ParseError("/etc/dgx-release", "no DGX_OTA_VERSION or DGX_SWBUILD_VERSION of the form 7.5.0", text)
    return version


@dataclass(frozen=True)
class Bios:
    version: str
    date: str

    @property
    def shown(self) -> str:
        return f"{self.version} ({self.date})"


def parse_bios(text: str) -> Bios:
    """`cat /sys/class/dmi/id/bios_version /sys/class/dmi/id/bios_date`: two lines (the kernel's
    dmi-id attributes print the SMBIOS string and a line feed; the date is MM/DD/YYYY)."""
    lines = text.splitlines()
    if len(lines) != 2 or not all(line.strip() for line in lines):
        raise ParseError("/sys/class/dmi/id/bios_version and bios_date", "expected two non-empty lines", text)
    return Bios(lines[0].strip(), lines[1].strip())


_FW_LINE = re.compile(r"/sys/class/infiniband/([^/\s]+)/fw_ver:(\S+)")


def parse_fw_versions(text: str) -> dict[str, str]:
    """`grep -H . /sys/class/infiniband/*/fw_ver`: RDMA device -> firmware (mlx5: major.minor.sub, 28.45.4028)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        m = _FW_LINE.fullmatch(line.strip())
        if m is None:
            raise ParseError("/sys/class/infiniband/*/fw_ver", f"not DEVICE/fw_ver:VERSION: {line[:80]!r}", text)
        found[m[1]] = m[2]
    if not found:
        raise ParseError("/sys/class/infiniband/*/fw_ver", "no RDMA device", text)
    return found


def firmware_shown(versions: dict[str, str]) -> str:
    """One node's ConnectX firmware: the version when every device has it, else each device's."""
    distinct = sorted(set(versions.values()))
    if len(distinct) == 1:
        return distinct[0]
    return ", ".join(f"{dev} {fw}" for dev, fw in sorted(versions.items()))
