"""NCCL's environment against the fabric as the node has it: the socket interfaces vLLM gets
(compose + script) are netdevs that are up, on the subnet of the master address, and not the one
the default route leaves by (a LAN or Wi-Fi drop would then kill serving). The names mean what
they mean to NCCL (gb10check/nccl.py)."""

import ipaddress

import pytest

from gb10check import probes
from gb10check.facts import vllm_run
from gb10check.nccl import socket_ifname_matches

pytestmark = pytest.mark.network

SOCKET_VARS = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME")


@pytest.mark.hints("nccl-socket-ifname")
def test_socket_interfaces_are_on_the_fabric(node, cluster, deployment, evidence):
    snap = node.snapshot()
    run = vllm_run(snap, deployment, node.spec.rank)
    netdevs = snap.fact(probes.IP_ADDR)
    leaves_by = sorted({r.dev for r in snap.fact(probes.IP_ROUTE) if r.dst == "default"})
    master = run.value("--master-addr") or run.environment.get("MASTER_ADDR")
    for var in SOCKET_VARS:
        value = run.environment.get(var)
        if value is None:
            continue  # unset is the compose rule's finding (tests_preflight), not the fabric's
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
            evidence.expect(
                dev.admin_up and dev.carrier and on_master and name not in leaves_by,
                what=f"{var} netdev {name}",
                expected=f"up with carrier, on the subnet of the master address {master}, not the default route's",
                found=(
                    f"{'up' if dev.admin_up and dev.carrier else 'down or no carrier'}, "
                    f"{', '.join(dev.addresses) or 'no address'}"
                    + (", the default route leaves by it" if name in leaves_by else "")
                ),
            )
