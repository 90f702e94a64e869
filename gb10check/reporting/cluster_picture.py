"""The cluster as report.html draws it: nodes and rails as an inline SVG, each coloured by its checks.

summary.json's `cluster` gives the shape (topology, nodes by rank, rails and their members) and its
rows the verdicts. Every node, rail, pair of members of a rail (a rail pair) and pair of nodes is a
`Part` with the checks about it; the drawing colours each by the worst of its checks:
- a node box by the checks about that node alone;
- a pair or a ring: each rail a line between its two members, its two ends coloured by each member's
  checks (its netdev, port, link) and its middle by the rail pair's (ping, RDMA write, bandwidth) and the
  rail's; the rail pair's Gb/s (the rail alone) written on it; the node pair's checks (a login, all rails at
  once) are listed in each of its lines' panels and coloured in the matrix, never on a rail that passed;
- a switch: one box with its rails, every node linked to each rail (the line coloured by that member's
  checks), each rail's row in the box by the rail's checks; a pair of nodes that failed drawn between them
  (every pair's Gb/s is in the matrix beside the picture).
Pure geometry: the template draws it, autoescaped (a node's name is text there, never markup).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from gb10check.judging.root_cause import BAD

__all__ = [
    "LABEL_CHAR",
    "MARGIN",
    "PAIR_WIDTH",
    "SQUARE_FROM",
    "WIDTH",
    "Box",
    "Line",
    "MatrixCell",
    "MatrixRow",
    "Part",
    "Picture",
    "RailRow",
    "Segment",
    "figures_of",
    "picture",
    "state_of",
]

WIDTH = 640
PAIR_WIDTH = 540
MARGIN = 35.0  # px above the top box and below the bottom one (labels, the focus outline)
LABEL_CHAR = 7.5  # px: a link label's character (13 px, bold), for keeping the label off its line
SQUARE_FROM = 7  # pairs: from this many the matrix is a square, node by node (a list of 28 pairs is long)


def state_of(verdicts: Iterable[str]) -> str:
    """The colour of a part: failed if any check about it did not pass, passed if one passed, skipped if
    all were skipped, none when no check was about it."""
    seen = set(verdicts)
    if seen & set(BAD):
        return "failed"
    if "passed" in seen:
        return "passed"
    return "skipped" if "skipped" in seen else "none"


@dataclass
class Part:
    """A thing the checks are about: its anchor, what the panel calls it, and its checks' rows."""

    anchor: str
    heading: str
    rows: list[dict[str, Any]] = field(default_factory=list)  # the checks that colour it
    also: list[dict[str, Any]] = field(default_factory=list)  # listed in its panel, colouring it not

    @property
    def state(self) -> str:
        return state_of(r["verdict"] for r in self.rows)

    @property
    def listed(self) -> list[dict[str, Any]]:
        return list({id(r): r for r in [*self.rows, *self.also]}.values())


@dataclass(frozen=True)
class Box:
    part: Part
    x: float  # centre
    y: float
    w: float
    h: float
    label: str
    sub: str  # "rank 0 · API"

    def edge(self, tx: float, ty: float, margin: float = 2.0) -> tuple[float, float]:
        """Where the line from this box's centre toward (tx, ty) leaves the box."""
        dx, dy = tx - self.x, ty - self.y
        if dx == dy == 0:
            return self.x, self.y
        t = min(self.w / 2 / abs(dx) if dx else math.inf, self.h / 2 / abs(dy) if dy else math.inf)
        length = math.hypot(dx, dy)
        return self.x + dx * t + dx / length * margin, self.y + dy * t + dy / length * margin


@dataclass(frozen=True)
class Segment:
    x1: float
    y1: float
    x2: float
    y2: float
    state: str


@dataclass(frozen=True)
class Line:
    """A link drawn: its segments (ends and middle coloured apart), where a click lands, its label."""

    part: Part
    segments: list[Segment]
    tip: str
    label: str = ""
    lx: float = 0.0
    ly: float = 0.0
    dashed: bool = False

    @property
    def hit(self) -> Segment:
        return Segment(self.segments[0].x1, self.segments[0].y1, self.segments[-1].x2, self.segments[-1].y2, "")


@dataclass(frozen=True)
class RailRow:
    part: Part
    x: float
    y: float
    w: float
    h: float
    name: str


