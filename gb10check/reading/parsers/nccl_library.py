"""Which NCCL library the deployment's container loads, its version and a hash of the file.

Read inside the container with one command per node (tests_preflight/test_skew.py), a script of
plain POSIX sh: the libnccl a running process of the container has mapped (/proc/*/maps), else
where vLLM's torch finds it (the nvidia-nccl-cu* wheel's site-packages/nvidia/nccl/lib/libnccl.so.2,
which torch's RPATH names first), else the system's (`ldconfig -p`); then `sha256sum` of that file
and the version string NCCL builds into it ("NCCL version 2.28.9+cuda13.0", src/init.cc
VERSION_STRING, there "so that running strings on the lib can quickly reveal the version").
A pip-bundled and a system NCCL may both say 2.28.9 and be different binaries (vLLM issue
#42354): the hash tells them apart.

The same script first says whether the container's libmlx5 (rdma-core's mlx5 provider) exports
mlx5dv_reg_dmabuf_mr: NCCL 2.27 and later look it up with dlvsym and, where it is missing, run
without GPU Direct RDMA ("GDR 0", NVIDIA/nccl issue #2213). The symbol's name is in the library's
dynamic string table, which `grep -c` finds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gb10check.errors import ParseError

__all__ = [
    "HOW",
    "MARK",
    "MLX5_MARK",
    "SCRIPT",
    "ContainerLibraries",
    "Mlx5",
    "NcclLibrary",
    "parse_container_libraries",
    "parse_nccl_library",
]

MARK = "gb10check-nccl"
MLX5_MARK = "gb10check-mlx5"
_MLX5 = "/usr/lib/*-linux-gnu/libmlx5.so.1 /lib/*-linux-gnu/libmlx5.so.1 /usr/lib64/libmlx5.so.1"
# how the library was found: mapped by a running process, where torch looks (its wheel), the system's
HOW = ("loaded", "torch", "ldconfig")
_WHEEL = "/usr/local/lib/python3*/dist-packages /usr/local/lib/python3*/site-packages /usr/lib/python3/dist-packages"
SCRIPT = (
    f"m=$(ls {_MLX5} 2>/dev/null | head -n 1); "
    f'if [ -z "$m" ]; then echo "{MLX5_MARK} none"; elif grep -q mlx5dv_reg_dmabuf_mr "$m"; '
    f'then echo "{MLX5_MARK} dmabuf $m"; else echo "{MLX5_MARK} no-dmabuf $m"; fi; '
    "f=$(grep -ho '/[^ ]*/libnccl[.]so[.0-9]*' /proc/[0-9]*/maps 2>/dev/null | head -n 1); how=loaded; "
    f'if [ -z "$f" ]; then how=torch; for d in {_WHEEL}; do '
    'c="$d/nvidia/nccl/lib/libnccl.so.2"; if [ -f "$c" ]; then f=$c; break; fi; done; fi; '
    "if [ -z \"$f\" ]; then how=ldconfig; f=$(ldconfig -p 2>/dev/null | grep -o '/[^ ]*/libnccl[.]so[.]2$' "
    "| head -n 1); fi; "
    f'if [ -z "$f" ]; then echo "{MARK} none"; exit 0; fi; '
    f'echo "{MARK} $how $f"; sha256sum "$f" || exit 3; '
    "grep -ao 'NCCL version [0-9][0-9.]*[^[:space:][:cntrl:]]*' \"$f\" | head -n 1"
)


@dataclass(frozen=True)
class NcclLibrary:
    how: str  # loaded | torch | ldconfig
    path: str
    sha256: str
    version: str | None  # None: the file holds no NCCL version string

    @property
    def compared(self) -> str:
        """What must be the same on every node: the version and the file's hash (not where it lies)."""
        return f"{self.version or 'no version string'}, sha256 {self.sha256[:16]}"

    @property
    def shown(self) -> str:
        where = {"loaded": "loaded by vLLM", "torch": "torch's wheel", "ldconfig": "the system's"}[self.how]
        return f"{self.compared}: {self.path} ({where})"


_HEAD = re.compile(rf"{MARK} (?P<how>{'|'.join(HOW)}) (?P<path>/\S+)")
_SUM = re.compile(r"(?P<sha>[0-9a-f]{64}) [ *](?P<path>/\S+)")
_VERSION = re.compile(r"NCCL version (?P<v>\d+\.\d+\.\d+\S*)")


@dataclass(frozen=True)
class Mlx5:
    path: str
    dmabuf: bool  # exports mlx5dv_reg_dmabuf_mr


@dataclass(frozen=True)
class ContainerLibraries:
    """What the script found in the container: its NCCL (None: none) and its libmlx5 (None: none)."""

    nccl: NcclLibrary | None
    mlx5: Mlx5 | None


_MLX5_LINE = re.compile(rf"{MLX5_MARK} (?:none|(?P<how>dmabuf|no-dmabuf) (?P<path>/\S+))")


def parse_container_libraries(text: str, what: str = "the container's NCCL library") -> ContainerLibraries:
    """The script's output: its libmlx5 line, then what parse_nccl_library reads."""
    first, _, rest = text.lstrip().partition("\n")
    m = _MLX5_LINE.fullmatch(first.strip())
    if m is None:
        raise ParseError(what, f"expected `{MLX5_MARK} none` or `{MLX5_MARK} dmabuf|no-dmabuf PATH` first", text)
    mlx5 = Mlx5(m["path"], m["how"] == "dmabuf") if m["how"] else None
    return ContainerLibraries(parse_nccl_library(rest, what), mlx5)


def parse_nccl_library(text: str, what: str = "the container's NCCL library") -> NcclLibrary | None:
    """The script's NCCL part: its head line, sha256sum's line, the version string (if any); None when the
    container has no libnccl at all."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if lines == [f"{MARK} none"]:
        return None
    head = _HEAD.fullmatch(lines[0]) if lines else None
    if head is None or len(lines) not in (2, 3):
        raise ParseError(what, f"expected `{MARK} HOW PATH`, sha256sum's line and NCCL's version string", text)
    digest = _SUM.fullmatch(lines[1])
    if digest is None or digest["path"] != head["path"]:
        raise ParseError(what, "sha256sum's line is not `HASH  PATH` of the library", text)
    version = _VERSION.fullmatch(lines[2]) if len(lines) == 3 else None
    if len(lines) == 3 and version is None:
        raise ParseError(what, f"not NCCL's version string: {lines[2][:80]!r}", text)
    return NcclLibrary(head["how"], head["path"], digest["sha"], version["v"] if version else None)
