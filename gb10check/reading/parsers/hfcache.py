"""A model's folder in the Hugging Face hub cache, from one `find -printf` listing.

Layout: models--ORG--NAME/{refs/main, snapshots/<rev>/<files>, blobs/<hash>}; snapshot entries
are relative symlinks into blobs/. Pure: the listing in, sizes, links and permissions out.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from gb10check.errors import ParseError, excerpt
from gb10check.reading.parsers.framed import parse_word

__all__ = [
    "LISTING_FORMAT",
    "NETWORK_FILESYSTEMS",
    "SMALL_FILES",
    "Entry",
    "SnapshotFile",
    "parse_fs_type",
    "parse_index_total_size",
    "parse_listing",
    "parse_revision",
    "parse_sha256sums",
    "readable_by",
    "snapshot_files",
]

# find DIR -printf '%y\t%m\t%u\t%g\t%s\t%P\t%l\n'
LISTING_FORMAT = r"%y\t%m\t%u\t%g\t%s\t%P\t%l\n"


@dataclass(frozen=True)
class Entry:
    kind: str  # f d l (find's %y)
    mode: int
    owner: str
    group: str
    size: int
    path: str  # relative to the model folder
    target: str  # symlink target, as written


def parse_listing(text: str) -> dict[str, Entry]:
    entries: dict[str, Entry] = {}
    for line in text.splitlines():
        if not line:
            continue
        parts = line.split("\t")
        if len(parts) != 7 or parts[0] not in ("f", "d", "l", "p", "s", "b", "c") or not parts[4].isdigit():
            raise ParseError("the HF cache listing (find -printf)", f"unexpected line {excerpt(line, 120)}", text)
        try:
            mode = int(parts[1], 8)
        except ValueError as exc:
            raise ParseError("the HF cache listing (find -printf)", f"bad mode in {excerpt(line, 120)}", text) from exc
        entries[parts[5]] = Entry(parts[0], mode, parts[2], parts[3], int(parts[4]), parts[5], parts[6])
    if "" not in entries:  # the folder itself (%P is empty for the starting point)
        raise ParseError("the HF cache listing (find -printf)", "the model folder itself is not listed", text)
    return entries


_REVISION = re.compile(r"^[0-9a-f]{40}$")


def parse_revision(text: str) -> str:
    """refs/main: the commit hash the snapshot folder is named after."""
    value = text.strip()
    if not _REVISION.match(value):
        raise ParseError("refs/main", "expected a 40-hex commit hash", text)
    return value


@dataclass(frozen=True)
class SnapshotFile:
    name: str  # relative to snapshots/<rev>/
    size: int  # of the content (the blob for a link)
    linked: bool  # a symlink into blobs/, as the hub writes it
    content: Entry | None  # the entry holding the bytes (None: a dangling link)


def snapshot_files(entries: dict[str, Entry], revision: str) -> dict[str, SnapshotFile]:
    prefix = f"snapshots/{revision}/"
    out: dict[str, SnapshotFile] = {}
    for path, entry in entries.items():
        if not path.startswith(prefix) or entry.kind == "d":
            continue
        name = path[len(prefix) :]
        if entry.kind == "l":
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), entry.target))
            blob = entries.get(resolved)
            linked = resolved.startswith("blobs/")
            out[name] = SnapshotFile(name, blob.size if blob else 0, linked, blob)
        else:
            out[name] = SnapshotFile(name, entry.size, False, entry)
    return out


def readable_by(entry: Entry, user: str, groups: frozenset[str]) -> bool:
    """Mode bits as the kernel applies them to `user` (directories also need x to be entered)."""
    if user == "root":
        return True
    need = 0o5 if entry.kind == "d" else 0o4
    if entry.owner == user:
        bits = (entry.mode >> 6) & 0o7
    elif entry.group in groups:
        bits = (entry.mode >> 3) & 0o7
    else:
        bits = entry.mode & 0o7
    return bits & need == need


_TOTAL = re.compile(r'"total_size"\s*:\s*(\d+(?:\.\d+)?)')


def parse_index_total_size(text: str) -> int:
    """model.safetensors.index.json (its head is enough): metadata.total_size in bytes."""
    match = _TOTAL.search(text)
    if not match:
        raise ParseError("model.safetensors.index.json", "no metadata.total_size", text)
    return int(float(match.group(1)))


# the model's small files whose content says what the weights are and how they are read: hashed on every node
# (a few MB in all; the shards are compared by name and size, never hashed by default)
SMALL_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors.index.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
)
_SHA_LINE = re.compile(r"(?P<sha>[0-9a-f]{64}) [ *](?P<name>\S+)")


def parse_sha256sums(text: str) -> dict[str, str]:
    """`sha256sum FILE...` of the snapshot's small files: file -> sha256 (the files it has)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        m = _SHA_LINE.fullmatch(line.strip())
        if m is None:
            raise ParseError("sha256sum of the model's small files", f"not `HASH  FILE`: {excerpt(line, 120)}", text)
        found[m["name"]] = m["sha"]
    return found


# the filesystems that share one folder between nodes (stat -f -c %T's names, as coreutils prints them)
NETWORK_FILESYSTEMS = ("nfs", "nfs4", "cifs", "smb2", "smb3", "fuse.sshfs", "fuseblk", "lustre", "gpfs", "ceph")


def parse_fs_type(text: str) -> str:
    """`stat -f -c %T PATH`: the filesystem's type name (ext2/ext3, xfs, nfs, tmpfs, ...)."""
    return parse_word(text, "stat -f -c %T (the HF cache's filesystem)")
