"""The pure parts of finding the nodes on the fabric: what a port's sweep asks, and which neighbour-table
entries count as an answer."""

from __future__ import annotations

import json

from gb10check.reading import discover, peers
from gb10check.reading.parsers.neigh import parse_ip_neigh


def _port(netdev: str, address: str | None) -> discover.Port:
    return discover.Port(netdev, "roce" + netdev, address, 9000, True, 3)


def test_a_24_is_swept_whole_a_larger_subnet_over_the_24_around_the_port_and_a_30_over_its_peer():
    assert len(peers.sweep_targets("192.168.100.10/24")) == 253
    assert "192.168.100.10" not in peers.sweep_targets("192.168.100.10/24")
    wide = peers.sweep_targets("169.254.94.252/16")
    assert len(wide) == 253 and wide[0] == "169.254.94.1" and wide[-1] == "169.254.94.254"
    assert peers.sweep_targets("10.20.0.1/30") == ["10.20.0.2"]
    assert peers.sweep_targets("10.20.0.0/31") == ["10.20.0.1"]


def test_the_sweep_pings_out_of_each_addressed_port_then_reads_the_neighbour_table():
    command = peers.sweep_command([_port("enp1s0f0np0", "10.20.0.1/30"), _port("enp1s0f1np1", None)])
    assert command == (
        'for a in 10.20.0.2; do ping -n -c 1 -W 1 -I enp1s0f0np0 "$a" >/dev/null 2>&1 & done; wait; ip -j neigh show'
    )
    assert peers.sweep_command([_port("enp1s0f1np1", None)]) is None


def test_an_answer_is_a_reachable_entry_inside_a_swept_subnet_on_its_port():
    table = json.dumps([
        {"dst": "192.168.100.11", "dev": "enp1s0f0np0", "lladdr": "AA:bb:cc:00:00:01", "state": ["REACHABLE"]},
        {"dst": "192.168.100.12", "dev": "enp1s0f0np0", "lladdr": "aa:bb:cc:00:00:02", "state": ["STALE"]},
        {"dst": "192.168.100.13", "dev": "enp1s0f0np0", "state": ["FAILED"]},
        {"dst": "192.168.100.14", "dev": "enp1s0f0np0", "state": ["INCOMPLETE"]},
        {"dst": "192.168.40.1", "dev": "enP7s7", "lladdr": "aa:bb:cc:00:00:03", "state": ["REACHABLE"]},
        {"dst": "10.9.9.9", "dev": "enp1s0f0np0", "lladdr": "aa:bb:cc:00:00:04", "state": ["REACHABLE"]},
        {"dst": "fe80::1", "dev": "enp1s0f0np0", "lladdr": "aa:bb:cc:00:00:05", "state": ["REACHABLE"]},
    ])  # fmt: skip
    found = peers.answered(parse_ip_neigh(table), [_port("enp1s0f0np0", "192.168.100.10/24")])
    assert found == [("192.168.100.11", "enp1s0f0np0"), ("192.168.100.12", "enp1s0f0np0")]
