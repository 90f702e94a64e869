"""NCCL_IB_GID_INDEX as NCCL reads it (gb10check/deployment/nccl.py, from NCCL v2.30.7-1's src/misc/param.cc and
src/transport/net_ib/connect.cc), and the GID NCCL picks itself when the value leaves it the choice."""

from __future__ import annotations

import pytest

from gb10check.deployment.nccl import auto_gid_index, gid_index_param
from gb10check.reading.parsers.rdma_sysfs import Gid, parse_rdma_ports
from selftests.unit.test_network_parsers import _probe_output


@pytest.mark.parametrize(
    ("value", "index"),
    [
        (None, None),  # unset: the default, -1 (NCCL picks)
        ("", None),  # empty: ncclLoadParam parses only a non-empty value, so the default again, not 0
        ("3", 3),
        (" +3", 3),  # strtoll skips leading white space and takes a sign
        ("0x3", 3),  # base 0: hexadecimal
        ("010", 8),  # base 0: octal
        ("08", 0),  # octal stops at the 8
        ("3abc", 3),  # strtoll stops at the first character that is no digit
        ("abc", 0),  # no digit at all: 0, and errno stays 0, so NCCL uses index 0
        ("  ", 0),  # not empty: strtoll finds no digit
        ("-1", None),  # negative: NCCL picks
        ("99999999999999999999", None),  # ERANGE: the default
    ],
)
def test_the_value_as_nccl_reads_it(value, index):
    assert gid_index_param(value) == index


def _gid(index: int, gid: str, kind: str) -> Gid:
    return Gid(index, gid, kind, "enP2p1s0f0np0")


LINK_LOCAL = "fe80:0000:0000:0000:0000:0000:0000:0001"
EXTRA = "0000:0000:0000:0000:0000:ffff:0a4d:000b"  # 10.77.0.11
LINK = "0000:0000:0000:0000:0000:ffff:c0a8:650b"  # 192.168.101.11
GLOBAL6 = "2001:0db8:0000:0000:0000:0000:0000:000b"


def test_nccl_picks_the_first_roce_v2_ipv4_gid_of_the_capture(capture):
    ports = parse_rdma_ports(_probe_output(capture))
    assert auto_gid_index(ports["rocep1s0f0"].gids) == 3
    assert auto_gid_index(ports["rocep1s0f1"].gids) == 0  # no IPv4 GID: NCCL keeps index 0


def test_an_earlier_address_takes_the_pick_and_ipv6_never_does():
    table = [
        _gid(0, LINK_LOCAL, "IB/RoCE v1"),
        _gid(1, LINK_LOCAL, "RoCE v2"),
        _gid(2, GLOBAL6, "IB/RoCE v1"),
        _gid(3, GLOBAL6, "RoCE v2"),
        _gid(4, EXTRA, "IB/RoCE v1"),
        _gid(5, EXTRA, "RoCE v2"),
        _gid(6, LINK, "IB/RoCE v1"),
        _gid(7, LINK, "RoCE v2"),
    ]
    assert auto_gid_index(table) == 5  # the extra address's, not the link's at 7
    assert auto_gid_index(table[:4] + table[6:]) == 7
    assert auto_gid_index([g for g in table if g.index != 0]) == 5  # slot 0 unused: the same walk