@dataclass
class Picture:
    topology: str
    width: int
    height: int
    boxes: list[Box]
    lines: list[Line]
    switch: Box | None = None
    rail_rows: list[RailRow] = field(default_factory=list)
    parts: list[Part] = field(default_factory=list)  # every part, for the panels
    matrix: list[MatrixRow] = field(default_factory=list)
    slots: list[str] = field(default_factory=list)  # the matrix's rail columns
    caption: str = ""

    @property
    def square(self) -> list[tuple[str, list[MatrixRow | None]]]:
        """The matrix node by node when it has many pairs (a switch of 5-8): a row per node but the last, a
        column per node but the first (rank order), each pair in the cell where its two meet."""
        if len(self.matrix) < SQUARE_FROM:
            return []
        names = [box.label for box in self.boxes]
        by_pair = {(m.a, m.b): m for m in self.matrix}
        return [(a, [by_pair.get((a, b)) for b in names[1:]]) for a in names[:-1]]


@dataclass(frozen=True)
class MatrixCell:
    part: Part
    text: str  # "109 Gb/s", or what stands for a missing figure
    rail: str  # shown in the cell when the column is not one rail's


@dataclass(frozen=True)
class MatrixRow:
    a: str
    b: str
    cells: list[MatrixCell | None]  # one per rail slot
    together: MatrixCell | None

    @property
    def parts(self) -> list[Part]:
        return [c.part for c in [*self.cells, self.together] if c is not None]

    @property
    def state(self) -> str:
        return state_of(p.state for p in self.parts)

    @property
    def href(self) -> str:
        """Where a click on the pair goes: its first failed part, else the pair (all rails at once)."""
        bad = [p for p in self.parts if p.state == "failed"]
        return (bad or [self.together.part if self.together else self.parts[0]])[0].anchor


def _gbps(value: float | None) -> str:
    return "" if value is None else f"{value:.0f}" if value >= 100 else f"{value:.3g}"


class _Parts:
    """The rows sorted onto the parts they are about (a row may concern several)."""

    def __init__(self, cluster: dict[str, Any], rows: list[dict[str, Any]]) -> None:
        self.rank = {n["name"]: n["rank"] for n in cluster.get("nodes", [])}
        self.rails = [r["name"] for r in cluster.get("rails", [])]
        self.members = {r["name"]: [m["node"] for m in r.get("members", [])] for r in cluster.get("rails", [])}
        self.netdev = {(m["node"], r["name"]): m["netdev"] for r in cluster.get("rails", []) for m in r["members"]}
        api = cluster.get("api_node")
        self.node = {
            n: Part(f"sel-n{k}", f"{n} (rank {k}{', the API' if n == api else ''})") for n, k in self.rank.items()
        }
        self.rail = {r: Part(f"sel-r{i}", f"rail {r}") for i, r in enumerate(self.rails)}
        self.member: dict[tuple[str, str], Part] = {}
        self.rail_pair: dict[tuple[str, str, str], Part] = {}
        self.node_pair: dict[tuple[str, str], Part] = {}
        for i, rail in enumerate(self.rails):
            ends = self.ordered(self.members[rail])
            for node in ends:
                self.member[(node, rail)] = Part(
                    f"sel-m{self.rank[node]}-{i}", f"{node} {self.netdev[(node, rail)]}" + self._on(node, rail)
                )
            for x, a in enumerate(ends):
                for b in ends[x + 1 :]:
                    self.rail_pair[(a, b, rail)] = Part(
                        f"sel-p{self.rank[a]}-{self.rank[b]}-{i}", f"{a} and {b} over rail {rail}"
                    )
                    self.node_pair.setdefault(
                        (a, b), Part(f"sel-q{self.rank[a]}-{self.rank[b]}", f"{a} and {b}, every rail at once")
                    )
        for row in rows:
            self._sort(row)

    def _on(self, node: str, rail: str) -> str:
        return "" if self.netdev[(node, rail)] == rail else f" (rail {rail})"

    def ordered(self, nodes: Iterable[str]) -> list[str]:
        return sorted(set(nodes), key=lambda n: self.rank.get(n, 1 << 30))

    def _sort(self, row: dict[str, Any]) -> None:
        nodes = [n for n in row.get("nodes") or [] if n in self.rank]
        rail: str | None = row.get("rail")
        if len(nodes) == 1 and rail is None:
            self.node[nodes[0]].rows.append(row)
        elif len(nodes) == 1 and rail is not None and (nodes[0], rail) in self.member:
            self.member[(nodes[0], rail)].rows.append(row)
            self.node[nodes[0]].also.append(row)
        elif len(nodes) == 2:
            a, b = self.ordered(nodes)
            for node in (a, b):
                self.node[node].also.append(row)
            if rail is not None and (a, b, rail) in self.rail_pair:
                self.rail_pair[(a, b, rail)].rows.append(row)
            elif (a, b) in self.node_pair:
                self.node_pair[(a, b)].rows.append(row)
        elif not nodes and rail in self.rail:
            self.rail[rail].rows.append(row)

    def all(self) -> list[Part]:
        return [*self.node.values(), *self.rail.values(), *self.member.values(), *self.rail_pair.values(),
                *self.node_pair.values()]  # fmt: skip


