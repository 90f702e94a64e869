"""iproute2's JSON (`ip -j -d addr`, `ip -j route`) and netplan's link-local, on captures and garbage."""

from __future__ import annotations

import pytest

from gb10check.errors import ParseError
from gb10check.parsers.framed import FileRead
from gb10check.parsers.iproute import parse_ip_addr, parse_ip_route
from gb10check.parsers.netplan import link_local_ipv4


def test_cx7_ports_with_carrier_and_link_local(capture):
    netdevs = parse_ip_addr(capture("commands/ip_j_addr.dgx_spark_cx7.reconstructed.json"))
    up, down = netdevs["enp1s0f1np1"], netdevs["enp1s0f0np0"]
    assert (up.admin_up, up.carrier, up.mtu, up.addresses) == (True, True, 1500, ("169.254.127.30/16",))
    assert (down.admin_up, down.carrier, down.operstate, down.addresses) == (True, False, "DOWN", ())
    assert up.has("169.254.127.30/16") and not up.has("169.254.127.30/24")


def test_ipv6_addresses_are_not_the_inventorys(capture):
    eth0 = parse_ip_addr(capture("commands/ip_j_addr.eth0.iproute2-6.1.0.local_sandbox.json"))["eth0"]
    assert eth0.addresses == ("192.0.2.2/24",) and eth0.mtu == 1400


def test_routes(capture):
    routes = parse_ip_route(capture("commands/ip_j_route.iproute2-6.1.0.local_sandbox.json"))
    assert [(r.dst, r.dev, r.gateway) for r in routes] == [
        ("default", "eth0", "192.0.2.1"),
        ("192.0.2.0/24", "eth0", None),
    ]
    assert parse_ip_route("[]\n") == ()


@pytest.mark.parametrize(
    ("parser", "text", "message"),
    [
        (parse_ip_addr, "", "not JSON"),
        (parse_ip_addr, "1: lo: <LOOPBACK,UP> mtu 65536", "not JSON"),
        (parse_ip_addr, "[]", "no interface at all"),
        (parse_ip_addr, '[{"ifname": "x"}]', "an interface without"),
        (parse_ip_addr, '[{"ifindex":1,"ifname":"lo","flags":["UP"],"mtu":65536', "not JSON"),
        (parse_ip_addr, '{"ifname": "x"}', "expected a JSON list"),
        (parse_ip_route, "<html>502</html>", "not JSON"),
        (parse_ip_route, '[{"dst": "default"}]', "a route without"),
    ],
)
def test_garbage_is_a_parse_error_with_the_excerpt(parser, text, message):
    with pytest.raises(ParseError) as err:
        parser(text)
    assert message in str(err.value)


def test_netplan_link_local_ipv4(capture):
    text = capture("commands/netplan.40-cx7.link_local_ipv4.nvidia_playbook_2025-10.yaml")
    assert link_local_ipv4([FileRead("/etc/netplan/40-cx7.yaml", 0o600, "0", text)])
    static = "network:\n  ethernets:\n    enP2p1s0f0np0:\n      addresses: [192.168.101.10/24]\n"
    assert link_local_ipv4([FileRead("/etc/netplan/41.yaml", 0o600, "0", static)]) == set()
