"""netplan configures each node's fabric netdevs, in files only root can read (netplan's own rule)."""

import pytest

from gb10check.reading import probes
from gb10check.reading.parsers.netplan import configured_netdevs

pytestmark = pytest.mark.preflight


def _files(node):
    return node.snapshot().fact(probes.NETPLAN)


@pytest.mark.hints("netplan-missing")
def test_netplan_configures_qsfp(node, inventory, evidence):
    """Netplan configures each fabric netdev."""
    netdevs = [m.netdev for _, m in inventory.members_of(node.name)]
    if not netdevs:
        pytest.skip(f"the inventory lists no rails for {node.name}, so nothing for netplan to configure")
    files = _files(node)
    configured = configured_netdevs(files)
    missing = [netdev for netdev in netdevs if netdev not in configured]
    where = ", ".join(f.path for f in files) or "no file: /etc/netplan has none"
    evidence.expect(
        not missing,
        what="netplan",
        expected="a file in /etc/netplan configuring " + ", ".join(netdevs),
        found=f"nothing for {', '.join(missing)} in {where}"
        if missing
        else ", ".join(sorted({f.path for f in configured.values()})),
        context={"netdev": missing},
    )


@pytest.mark.hints("netplan-permissions")
def test_netplan_file_mode(node, inventory, evidence):
    """Netplan files readable by root only.

    The netplan files that configure the fabric netdevs have mode 600 (nothing for group or others) and owner root."""
    if not inventory.members_of(node.name):
        pytest.skip(f"the inventory lists no rails for {node.name}, so no netplan file to check")
    configured = configured_netdevs(_files(node))
    files = {f.path: f for f in configured.values()}
    if not files:  # nothing to restrict: the missing file is test_netplan_configures_qsfp's finding
        pytest.skip("no netplan file configures the QSFP netdevs (see test_netplan_configures_qsfp): no mode to judge")
    loose = [f for f in files.values() if f.mode & 0o077 or f.owner != "0"]
    shown = loose or list(files.values())
    evidence.expect(
        not loose,
        what="netplan files of the QSFP netdevs",
        expected="mode 600, owner root (uid 0)",
        found=", ".join(f"{f.path} mode {f.mode:o} uid {f.owner}" for f in shown),
        context={"path": loose[0].path} if loose else None,
    )
