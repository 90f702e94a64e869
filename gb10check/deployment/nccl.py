"""How NCCL reads its environment where the checks need NCCL's own meaning. Pure."""

from __future__ import annotations

import re
from collections.abc import Iterable

from gb10check.reading.parsers.rdma_sysfs import Gid

__all__ = ["auto_gid_index", "gid_index_param", "ib_hca_selects", "socket_ifname_matches"]


def socket_ifname_matches(value: str, netdevs: Iterable[str]) -> list[str]:
    """The netdevs an NCCL_SOCKET_IFNAME-style value selects: each comma-separated name is a prefix
    (`enp1` selects enp1s0f0np0), `=` before the list makes the names exact, `^` excludes them."""
    exact, exclude = value.startswith("="), value.startswith("^")
    names = [n for n in value.lstrip("=^").split(",") if n]
    if exclude:
        return sorted(d for d in netdevs if not any(d.startswith(n) for n in names))
    return sorted(d for d in netdevs if any(d == n if exact else d.startswith(n) for n in names))


def ib_hca_selects(value: str | None, devices: Iterable[str]) -> list[str]:
    """The RDMA devices an NCCL_IB_HCA value selects among `devices` (NCCL's matchIfList): unset
    selects every device; entries are `name[:port]`, prefixes unless the list starts with `=`
    (exact), excluded when it starts with `^`. (NCCL then uses only the ACTIVE ports of these.)"""
    if value is None or not value.strip():
        return sorted(devices)
    exact, exclude = value.startswith("="), value.startswith("^")
    names = [n.split(":")[0] for n in value.lstrip("=^").split(",") if n]
    hit = [d for d in devices if any(d == n if exact else d.startswith(n) for n in names)]
    return sorted(d for d in devices if d not in hit) if exclude else sorted(hit)


# -- NCCL_IB_GID_INDEX (NCCL v2.30.7-1: src/transport/net_ib/connect.cc, src/misc/param.cc) -----------------------
# NCCL_PARAM(IbGidIndex, "IB_GID_INDEX", -1): the default is -1 since v2.21.5-1 (0 up to v2.20.5-1), and a
# negative index makes ncclIbGetGidIndex pick each device's GID itself. ncclLoadParam parses the value only
# when it is set and not empty (`str && strlen(str) > 0`), with strtoll(str, NULL, 0); errno set (a number
# out of range) keeps the default. So an empty value is the default, not 0, and "abc" is 0.
_STRTOLL = re.compile(
    r"[ \t\n\v\f\r]*(?P<sign>[+-]?)(?:(?P<hex>0[xX][0-9a-fA-F]+)|(?P<oct>0[0-7]*)|(?P<dec>[1-9][0-9]*))?"
)
_INT64 = 2**63


def gid_index_param(value: str | None) -> int | None:
    """The GID index NCCL takes from NCCL_IB_GID_INDEX's value; None: NCCL picks each device's GID itself
    (unset, empty, negative or out of range: the default -1 of NCCL 2.21 and later)."""
    if not value:
        return None
    m = _STRTOLL.match(value)
    assert m is not None  # every part of the pattern is optional
    if m["hex"]:
        number = int(m["hex"], 16)
    elif m["oct"]:
        number = int(m["oct"], 8)
    else:
        number = int(m["dec"] or "0")
    number = -number if m["sign"] == "-" else number
    if not -_INT64 <= number < _INT64:  # ERANGE: the default
        return None
    return number if number >= 0 else None


def _v4_mapped(gid: str) -> bool:
    """getGidAddrFamily: an IPv4-mapped GID (::ffff:a.b.c.d, or its ff0e: multicast form) is AF_INET."""
    groups = gid.lower().split(":")
    return groups[:6] == ["0000"] * 5 + ["ffff"] or groups[:6] == ["ff0e"] + ["0000"] * 4 + ["ffff"]


def _valid(gid: str) -> bool:
    """validGid: configured (not all zeros, not fe80:: with nothing after it) and not link-local (fe80:0:...)."""
    groups = gid.lower().split(":")
    return any(g != "0000" for g in groups) and groups[:4] != ["fe80", "0000", "0000", "0000"]


def _roce_version(kind: str) -> int | None:
    """ncclIbRoceGetVersionNum: gid_attrs/types/N as 1 or 2."""
    if kind.startswith(("IB/RoCE v1", "RoCE v1")):
        return 1
    return 2 if kind.startswith("RoCE v2") else None


def auto_gid_index(gids: Iterable[Gid]) -> int:
    """The GID index NCCL (2.21 and later) picks on a RoCE port when NCCL_IB_GID_INDEX leaves it the
    choice (ncclIbGetGidIndex with NCCL_IB_ADDR_FAMILY AF_INET, NCCL_IB_ROCE_VERSION_NUM 2 and no
    NCCL_IB_ADDR_RANGE, their defaults): index 0, then each later slot taken when it is IPv4 and the
    current one is not, or a valid IPv4 RoCE v2 one where the current is of another version or not
    valid: the first RoCE v2 IPv4 GID of the table, whichever address it is of. (An unused slot is
    never taken: it is not IPv4.)"""
    table = sorted(gids, key=lambda g: g.index)
    current = next((g for g in table if g.index == 0), None)
    for cand in (g for g in table if g.index > 0):
        if current is None or (_v4_mapped(cand.gid) and not _v4_mapped(current.gid)):
            current = cand if _v4_mapped(cand.gid) else current
            continue
        if not _v4_mapped(cand.gid) or not _valid(cand.gid):
            continue
        version = _roce_version(cand.type)
        if (_roce_version(current.type) != version or not _valid(current.gid)) and version == 2:
            current = cand
    return current.index if current is not None else 0