def _circle(count: int, cx: float, cy: float, rx: float, ry: float) -> list[tuple[float, float]]:
    """`count` places on an ellipse, the first at the top, clockwise (a pair: left and right)."""
    if count == 1:
        return [(cx, cy)]
    if count == 2:
        return [(cx - rx, cy), (cx + rx, cy)]
    angles = [-math.pi / 2 + 2 * math.pi * k / count for k in range(count)]
    return [(cx + rx * math.cos(a), cy + ry * math.sin(a)) for a in angles]


def _fitted(
    places: list[tuple[float, float]], h: float, also: tuple[float, ...] = ()
) -> tuple[list[tuple[float, float]], int, float]:
    """Places around y = 0 moved down so the drawing starts at its top box (three nodes on a circle leave
    its lower third empty): the places, the drawing's height, and where y = 0 went."""
    ys = [y for _, y in places] + list(also)
    top, bottom = min(ys) - h / 2 - MARGIN, max(ys) + h / 2 + MARGIN
    return [(x, y - top) for x, y in places], int(bottom - top), -top


def _boxes(parts: _Parts, places: list[tuple[float, float]], w: float, h: float, api: str | None) -> list[Box]:
    nodes = parts.ordered(parts.rank)
    return [
        Box(parts.node[n], x, y, w, h, n, f"rank {parts.rank[n]}" + (" · API" if n == api else ""))
        for n, (x, y) in zip(nodes, places, strict=True)
    ]


def _direct(parts: _Parts, boxes: dict[str, Box], figures: dict[tuple[str, str, str | None], float]) -> list[Line]:
    """A pair or a ring: each rail a line between its two members, side by side when they share several."""
    lines = []
    for (a, b), pair in parts.node_pair.items():
        rails = [r for r in parts.rails if (a, b, r) in parts.rail_pair]
        ba, bb = boxes[a], boxes[b]
        dx, dy = bb.x - ba.x, bb.y - ba.y
        length = math.hypot(dx, dy) or 1.0
        nx, ny = -dy / length, dx / length  # the normal: rails side by side
        gap = 30.0 if len(rails) > 1 else 0.0
        for i, rail in enumerate(rails):
            offset = (i - (len(rails) - 1) / 2) * gap
            ox, oy = nx * offset, ny * offset
            x1, y1 = _edge_shifted(ba, bb, ox, oy)
            x2, y2 = _edge_shifted(bb, ba, ox, oy)
            link = parts.rail_pair[(a, b, rail)]
            link.also += [*parts.member[(a, rail)].rows, *parts.member[(b, rail)].rows, *pair.rows,
                          *parts.rail[rail].rows]  # fmt: skip
            middle = state_of(r["verdict"] for r in [*link.rows, *parts.rail[rail].rows])
            ends = (parts.member[(a, rail)].state, parts.member[(b, rail)].state)
            f1, f2 = 0.22, 0.78
            pa = (x1 + (x2 - x1) * f1, y1 + (y2 - y1) * f1)
            pb = (x1 + (x2 - x1) * f2, y1 + (y2 - y1) * f2)
            segments = [
                Segment(x1, y1, *pa, ends[0]), Segment(*pa, *pb, middle), Segment(*pb, x2, y2, ends[1]),
            ]  # fmt: skip
            gbps = figures.get((a, b, rail))
            side = 1.0 if offset > 0 else -1.0  # the label on the far side of its own line from the other rail's
            mx, my = (x1 + x2) / 2, (y1 + y2) / 2
            text = f"{_gbps(gbps)} Gb/s" if gbps is not None else ("no figure" if link.rows else "")
            tip = f"{a} and {b} over rail {rail}" + (f": {_gbps(gbps)} Gb/s alone" if gbps is not None else "")
            # clear of the line: the text's half-width and half-height projected on the line's normal
            away = abs(nx) * LABEL_CHAR * len(text) / 2 + abs(ny) * 7 + 4
            lx, ly = mx + nx * side * away, my + ny * side * away + 4  # + 4: the text's baseline
            lines.append(Line(link, segments, tip, text, lx, ly, dashed=middle == "failed"))
    return lines


