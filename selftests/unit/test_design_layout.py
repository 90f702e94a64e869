"""docs/DESIGN.md's layout is true to the tree.

Its "Layout" block places every module: a module that exists and is placed nowhere fails, and so does a
module the block names that is gone. A folder entry (`launch/`, `parsers/`, `sim/` ...) places the modules
its text names, with or without `.py`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "DESIGN.md"
# the folders whose modules the layout places
PLACED = ("gb10check", "fixtures", "sim", "benchmarks")
ENTRY = re.compile(r"^(?P<indent> *)(?P<name>[\w.-]+/?)(?:,|\s|$)")
MODULE = re.compile(r"\b((?:[a-z_][a-z0-9_]*/)*[a-z_][a-z0-9_]*)\.py\b")  # stubs/docker.py: in a subfolder
WORD = re.compile(r"\b[a-z_][a-z0-9_]*\b")


@dataclass
class Entry:
    folder: str  # the path of the folder it sits in ("" at the top)
    name: str  # "x.py" or "x/"
    text: list[str] = field(default_factory=list)

    @property
    def words(self) -> set[str]:
        return set(WORD.findall(" ".join(self.text)))


def layout_block(text: str) -> list[str]:
    """The lines of the fenced block under '## Layout'."""
    after = text.split("\n## Layout\n", 1)[1]
    block = after.split("```\n", 2)[1]
    return block.splitlines()


def entries(lines: list[str]) -> list[Entry]:
    """Each entry with the folder it sits in: a top-level `x/` opens a folder, an entry indented under it (2
    spaces) is in it, and an entry indented 4 under a folder entry (`  reading/`) is in that sub-folder; a line
    indented past that continues the entry above."""
    out: list[Entry] = []
    top, sub = "", ""
    for line in lines:
        match = ENTRY.match(line)
        if match is None or len(match["indent"]) > 4:
            if out:
                out[-1].text.append(line)
            continue
        indent, name = len(match["indent"]), match["name"]
        if indent == 0:
            # the top line may name several folders ("tests_preflight/ tests_network/ ...")
            top, sub = (name.rstrip("/") if name.endswith("/") else ""), ""
            out.append(Entry("", name, [line[len(name) :]]))
        elif indent <= 2 or not sub:
            sub = name.rstrip("/") if name.endswith("/") else ""
            out.append(Entry(top, name, [line[indent + len(name) :]]))
        else:
            out.append(Entry(f"{top}/{sub}", name, [line[indent + len(name) :]]))
    return out


def placed_modules(found: list[Entry]) -> set[str]:
    """Every module path the layout places (relative to the root)."""
    placed: set[str] = set()
    for entry in found:
        base = f"{entry.folder}/" if entry.folder else ""
        if entry.name.endswith(".py"):
            placed.add(base + entry.name)
        # a line like "secret_shapes.py,  token shapes ..." may name a second file on the next line
        for module in MODULE.findall(" ".join(entry.text)):
            if entry.name.endswith("/"):
                placed.add(f"{base}{entry.name}{module}.py")
            else:
                placed.add(f"{base}{module}.py")
    return placed


def existing_modules() -> set[str]:
    out: set[str] = set()
    for top in PLACED:
        for path in (ROOT / top).rglob("*.py"):
            rel = path.relative_to(ROOT)
            if path.name == "__init__.py" or "peer_testinfra" in rel.parts or "_suite" in rel.parts:
                continue
            out.add(rel.as_posix())
    return out


def _folder_places(found: list[Entry], module: str) -> bool:
    """A folder entry names the module by its bare name (parsers/ lists "nvidia, gpu_clocks, ...")."""
    folder, _, name = module.rpartition("/")
    for entry in found:
        base = f"{entry.folder}/" if entry.folder else ""
        is_folder = entry.name.endswith("/") and f"{base}{entry.name}".rstrip("/") == folder
        if is_folder and name.removesuffix(".py") in entry.words:
            return True
    return False


def test_the_layout_block_is_read():
    found = entries(layout_block(DESIGN.read_text(encoding="utf-8")))
    names = {(e.folder, e.name) for e in found}
    assert ("gb10check", "inventory.py") in names
    assert ("fixtures", "settings.py") in names
    assert ("gb10check/deployment", "launch/") in names
    assert ("gb10check/reading", "probes.py") in names


def test_every_module_is_placed_in_the_layout():
    found = entries(layout_block(DESIGN.read_text(encoding="utf-8")))
    placed = placed_modules(found)
    missing = sorted(m for m in existing_modules() if m not in placed and not _folder_places(found, m))
    assert not missing, f"docs/DESIGN.md's Layout places no entry for: {', '.join(missing)}"


def test_every_module_the_layout_names_exists():
    found = entries(layout_block(DESIGN.read_text(encoding="utf-8")))
    gone = sorted(m for m in placed_modules(found) if m.split("/")[0] in PLACED and not (ROOT / m).is_file())
    assert not gone, f"docs/DESIGN.md's Layout names modules that are gone: {', '.join(gone)}"


def test_a_folder_entry_places_its_modules_by_their_bare_names():
    lines = [
        "gb10check/   the library",
        "  parsers/   one module per tool output (nvidia, ufw)",
        "  x.py   a",
        "  reading/   reading the nodes",
        "    y.py   b",
        "    rdma/   (sysfs, ibdev2netdev)",
        "  z.py   c",
    ]
    found = entries(lines)
    assert _folder_places(found, "gb10check/parsers/ufw.py")
    assert not _folder_places(found, "gb10check/parsers/meminfo.py")
    assert _folder_places(found, "gb10check/reading/rdma/sysfs.py")
    assert placed_modules(found) == {"gb10check/x.py", "gb10check/reading/y.py", "gb10check/z.py"}
