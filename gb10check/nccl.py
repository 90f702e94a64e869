"""How NCCL reads its environment where the checks need NCCL's own meaning. Pure."""

from __future__ import annotations

from collections.abc import Iterable


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