def _edge_shifted(box: Box, other: Box, ox: float, oy: float) -> tuple[float, float]:
    shifted = Box(box.part, box.x + ox, box.y + oy, box.w, box.h, box.label, box.sub)
    return shifted.edge(other.x + ox, other.y + oy)


def _matrix(parts: _Parts, figures: dict[tuple[str, str, str | None], float]) -> tuple[list[str], list[MatrixRow]]:
    """Rows: each pair of nodes; columns: their rails (one column per rail when the pairs share the rails'
    names, as a switch's and a pair's do; else their first, second... rail), then all rails at once."""
    per_pair = {pair: [r for r in parts.rails if (*pair, r) in parts.rail_pair] for pair in parts.node_pair}
    shared = len({tuple(r) for r in per_pair.values()}) == 1
    width = max((len(r) for r in per_pair.values()), default=0)
    slots = list(next(iter(per_pair.values()))) if shared and per_pair else [f"rail {i + 1}" for i in range(width)]
    out = []
    for (a, b), rails in per_pair.items():
        cells: list[MatrixCell | None] = []
        for rail in rails:
            part = parts.rail_pair[(a, b, rail)]
            value = figures.get((a, b, rail))
            cells.append(MatrixCell(part, f"{_gbps(value)}" if value is not None else "–", "" if shared else rail))
        cells += [None] * (width - len(cells))
        together = None
        if len(rails) > 1:
            value = figures.get((a, b, None))
            together = MatrixCell(parts.node_pair[(a, b)], _gbps(value) if value is not None else "–", "")
        out.append(MatrixRow(a, b, cells, together))
    return slots, out


def figures_of(matrix: list[dict[str, Any]], parts: _Parts) -> dict[tuple[str, str, str | None], float]:
    """summary.json's matrix as (a, b, rail) -> Gb/s: each rail alone; (a, b, None): all rails at once."""
    out: dict[tuple[str, str, str | None], float] = {}
    for m in matrix:
        a, b = parts.ordered([m["a"], m["b"]])
        if not m["at_once"] or m["rail"] is None:
            out[(a, b, m["rail"])] = float(m["gbps"])
    return out


def picture(cluster: dict[str, Any], rows: list[dict[str, Any]], matrix: list[dict[str, Any]]) -> Picture | None:
    """The picture of the cluster the summary describes; None without one (a run stopped before the inventory)."""
    if not cluster or not cluster.get("nodes"):
        return None
    parts = _Parts(cluster, rows)
    figures = figures_of(matrix, parts)
    topology, count, api = cluster.get("topology", "pair"), len(parts.rank), cluster.get("api_node")
    slots, table = _matrix(parts, figures)
    if topology == "switch":
        return _switch(parts, count, api, figures, slots, table)
    w, h = (170.0, 50.0) if count <= 4 else (150.0, 46.0)
    width = WIDTH
    if count <= 2:  # narrower: on a phone its names stay as large as the page's small print
        width, height = PAIR_WIDTH, 120 + 30 * max(0, len(parts.rails) - 1)
        boxes = _boxes(parts, _circle(count, width / 2, height / 2, (width - w) / 2 - 8, 0), w, h, api)
    else:
        rx, ry = (200.0, 150.0) if count <= 4 else (225.0, 200.0)
        places, height, _ = _fitted(_circle(count, WIDTH / 2, 0.0, rx, ry), h)
        boxes = _boxes(parts, places, w, h, api)
    lines = _direct(parts, {b.label: b for b in boxes}, figures)
    caption = {
        "single": "one node, no fabric",
        "pair": "two nodes, direct cables: a line per rail, its Gb/s the rail alone",
        "ring": "a ring: each cable's two rails between neighbours, their Gb/s each rail alone",
    }.get(topology, topology)
    return Picture(topology, width, height, boxes, lines, parts=parts.all(), matrix=table, slots=slots,
                   caption=caption)  # fmt: skip


