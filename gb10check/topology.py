"""The shape of a cluster's fabric, as a graph of nodes and rails (pure).

A pair is two nodes on direct cables; a ring joins each node to two neighbours, one cable each
(both halves of a cable are two rails between the same two nodes); a switch puts every node on
every rail. `problems` says what an inventory's rails make of the topology it claims, in words an
operator can act on; `rounds` schedules pairs so that no node is in two pairs at once.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["MAX_NODES", "NCCL_BUSBW_FLOOR_GBS", "RING_MIN", "nccl_busbw_floor", "problems", "ring_order", "rounds"]

MAX_NODES = 8
RING_MIN = 3


def _ring_order(nodes: Sequence[str], edges: set[frozenset[str]]) -> list[list[str]]:
    """The cycles the cables make (each node of degree 2): one list per connected cycle."""
    left = list(nodes)
    cycles: list[list[str]] = []
    while left:
        start = left[0]
        cycle, prev, here = [start], None, start
        while True:
            nxt = sorted(n for e in edges if here in e for n in e if n != here and n != prev)
            if not nxt or nxt[0] == start:
                break
            prev, here = here, nxt[0]
            cycle.append(here)
        cycles.append(cycle)
        left = [n for n in left if n not in cycle]
    return cycles


def problems(topology: str, nodes: Sequence[str], rails: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    """What is wrong with `rails` (name, member nodes) for `topology` over `nodes` (rank order)."""
    out: list[str] = []
    n = len(nodes)
    on_a_rail = {m for _, members in rails for m in members}
    if n > MAX_NODES:
        out.append(f"gb10check checks clusters of up to {MAX_NODES} nodes; this inventory has {n}")
    if topology == "single":
        if n != 1:
            out.append(f'topology "single" is one node; this inventory has {n}: write topology = "pair", '
                       '"ring" or "switch"')  # fmt: skip
        return out
    lonely = [node for node in nodes if node not in on_a_rail]
    if lonely:
        out.append(
            f"{', '.join(lonely)} {'is' if len(lonely) == 1 else 'are'} on no rail: every node of a cluster "
            "needs its fabric ports in [[rails]] (or [[links]])"
        )
    if topology == "pair":
        if n != 2:
            kind = "ring" if n >= RING_MIN else "single"
            out.append(f'topology "pair" is two nodes; this inventory has {n}: write topology = "{kind}"'
                       + (' or "switch"' if n > 2 else ""))  # fmt: skip
        for name, members in rails:
            if n == 2 and len(members) != 2:
                out.append(f"rail {name} must join both nodes of the pair")
    elif topology == "switch":
        for name, members in rails:
            missing = [node for node in nodes if node not in members]
            if len(members) == 2 and n > 2:
                out.append(
                    f"rail {name} joins only {members[0]} and {members[1]}: a direct cable beside a switch. NVIDIA: "
                    "do not connect some nodes directly and others through a switch; put every node's port on the "
                    'switch (every node on every rail), or write topology = "ring"'
                )
            elif missing:
                out.append(f"rail {name} lacks {', '.join(missing)}: on a switch every node is on every rail")
    elif topology == "ring":
        if n < RING_MIN:
            out.append(f'a ring has 3 to {MAX_NODES} nodes; this inventory has {n}: write topology = "pair"')
            return out
        for name, members in rails:
            if len(members) != 2:
                out.append(
                    f"rail {name} joins {len(members)} nodes: a ring's rails join two neighbours (one half of one "
                    "cable). A rail with every node on it is a switch's: NVIDIA: do not mix direct cables and a switch"
                )
        edges = {frozenset(members) for _, members in rails if len(members) == 2}
        degree = {node: sum(node in e for e in edges) for node in nodes}
        wrong = {node: d for node, d in degree.items() if d != 2}
        if wrong:
            for node, d in wrong.items():
                neighbours = sorted(m for e in edges if node in e for m in e if m != node)
                out.append(
                    f"{node} is cabled to {d} neighbour{'s' if d != 1 else ''} ({', '.join(neighbours) or 'none'}): in "
                    "a ring each node has exactly two (its port 0 to the next node's port 1, its port 1 to the "
                    "previous node's port 0)"
                )
        else:
            cycles = _ring_order(nodes, edges)
            if len(cycles) > 1:
                shown = "; ".join(" - ".join(c) for c in cycles)
                out.append(f"the cables make {len(cycles)} separate rings ({shown}), not one cycle through every node")
    return out


def ring_order(nodes: Sequence[str], rails: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    """The nodes in cable order around a valid ring, starting at the first node."""
    edges = {frozenset(members) for _, members in rails if len(members) == 2}
    return _ring_order(nodes, edges)[0]


def rounds(pairs: Sequence[tuple[str, str]], order: Sequence[str]) -> list[list[tuple[str, str]]]:
    """Schedule `pairs` (two node names each) in rounds in which no node is in two pairs.

    Every pair of the nodes in `order` (a complete graph, a switch): the circle method, N-1 rounds
    of N/2 pairs for even N (N rounds for odd N). Any other set of pairs (a ring's cables): greedy
    rounds in `pairs` order (a ring of even N takes 2, of odd N 3). Each pair keeps its order."""
    wanted = list(dict.fromkeys(pairs))
    nodes = [n for n in order if any(n in p for p in wanted)]
    every = {frozenset((a, b)) for i, a in enumerate(nodes) for b in nodes[i + 1 :]}
    if nodes and {frozenset(p) for p in wanted} == every:
        by_key = {frozenset(p): p for p in wanted}
        ring = [*nodes, None] if len(nodes) % 2 else list(nodes)
        out = []
        for _ in range(len(ring) - 1):
            half = len(ring) // 2
            matched = [(ring[i], ring[-1 - i]) for i in range(half)]
            out.append([by_key[frozenset((a, b))] for a, b in matched if a is not None and b is not None])
            ring = [ring[0], ring[-1], *ring[1:-1]]
        return [sorted(r, key=wanted.index) for r in out if r]
    out = []
    left = list(wanted)
    while left:
        busy: set[str] = set()
        this = []
        for pair in left:
            if not busy & set(pair):
                this.append(pair)
                busy |= set(pair)
        out.append(this)
        left = [p for p in left if p not in this]
    return out


# nccl-tests all_gather bus bandwidth (GB/s) that NVIDIA's cluster setup helper accepts, by topology:
# 21.875 (175 Gb/s) on direct cables or through a switch, 10 (80 Gb/s) on a ring of three, whose
# collectives cross a neighbour. NVIDIA publishes none for larger rings: they get the 3-ring's.
NCCL_BUSBW_FLOOR_GBS = {"pair": 21.875, "switch": 21.875, "ring": 10.0}


def nccl_busbw_floor(topology: str, size: int) -> tuple[float, str]:
    """The all_gather bus bandwidth a healthy cluster of this shape reaches at least (GB/s), and
    where the figure comes from, in words for the failure."""
    if topology == "ring":
        gbs = NCCL_BUSBW_FLOOR_GBS["ring"]
        if size == RING_MIN:
            return gbs, f"NVIDIA's all_gather minimum on a ring of 3, {gbs * 8:g} Gb/s"
        return gbs, (
            f"NVIDIA's all_gather minimum on a ring of 3, {gbs * 8:g} Gb/s: none is published for a ring of "
            f"{size}; set [nccl_tests] min_busbw_gbs to your own"
        )
    gbs = NCCL_BUSBW_FLOOR_GBS["switch" if topology == "switch" else "pair"]
    how = "through a switch" if topology == "switch" else "on direct cables"
    return gbs, f"NVIDIA's all_gather minimum {how}, {gbs * 8:g} Gb/s"
