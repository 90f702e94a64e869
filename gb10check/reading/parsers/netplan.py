"""netplan: which netdevs each /etc/netplan file configures (read with a real YAML parser)."""

from __future__ import annotations

import yaml

from gb10check.errors import ParseError
from gb10check.reading.parsers.framed import FileRead
from gb10check.safe_text.redact import redact

__all__ = ["configured_netdevs", "link_local_ipv4"]


def configured_netdevs(files: list[FileRead]) -> dict[str, FileRead]:
    """netdev -> the file that configures it under network.ethernets (a later file wins, as in netplan)."""
    return {netdev: f for netdev, (f, _) in _ethernets(files).items()}


def link_local_ipv4(files: list[FileRead]) -> set[str]:
    """The netdevs netplan gives an IPv4 link-local address (`link-local: [ ipv4 ]`): it changes on reconnect."""
    out = set()
    for netdev, (_, conf) in _ethernets(files).items():
        families = conf.get("link-local")
        if isinstance(families, list) and "ipv4" in families:
            out.add(netdev)
    return out


def _ethernets(files: list[FileRead]) -> dict[str, tuple[FileRead, dict[str, object]]]:
    out: dict[str, tuple[FileRead, dict[str, object]]] = {}
    for f in sorted(files, key=lambda f: f.path.rsplit("/", 1)[-1]):  # netplan reads files in name order
        try:
            doc = yaml.safe_load(f.text)
        except yaml.YAMLError as exc:
            raise ParseError(f.path, f"not valid YAML: {redact(str(exc))}".replace("\n", " "), f.text) from exc
        if doc is None:
            continue
        network = doc.get("network") if isinstance(doc, dict) else None
        if not isinstance(network, dict):
            raise ParseError(f.path, "no 'network:' mapping at the top", f.text)
        ethernets = network.get("ethernets") or {}
        if not isinstance(ethernets, dict):
            raise ParseError(f.path, "'network.ethernets' is not a mapping", f.text)
        for netdev, conf in ethernets.items():
            out[str(netdev)] = (f, conf if isinstance(conf, dict) else {})
    return out
