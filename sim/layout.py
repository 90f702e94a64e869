"""How the sim lays out a cluster of N nodes (pure): node names, GB10 port names, addresses, and the
scenario tables a topology and size stand for (docs/DESIGN.md, "The simulated cluster").

Rank k is `thinkstationpgx-{30 + 2k}` on the LAN `192.168.40.{30 + 2k}/24` (`enP7s7`): the pair's
names and addresses, extended. A switch puts port 0 of every node on the switch: rail `enp1s0f0np0`
on 192.168.100.{10 + k}/24 and rail `enP2p1s0f0np0` on 192.168.101.{10 + k}/24 (NVIDIA's plan), port 1
uncabled. A ring's cable c joins rank c's port 0 to rank c+1's port 1 (mod N); its halves are rails
`c<c>a` (10.20.{2c}.{k + 1}/24) and `c<c>b` (10.20.{2c + 1}.{k + 1}/24). A pair is the seed's cable.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

__all__ = [
    "DEVICE_ORDER",
    "LAN_NETDEV",
    "LAN_SUBNET",
    "PAIR_ADDRESSES",
    "PORTS",
    "RANK_KEY",
    "RING_SUBNETS",
    "SIZES",
    "SWITCH_SUBNETS",
    "TOPOLOGIES",
    "gpu_uuid",
    "lan_address",
    "node_name",
    "size_problem",
    "skeleton",
]

TOPOLOGIES = ("pair", "ring", "switch")
SIZES = {"pair": (2, 2), "ring": (3, 8), "switch": (2, 8)}  # (fewest, most) nodes
LAN_NETDEV = "enP7s7"
LAN_SUBNET = "192.168.40.0/24"
# a GB10's ConnectX-7: two QSFP ports, each two halves (netdev, RDMA device)
PORTS = (
    (("enp1s0f0np0", "rocep1s0f0"), ("enP2p1s0f0np0", "roceP2p1s0f0")),
    (("enp1s0f1np1", "rocep1s0f1"), ("enP2p1s0f1np1", "roceP2p1s0f1")),
)
# the order NCCL_IB_HCA lists a node's devices in (the same on every node: one compose for all)
DEVICE_ORDER = tuple(device for port in PORTS for _, device in port)
RING_SUBNETS = "10.20.0.0/16"  # every ring cable's halves (10.20.{2c}.0/24, 10.20.{2c + 1}.0/24)
SWITCH_SUBNETS = ("192.168.100.0/24", "192.168.101.0/24")
# the seed's cable: the pair's addresses (link-local on the first half, as its netplan has it)
PAIR_ADDRESSES = (("169.254.94.252/16", "169.254.159.206/16"), ("192.168.101.10/24", "192.168.101.11/24"))
RANK_KEY = re.compile(r"^rank(\d+)$")


def node_name(rank: int) -> str:
    return f"thinkstationpgx-{30 + 2 * rank}"


def lan_address(rank: int) -> str:
    return f"192.168.40.{30 + 2 * rank}/24"


def size_problem(topology: object, size: object) -> str | None:
    """What is wrong with `topology` and `size` as a scenario gives them (None: fine)."""
    if topology is None:
        return f"size = {size!r} needs a topology: topology = " + " or ".join(f'"{t}"' for t in TOPOLOGIES)
    if topology not in TOPOLOGIES:
        return f"topology = {topology!r}: the sim builds {', '.join(map(repr, TOPOLOGIES))}"
    low, high = SIZES[str(topology)]
    if size is None and low != high:
        return f'topology = "{topology}" needs size = {low}..{high} (the number of nodes)'
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or not low <= size <= high):
        return f"size = {size!r}: a {topology} has " + (f"{low}" if low == high else f"{low} to {high}") + " nodes"
    return None


def gpu_uuid(name: str) -> str:
    """A stable GPU UUID per node name (nvidia-smi's format)."""
    h = hashlib.sha256(f"gpu-{name}".encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _end(rank: int, port: int, half: int, address: str) -> dict[str, str]:
    netdev, device = PORTS[port][half]
    return {"node": node_name(rank), "netdev": netdev, "rdma_device": device, "address": address}


def skeleton(topology: str, size: int) -> dict[str, Any]:
    """The scenario tables (nodes, rails in the inventory's form, unused_ports) a topology of `size`
    nodes stands for; a scenario's own tables merge over them."""
    nodes = {node_name(k): {"rank": k, "lan_address": lan_address(k), "gpu_uuid": gpu_uuid(node_name(k))}
             for k in range(size)}  # fmt: skip
    unused = {device: netdev for netdev, device in PORTS[1]}
    rails: list[dict[str, Any]] = []
    if topology == "pair":
        for (netdev, device), addresses in zip(PORTS[0], PAIR_ADDRESSES, strict=True):
            members = dict(zip(nodes, addresses, strict=True))
            rails.append({"netdev": netdev, "rdma_device": device, "addresses": members})
    elif topology == "switch":
        for half, (netdev, device) in enumerate(PORTS[0]):
            rails.append({
                "netdev": netdev,
                "rdma_device": device,
                "addresses": {node_name(k): f"192.168.{100 + half}.{10 + k}/24" for k in range(size)},
            })  # fmt: skip
    else:  # ring: cable c from rank c's port 0 to rank c+1's port 1
        unused = {}
        for c in range(size):
            nxt = (c + 1) % size
            for half, letter in enumerate("ab"):
                subnet = f"10.20.{2 * c + half}"
                rails.append({
                    "name": f"c{c}{letter}",
                    "members": [
                        _end(c, 0, half, f"{subnet}.{c + 1}/24"),
                        _end(nxt, 1, half, f"{subnet}.{nxt + 1}/24"),
                    ],
                })  # fmt: skip
    return {"nodes": nodes, "rails": rails, "unused_ports": unused}