def _switch(
    parts: _Parts, count: int, api: str | None, figures: dict[tuple[str, str, str | None], float],
    slots: list[str], table: list[MatrixRow],
) -> Picture:  # fmt: skip
    """A switch: the switch box in the middle, its rails listed in it; every node around it, a line to the box
    per rail (that member's checks colour it); pairs of nodes with a failed check drawn between them."""
    w, h = (170.0, 50.0) if count <= 4 else (150.0, 46.0)
    rx, ry = (220.0, 140.0) if count <= 4 else (230.0, 190.0)
    row_h = 24.0
    half = (26.0 + row_h * len(parts.rails)) / 2  # the switch box's half-height
    places, height, cy = _fitted(_circle(count, WIDTH / 2, 0.0, rx, ry), h, (-half, half))
    cx = WIDTH / 2
    boxes = _boxes(parts, places, w, h, api)
    sw = Box(Part("sel-switch", "the switch"), cx, cy, 190.0, 26.0 + row_h * len(parts.rails), "switch", "")
    rail_rows = [
        RailRow(parts.rail[r], cx - sw.w / 2 + 6, cy - sw.h / 2 + 22 + i * row_h, sw.w - 12, row_h - 4, r)
        for i, r in enumerate(parts.rails)
    ]
    for rail in parts.rails:  # a rail's panel lists its pairs too
        parts.rail[rail].also += [r for (a, b, x), p in parts.rail_pair.items() if x == rail for r in p.rows]
    lines = []
    for box in boxes:
        node = box.label
        rails = [r for r in parts.rails if (node, r) in parts.member]
        dx, dy = cx - box.x, cy - box.y
        length = math.hypot(dx, dy) or 1.0
        nx, ny = -dy / length, dx / length
        for i, rail in enumerate(rails):
            offset = (i - (len(rails) - 1) / 2) * 12.0
            ox, oy = nx * offset, ny * offset
            x1, y1 = _edge_shifted(box, sw, ox, oy)
            x2, y2 = _edge_shifted(sw, box, ox, oy)
            member = parts.member[(node, rail)]
            tip = f"{node} {parts.netdev[(node, rail)]} to the switch of rail {rail}"
            lines.append(Line(member, [Segment(x1, y1, x2, y2, member.state)], tip, dashed=member.state == "failed"))
    by_name = {b.label: b for b in boxes}
    # a pair that failed, between its two nodes: a line per rail whose own check failed, labelled with that
    # rail's figure; only where no rail's did, one line for the pair's all-rails check, with that figure
    rails_failed: dict[tuple[str, str], list[tuple[str | None, Part]]] = {}
    pairs_failed: list[tuple[str, str]] = []
    for (a, b, rail), part in parts.rail_pair.items():
        if part.state == "failed":
            rails_failed.setdefault((a, b), []).append((rail, part))
        elif parts.node_pair[(a, b)].state == "failed" and (a, b) not in pairs_failed:
            pairs_failed.append((a, b))
    for a, b in [*rails_failed, *(p for p in pairs_failed if p not in rails_failed)]:
        x1, y1 = by_name[a].edge(by_name[b].x, by_name[b].y)
        x2, y2 = by_name[b].edge(by_name[a].x, by_name[a].y)
        length = math.hypot(x2 - x1, y2 - y1) or 1.0
        nx, ny = -(y2 - y1) / length, (x2 - x1) / length
        drawn = rails_failed.get((a, b)) or [(None, parts.node_pair[(a, b)])]
        for i, (rail, part) in enumerate(drawn):
            if any(line.part is part for line in lines):
                continue
            offset = (i - (len(drawn) - 1) / 2) * 12.0
            ox, oy = nx * offset, ny * offset
            gbps = figures.get((a, b, rail))
            label = f"{_gbps(gbps)} Gb/s" + (" all rails" if rail is None else "") if gbps is not None else ""
            where = f"over rail {rail}" if rail is not None else "every rail at once"
            lines.append(Line(part, [Segment(x1 + ox, y1 + oy, x2 + ox, y2 + oy, "failed")],
                              f"{a} and {b} {where}: a check failed", label,
                              (x1 + x2) / 2 + ox, (y1 + y2) / 2 + oy - 6, dashed=True))  # fmt: skip
    caption = "a switch: every node on every rail; a line between two nodes is a pair with a failed check"
    return Picture("switch", WIDTH, height, boxes, lines, sw, rail_rows, parts.all(), table, slots, caption)
