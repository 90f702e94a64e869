"""NCCL's environment against the fabric as the node has it: the socket interfaces vLLM gets (its launch
plan's environment) are netdevs that are up, on the subnet of the master address, and, on a fabric
netdev, not the one the default route leaves by (a LAN or Wi-Fi drop would then kill serving); no NCCL
config file sets what the plan does not. (Which RDMA devices NCCL_IB_HCA selects is the launch plan's
ib-hca rule.) The names mean what they mean to NCCL (gb10check/deployment/nccl.py)."""

import ipaddress
import shlex

import pytest

from gb10check.deployment.nccl import socket_ifname_matches
from gb10check.errors import GB10Error
from gb10check.reading import probes
from gb10check.reading.in_container import read_in_containers
from gb10check.reading.parsers.nccl_conf import in_force, parse_conf_lines
from gb10check.reading.probes import NCCL_CONF

pytestmark = pytest.mark.network

SOCKET_VARS = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME")


@pytest.mark.hints("nccl-socket-ifname")
def test_socket_interfaces_are_on_the_fabric(
    node, cluster, inventory, deployment, link_down_advice, fault_owners, evidence
):
    """vLLM's control-plane netdev up and on the master's subnet.

    The socket interfaces vLLM gets (NCCL_SOCKET_IFNAME, GLOO_SOCKET_IFNAME and TP_SOCKET_IFNAME of its launch plan,
    the names read as NCCL reads them) are netdevs of the node that are up with carrier, on the master address's
    subnet, and, when the inventory puts them on the fabric, not the netdev the default route leaves by (a ring's or
    a switch's control plane on the LAN port is where the default route is: that is its design). A variable left
    unset is the launch plan's advice, not this check's."""
    snap = node.snapshot()
    fabric = {m.netdev for _, m in inventory.members_of(node.name)}
    plan = cluster.plan(node.name)
    netdevs = snap.fact(probes.IP_ADDR)
    leaves_by = sorted({r.dev for r in snap.fact(probes.IP_ROUTE) if r.dst == "default"})
    master = (plan.vllm.value("--master-addr") if plan.started.vllm is not None else None) or plan.env("MASTER_ADDR")
    said = master or "(not set: no --master-addr, no MASTER_ADDR)"
    for var in SOCKET_VARS:
        value = plan.env(var)
        if value is None:
            continue  # unset is the launch plan's advice (tests_preflight), not the fabric's
        chosen = socket_ifname_matches(value, netdevs)
        evidence.expect(
            bool(chosen),
            what=f"{var}={value}",
            expected="names a netdev of the node",
            found=", ".join(chosen) or f"none of {', '.join(sorted(netdevs))}",
        )
        for name in chosen:
            dev = netdevs[name]
            subnets = [ipaddress.ip_interface(a).network for a in dev.addresses]
            on_master = master is not None and any(ipaddress.ip_address(master) in s for s in subnets)
            # the default route may leave by the control plane when the inventory puts it on the LAN (a ring's,
            # a switch's): that is its design; on a fabric netdev it is the default-route-on-qsfp fault
            routed = name in leaves_by and (name in fabric or name != inventory.control_netdev(node.name))
            # the variable names the right netdev and only its link is down: the link's finding (or that of
            # the node at its other end, when that node cannot be asked), not the variable's
            up = dev.admin_up and dev.carrier
            only_dark = not up and on_master and not routed
            rail = next((r for r, m in inventory.members_of(node.name) if m.netdev == name), None)
            # a right variable over a dark port: the port's owner says it (the port, or the node at its other end)
            evidence.explained_by(fault_owners.dark([(node.name, rail.name)]) if only_dark and rail else "")
            evidence.expect(
                up and on_master and not routed,
                what=f"{var} netdev {name}",
                expected=f"up with carrier, on the subnet of the master address {said}"
                + (
                    ", not the default route's" if name in fabric or name != inventory.control_netdev(node.name) else ""
                ),
                found=(
                    f"{'up' if up else 'down or no carrier'}, "
                    f"{', '.join(dev.addresses) or 'no address'}"
                    + (", the default route leaves by it" if routed else "")
                ),
                **_link_down(link_down_advice, inventory, node.name, name) if only_dark else {},
            )


def _link_down(link_down_advice, inventory, node, netdev):
    """A fabric netdev down or dark under a right variable: its rail's finding ({} for a netdev on no rail)."""
    rail = next((rail for rail, m in inventory.members_of(node) if m.netdev == netdev), None)
    if rail is None:
        return {}
    advice = link_down_advice(node, rail)
    return {**advice, "detail": advice.get("detail") or "the link is down: see the interface and RoCE link checks"}


def _conf_files(cluster, node):
    """NCCL's files inside the container, in the order NCCL reads them (grep -H: path:line; -s: a
    missing file is no error message), read where vLLM's NCCL reads them."""
    user_file = cluster.plan(node.name).env("NCCL_CONF_FILE") or "/root/.nccl.conf"
    return f"-Hs = {shlex.quote(user_file)} {NCCL_CONF}"


@pytest.fixture(scope="session")
def container_nccl_conf(cluster, inventory, deployment):
    """Per node: the NCCL config files the container sees (docker exec into the running container,
    else a throwaway run of the image: never a pull), all nodes in parallel, each bounded."""
    return read_in_containers(
        cluster,
        inventory,
        deployment,
        what="its NCCL config",
        program="grep",
        args=lambda snap, node: _conf_files(cluster, node),
        accept_rc=(0, 1, 2),  # grep: 1 nothing set, 2 a file missing (-s: silent)
        parse=parse_conf_lines,
    )


QUIET = ("NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE")  # settings that change what NCCL says, not does


@pytest.mark.hints("nccl-conf-override")
def test_no_nccl_conf_sets_hidden_variables(node, cluster, deployment, container_nccl_conf, evidence):
    """No NCCL config file sets what the compose does not show.

    NCCL also reads its config files (the container's $NCCL_CONF_FILE or ~/.nccl.conf, then /etc/nccl.conf; on the
    host, /etc/nccl.conf): a variable the compose leaves unset takes the file's value, unseen by anyone reading the
    compose (NCCL_IB_DISABLE=1, NCCL_NET=Socket...); logging settings (NCCL_DEBUG...) excepted. The container's files
    are read with `docker exec` into the running container, else a throwaway `docker run --rm` of the image (never a
    pull)."""
    snap = node.snapshot()
    environment = cluster.plan(node.name).known_env()
    inside = container_nccl_conf[node.name]
    if isinstance(inside, GB10Error):
        raise inside
    host = snap.fact(probes.HOST_NCCL_CONF)
    for where, settings in (("in the container", inside), ("on the host", host)):
        active = [s for s in in_force(settings, environment) if s.name not in QUIET]
        shadowed = [s for s in settings if s.name in environment]
        files = sorted({s.path for s in settings})
        evidence.expect(
            not active,
            what=f"NCCL config files {where}",
            expected="no setting the compose's environment does not make itself",
            found="; ".join(f"{s.path}: {s.name}={s.value}" for s in active)
            if active
            else (
                f"{', '.join(files)}: only settings the environment overrides or logging ({len(settings)} line(s))"
                if files
                else "no NCCL config file"
            )
            + (f"; shadowed by the environment: {', '.join(s.name for s in shadowed)}" if shadowed else ""),
            detail="NCCL applies a file's variable only where the environment lacks it: set it in the compose "
            "(or remove the line) so that the compose says what NCCL does",
            context={"path": active[0].path} if active else None,
        )
