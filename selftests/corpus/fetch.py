#!/usr/bin/env python3
"""Rebuild the deployment corpus (selftests/corpus/deployments.toml) into selftests/corpus/files/.

Each entry names a public repository, a commit and a path; the file (and the entry's `extra` files
beside it, which the launcher reads or mounts) is written to files/OWNER+NAME/PATH. By default each
is fetched from https://raw.githubusercontent.com/REPO/COMMIT/PATH; with --mirror DIR, from local
git mirrors instead: DIR/OWNER+NAME is a bare repository (or holds one in DIR/OWNER+NAME/repo), read
with `git show COMMIT:PATH`. The files are other people's code: they are git-ignored and never
committed; this script and the list are.

Exit status: 0 every file written; 1 one or more files could not be had (each named on stderr);
2 the command line or the list is wrong.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
LIST = HERE / "deployments.toml"
FILES = HERE / "files"
RAW = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"
TIMEOUT = 30.0  # seconds for one download


def wanted(entries: list[dict[str, object]]) -> list[tuple[str, str, str]]:
    """(repo, commit, path) of every file the entries need, each once, in order."""
    out: dict[tuple[str, str, str], None] = {}
    for e in entries:
        repo, commit = str(e["repo"]), str(e["commit"])
        for path in [str(e["path"]), *(str(p) for p in e.get("extra", []))]:  # type: ignore[attr-defined]
            out[(repo, commit, path)] = None
    return list(out)


def local_path(repo: str, path: str) -> Path:
    return FILES / repo.replace("/", "+") / path


def from_mirror(mirror: Path, repo: str, commit: str, path: str) -> bytes:
    base = mirror / repo.replace("/", "+")
    git_dir = base / "repo" if (base / "repo").is_dir() else base
    run = subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"], capture_output=True, timeout=60
    )
    if run.returncode != 0:
        raise OSError(run.stderr.decode(errors="replace").strip() or f"git show exited {run.returncode}")
    return run.stdout


def from_github(repo: str, commit: str, path: str) -> bytes:
    url = RAW.format(repo=repo, commit=commit, path=path)
    with urllib.request.urlopen(url, timeout=TIMEOUT) as answer:
        body: bytes = answer.read()
    return body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="exit status: 0 every file written, 1 some file could not be had, 2 usage or list error",
    )
    parser.add_argument("--mirror", type=Path, metavar="DIR", help="read from local git mirrors DIR/OWNER+NAME")
    parser.add_argument("--list", type=Path, default=LIST, help=f"the corpus list (default {LIST})")
    opts = parser.parse_args(argv)
    try:
        entries = tomllib.loads(opts.list.read_text())["deployment"]
    except (OSError, tomllib.TOMLDecodeError, KeyError) as exc:
        print(f"fetch.py: cannot read the list {opts.list}: {exc}", file=sys.stderr)
        return 2
    if opts.mirror is not None and not opts.mirror.is_dir():
        print(f"fetch.py: --mirror {opts.mirror} is not a directory", file=sys.stderr)
        return 2
    failed = 0
    for repo, commit, path in wanted(entries):
        try:
            body = from_mirror(opts.mirror, repo, commit, path) if opts.mirror else from_github(repo, commit, path)
        except (OSError, urllib.error.URLError, subprocess.TimeoutExpired) as exc:
            print(f"fetch.py: {repo}@{commit[:12]}:{path}: {exc}", file=sys.stderr)
            failed += 1
            continue
        target = local_path(repo, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)
        print(f"{target}  ({len(body)} bytes)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
