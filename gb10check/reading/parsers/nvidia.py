"""NVIDIA driver versions: /proc/driver/nvidia/version, /sys/module/nvidia/version, nvidia-smi."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gb10check.errors import ParseError, excerpt

__all__ = [
    "VERSION",
    "GpuRow",
    "KernelModule",
    "NoDriver",
    "NvidiaSmiQuery",
    "NvidiaSmiResult",
    "NvmlMismatch",
    "parse_modinfo_version",
    "parse_module_version",
    "parse_nvidia_smi_query",
    "parse_proc_driver_version",
]

VERSION = r"\d{2,4}\.\d{1,3}(?:\.\d{1,3})?"
_VERSION_RE = re.compile(rf"^{VERSION}$")


@dataclass(frozen=True)
class KernelModule:
    version: str
    open_source: bool
    arch: str | None


_NVRM_RE = re.compile(
    rf"NVRM version:\s+NVIDIA UNIX\s+(?P<pre>.*?)Kernel Module(?P<post>.*?)\s+(?P<version>{VERSION})\s"
)


def parse_proc_driver_version(text: str) -> KernelModule:
    """`cat /proc/driver/nvidia/version`: the version of the *loaded* kernel module."""
    match = _NVRM_RE.search(text + " ")
    if not match:
        raise ParseError("/proc/driver/nvidia/version", "no 'NVRM version: ... Kernel Module <version>'", text)
    words = (match["pre"] + " " + match["post"]).split()
    arch = next((w for w in words if w in {"x86_64", "aarch64", "ppc64le"}), None)
    return KernelModule(version=match["version"], open_source="Open" in words, arch=arch)


def parse_module_version(text: str) -> str:
    """`cat /sys/module/nvidia/version`: a bare version string."""
    value = text.strip()
    if not _VERSION_RE.match(value):
        raise ParseError("/sys/module/nvidia/version", "expected a bare driver version", text)
    return value


@dataclass(frozen=True)
class GpuRow:
    driver_version: str
    name: str


@dataclass(frozen=True)
class NvidiaSmiQuery:
    """`nvidia-smi --query-gpu=driver_version,name --format=csv,noheader` answered."""

    gpus: tuple[GpuRow, ...]

    @property
    def driver_version(self) -> str:
        return self.gpus[0].driver_version


@dataclass(frozen=True)
class NvmlMismatch:
    """NVML refused to start: the userspace library and the loaded module differ."""

    library_version: str | None


@dataclass(frozen=True)
class NoDriver:
    """nvidia-smi could not talk to any driver (module not loaded)."""

    message: str


NvidiaSmiResult = NvidiaSmiQuery | NvmlMismatch | NoDriver

_MISMATCH = "Driver/library version mismatch"
_LIBVER_RE = re.compile(rf"NVML library version:\s*({VERSION})")
_NO_DRIVER_RE = re.compile(r"couldn't communicate with the NVIDIA driver", re.IGNORECASE)


def parse_nvidia_smi_query(text: str) -> NvidiaSmiResult:
    """The driver_version,name query, or one of nvidia-smi's known refusals."""
    if _MISMATCH in text:
        lib = _LIBVER_RE.search(text)
        return NvmlMismatch(library_version=lib.group(1) if lib else None)
    if _NO_DRIVER_RE.search(text):
        return NoDriver(message=" ".join(text.split()))
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != 2 or not _VERSION_RE.match(fields[0]) or not fields[1]:
            raise ParseError(
                "nvidia-smi --query-gpu=driver_version,name", f"unexpected line {excerpt(line, 120)}", text
            )
        rows.append(GpuRow(driver_version=fields[0], name=fields[1]))
    if not rows:
        raise ParseError("nvidia-smi --query-gpu=driver_version,name", "no GPU rows", text)
    return NvidiaSmiQuery(gpus=tuple(rows))


def parse_modinfo_version(text: str) -> str:
    """`modinfo -F version nvidia`: the version of the module installed on disk (the next boot's)."""
    value = text.strip()
    if "not found" in value:
        raise ParseError("modinfo -F version nvidia", "no nvidia module installed", text)
    if not _VERSION_RE.match(value):
        raise ParseError("modinfo -F version nvidia", "expected a bare driver version", text)
    return value
