"""UFW lets the cluster's traffic through (every rail's peers, the control plane's, the API port on
rank 0), now and after a reboot."""

from urllib.parse import urlsplit

import pytest

from gb10check.judging.firewall import needs_for, verdict
from gb10check.reading import probes

pytestmark = pytest.mark.preflight


def _needs(inventory, node):
    api_port = None
    if node.spec.rank == 0 and inventory.service is not None:
        url = urlsplit(inventory.service.base_url)
        api_port = url.port or (443 if url.scheme == "https" else 80)
    return needs_for(inventory, node.name, api_port)


def _blocked(needs, rules, policy):
    out = []
    for need in needs:
        allowed, why = verdict(need, rules, policy)
        if not allowed:
            out.append((need, why))
    return out


def _explain(blocked):
    return "; ".join(f"{n.what} is dropped ({why})" for n, why in blocked)


def _missing_lines(blocked):
    return sorted({n.allow_line for n, _ in blocked})


def _missing(blocked):
    """The hint's fields, what is missing and only that: its commands then match the failure's own."""
    return {
        "qsfp_subnet": sorted({n.subnet for n, _ in blocked if n.subnet}),
        "ufw_port": sorted({str(n.port) for n, _ in blocked if n.port is not None}),
    }


@pytest.mark.hints("ufw-blocks-cluster")
def test_firewall_allows_cluster_traffic(node, inventory, evidence):
    """The firewall allows the cluster's traffic.

    UFW inactive, or active and allowing every QSFP subnet (and the API port on rank 0); the failure lists the
    missing `ufw allow` lines."""
    snap = node.snapshot()
    status = snap.fact(probes.UFW_STATUS)
    if not status.active:
        evidence.expect(True, what="UFW", expected="inactive, or allowing the cluster", found="inactive")
        return
    rules = snap.fact(probes.UFW_RULES)
    blocked = _blocked(_needs(inventory, node), rules, status.default_incoming or "deny")
    evidence.expect(
        not blocked,
        what="UFW (active)",
        expected="allows " + ", ".join(n.what for n in _needs(inventory, node)),
        found=_explain(blocked)
        or f"all allowed ({len(rules)} saved rules, default incoming {status.default_incoming})",
        detail="run: " + " && ".join(_missing_lines(blocked)),
        context=_missing(blocked),
    )


@pytest.mark.hints("ufw-not-persistent")
def test_firewall_after_reboot(node, inventory, evidence):
    """The firewall still allows it after a reboot.

    UFW after a reboot is UFW now. The state a reboot brings: ufw starts when ufw.conf says ENABLED=yes and its unit
    (ufw.service) is enabled. Active now, it must also start at boot; off now but on at boot, its saved rules must
    allow the cluster's traffic (the failure lists the missing `ufw allow` lines)."""
    snap = node.snapshot()
    active = snap.fact(probes.UFW_STATUS).active
    on_boot = snap.fact(probes.UFW_CONF)
    unit = snap.fact(probes.UFW_UNIT)
    starts = on_boot and unit in ("enabled", "enabled-runtime", "static", "alias")
    if active:
        evidence.expect(
            starts,
            what="UFW at boot",
            expected="active now and enabled on boot (ENABLED=yes, ufw.service enabled)",
            found=f"active now; ufw.conf ENABLED={'yes' if on_boot else 'no'}, ufw.service {unit}",
            detail="the firewall the cluster was tested with will not be the one after a reboot",
        )
        return
    if not starts:
        evidence.expect(True, what="UFW at boot", expected="off, or allowing the cluster", found="off now and at boot")
        return
    policy = snap.fact(probes.UFW_DEFAULT)
    blocked = _blocked(_needs(inventory, node), snap.fact(probes.UFW_RULES), policy)
    evidence.expect(
        not blocked,
        what="UFW after a reboot (inactive now, ENABLED=yes)",
        expected="the saved rules allow the cluster",
        found=_explain(blocked) or f"all allowed (default incoming {policy})",
        detail="run: " + " && ".join(_missing_lines(blocked)),
        hints=("ufw-blocks-cluster",),
        context=_missing(blocked),
    )
