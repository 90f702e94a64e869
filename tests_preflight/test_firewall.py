"""UFW lets the cluster's traffic through (every QSFP subnet; the API port on rank 0), now and
after a reboot."""

from urllib.parse import urlsplit

import pytest

from gb10check.firewall import needs_for, verdict
from gb10check.parsers.framed import parse_word
from gb10check.parsers.ufw import parse_default_input_policy, parse_ufw_conf, parse_ufw_status, parse_user_rules

pytestmark = pytest.mark.preflight


def _needs(inventory, node):
    links = [(link.netdev, link.addresses) for link in inventory.links]
    api_port = None
    if node.spec.rank == 0 and inventory.service is not None:
        url = urlsplit(inventory.service.base_url)
        api_port = url.port or (443 if url.scheme == "https" else 80)
    return needs_for(node.name, links, api_port)


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


@pytest.mark.hints("ufw-blocks-cluster")
def test_firewall_allows_cluster_traffic(node, inventory, evidence):
    snap = node.snapshot()
    status = snap.parsed("ufw_status", parse_ufw_status)
    if not status.active:
        evidence.expect(True, what="UFW", expected="inactive, or allowing the cluster", found="inactive")
        return
    rules = snap.parsed("ufw_rules", parse_user_rules)
    blocked = _blocked(_needs(inventory, node), rules, status.default_incoming or "deny")
    evidence.expect(
        not blocked,
        what="UFW (active)",
        expected="allows " + ", ".join(n.what for n in _needs(inventory, node)),
        found=_explain(blocked)
        or f"all allowed ({len(rules)} saved rules, default incoming {status.default_incoming})",
        detail="run: " + " && ".join(_missing_lines(blocked)),
    )


@pytest.mark.hints("ufw-not-persistent")
def test_firewall_after_reboot(node, inventory, evidence):
    """The state a reboot brings: ufw starts when ufw.conf says ENABLED=yes and its unit is enabled."""
    snap = node.snapshot()
    active = snap.parsed("ufw_status", parse_ufw_status).active
    on_boot = snap.parsed("ufw_conf", parse_ufw_conf)
    unit = snap.parsed("ufw_unit", lambda t: parse_word(t, "systemctl is-enabled ufw"), accept_rc=(0, 1))
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
    policy = snap.parsed("ufw_default", parse_default_input_policy)
    blocked = _blocked(_needs(inventory, node), snap.parsed("ufw_rules", parse_user_rules), policy)
    evidence.expect(
        not blocked,
        what="UFW after a reboot (inactive now, ENABLED=yes)",
        expected="the saved rules allow the cluster",
        found=_explain(blocked) or f"all allowed (default incoming {policy})",
        detail="run: " + " && ".join(_missing_lines(blocked)),
        hints=("ufw-blocks-cluster",),
    )
