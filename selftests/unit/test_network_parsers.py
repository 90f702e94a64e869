"""iproute2's JSON (`ip -j -d addr`, `ip -j route`) and netplan's link-local, on captures and garbage."""

from __future__ import annotations

import pytest

from gb10check.deployment.nccl import socket_ifname_matches
from gb10check.errors import ParseError
from gb10check.reading.parsers.framed import FileRead
from gb10check.reading.parsers.iproute import parse_ip_addr, parse_ip_route
from gb10check.reading.parsers.iptables import forwarded, parse_chain
from gb10check.reading.parsers.neigh import answer_for, parse_ip_neigh
from gb10check.reading.parsers.netplan import link_local_ipv4
from gb10check.reading.parsers.ping import parse_ping
from gb10check.reading.parsers.rdma_sysfs import parse_rdma_ports, show_gids
from gb10check.reading.parsers.sysctl import parse_flag


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


# -- /sys/class/infiniband ------------------------------------------------------------------------
def _probe_output(capture) -> str:
    """What the RDMA_PORTS probe prints on the two-Spark host of the captures: each port's state,
    rate and link layer from the sysfs capture, its GIDs from the show_gids capture (the link-local
    GIDs the blog masked get stand-in digits)."""
    states = {}
    for line in capture("commands/sysfs_infiniband.dgx_spark.state_rate_link_layer.verbatim.txt").splitlines()[2:]:
        dev, rest = line.split(":", 1)
        state, rate = rest.split("rate=")
        states[dev] = (state.strip(), rate.split("link_layer=")[0].strip(), rate.split("link_layer=")[1].strip())
    gids: dict[str, list[list[str]]] = {}
    for line in capture("commands/show_gids.dgx_spark.gb10_blog.spaces_masked.txt").splitlines()[3:-1]:
        gids.setdefault(line.split()[0], []).append(line.split())
    out = []
    for dev, (state, rate, layer) in states.items():
        base = f"/sys/class/infiniband/{dev}/ports/1"
        netdev = gids[dev][0][-1]
        out += [
            f"=== {base} {netdev} ",
            f"{base}/state:{state}",
            f"{base}/phys_state:5: LinkUp" if "ACTIVE" in state else f"{base}/phys_state:3: Disabled",
            f"{base}/link_layer:{layer}",
            f"{base}/rate:{rate}",
        ]
        for row in gids[dev]:
            index, gid = row[2], row[3].replace("xxxx", "1a2b")
            out += [
                f"{base}/gids/{index}:{gid}",
                f"{base}/gid_attrs/types/{index}:{'RoCE v2' if row[-2] == 'v2' else 'IB/RoCE v1'}",
                f"{base}/gid_attrs/ndevs/{index}:{row[-1]}",
            ]
    return "\n".join(out) + "\n"


def test_rdma_ports_from_the_captures(capture):
    ports = parse_rdma_ports(_probe_output(capture))
    assert sorted(ports) == ["roceP2p1s0f0", "roceP2p1s0f1", "rocep1s0f0", "rocep1s0f1"]
    up, down = ports["rocep1s0f1"], ports["rocep1s0f0"]
    assert (up.active, up.link_up, up.rate_gbps, up.link_layer) == (True, True, 200.0, "Ethernet")
    assert (down.active, down.link_up, down.rate_gbps) == (False, False, 40.0)  # mlx5's placeholder when down
    [v2] = ports["rocep1s0f0"].roce_v2_ipv4("192.168.100.10", "enp1s0f0np0")
    assert (v2.index, v2.version, v2.ipv4) == (3, "v2", "192.168.100.10")
    assert ports["rocep1s0f1"].roce_v2_ipv4("192.168.100.11", "enp1s0f1np1") == []  # no IPv4 GID on that port


def test_the_gid_table_renders_as_show_gids_prints_it(capture):
    """Row for row the capture's table (its spaces were tabs), the link-local digits aside."""
    ports = parse_rdma_ports(_probe_output(capture))
    order = ["rocep1s0f0", "rocep1s0f1", "roceP2p1s0f0", "roceP2p1s0f1"]
    mine = show_gids([ports[d] for d in order]).replace("1a2b", "xxxx").splitlines()
    theirs = capture("commands/show_gids.dgx_spark.gb10_blog.spaces_masked.txt").splitlines()[1:]  # its prompt
    assert [row.split() for row in mine] == [row.split() for row in theirs]


@pytest.mark.parametrize("text", ["garbage\n", "=== /sys/class/infiniband/x/ports/1 eth0\nstate:4: ACTIVE\n"])
def test_rdma_ports_garbage_names_the_line(text):
    with pytest.raises(ParseError, match="unexpected line"):
        parse_rdma_ports(text)


def test_no_rdma_device_is_an_empty_table():
    assert parse_rdma_ports("") == {}


# -- ping -------------------------------------------------------------------------------------------
# iputils-ping 20221126 (Debian 12) on this machine: a full-frame DF ping answered, and one that
# the local MTU refused (a veth of MTU 1400 in a scratch namespace)
PING_ANSWERED = """\
PING 127.0.0.1 (127.0.0.1) from 127.0.0.1 lo: 1472(1500) bytes of data.
1480 bytes from 127.0.0.1: icmp_seq=1 ttl=64 time=0.163 ms
1480 bytes from 127.0.0.1: icmp_seq=2 ttl=64 time=0.049 ms

--- 127.0.0.1 ping statistics ---
2 packets transmitted, 2 received, 0% packet loss, time 203ms
rtt min/avg/max/mdev = 0.049/0.106/0.163/0.057 ms
"""
PING_TOO_LONG = """\
PING 10.250.0.2 (10.250.0.2) from 10.250.0.1 gtst0: 1472(1500) bytes of data.

--- 10.250.0.2 ping statistics ---
2 packets transmitted, 0 received, +2 errors, 100% packet loss, time 202ms

ping: local error: message too long, mtu=1400
ping: local error: message too long, mtu=1400
"""


def test_ping_summaries():
    ok = parse_ping(PING_ANSWERED)
    assert (ok.size, ok.transmitted, ok.received, ok.loss_pct, ok.rtt_avg_ms, ok.all_answered) == (
        1472,
        2,
        2,
        0.0,
        0.106,
        True,
    )
    refused = parse_ping(PING_TOO_LONG)
    assert (refused.received, refused.errors, refused.rtt_avg_ms, refused.all_answered) == (0, 2, None, False)
    assert refused.messages == ("local error: message too long, mtu=1400",)
    with pytest.raises(ParseError, match="packets transmitted"):
        parse_ping("ping: connect: Network is unreachable\n")


@pytest.mark.parametrize(
    ("value", "selected"),
    [
        ("enp1s0f0np0", ["enp1s0f0np0"]),
        ("enp1", ["enp1s0f0np0", "enp1s0f1np1"]),  # a prefix
        ("=enp1", []),  # exact names only
        ("=enp1s0f0np0,enP7s7", ["enP7s7", "enp1s0f0np0"]),
        ("^enp1,lo", ["enP2p1s0f0np0", "enP7s7"]),  # excluded
    ],
)
def test_socket_ifname_as_nccl_reads_it(value, selected):
    netdevs = ["lo", "enP7s7", "enp1s0f0np0", "enp1s0f1np1", "enP2p1s0f0np0"]
    assert socket_ifname_matches(value, netdevs) == selected


# -- the wire: who answered (issue 19, check 1) ----------------------------------------------------
def test_neighbour_table_names_who_answered_and_who_did_not(capture):
    table = parse_ip_neigh(capture("commands/ip_j_neigh.reachable_and_failed.iproute2-6.1.0.local_sandbox.json"))
    answered, silent = answer_for(table, "10.20.0.2", "eth1"), answer_for(table, "10.20.0.9", "eth1")
    assert answered is not None and (answered.mac, answered.states, answered.answered) == (
        "7e:41:67:d4:e7:af",
        ("REACHABLE",),
        True,
    )
    assert silent is not None and (silent.mac, silent.answered) == (None, False)
    assert answer_for(table, "10.20.0.2", "eth0") is None  # asked on another netdev: not this wire's answer
    assert parse_ip_neigh("[]") == ()


@pytest.mark.parametrize(
    ("text", "said"),
    [("", "not JSON"), ('{"dst": "x"}', "expected a JSON list"), ('[{"dev": "eth1"}]', "an entry without")],
)
def test_neighbour_table_refuses_what_is_not_one(text, said):
    with pytest.raises(ParseError, match=said):
        parse_ip_neigh(text)


def test_each_netdev_reports_its_mac(capture):
    netdevs = parse_ip_addr(capture("commands/ip_j_addr.dgx_spark_cx7.reconstructed.json"))
    assert netdevs["enp1s0f1np1"].mac == "4c:bb:47:2f:91:13"


def test_a_kernel_flag_reads_as_on_or_off(capture):
    assert parse_flag(capture("commands/proc_sys_net_ipv4_ip_forward.off.local_sandbox.txt"), "ip_forward") is False
    assert parse_flag("1\n", "ip_forward") is True
    with pytest.raises(ParseError, match="expected 0 or 1"):
        parse_flag("cat: /proc/sys/net/ipv4/ip_forward: Permission denied", "ip_forward")


def test_forwarded_fabric_traffic_meets_dockers_drop_policy_and_docker_user(capture):
    """Docker's FORWARD (policy DROP, jump to DOCKER-USER first): the direction DOCKER-USER accepts
    passes, the other falls to the policy; a DOCKER-USER that is not there passes nothing on."""
    forward = parse_chain(
        capture("commands/iptables_S_FORWARD.docker_policy_drop.iptables-1.8.9_nft.local_sandbox.txt"), "FORWARD"
    )
    user = parse_chain(
        capture("commands/iptables_S_DOCKER-USER.accept_fabric.iptables-1.8.9_nft.local_sandbox.txt"), "DOCKER-USER"
    )
    absent = parse_chain(capture("commands/iptables_S.no_such_chain.iptables-1.8.9_nft.local_sandbox.txt"), "X")
    assert (forward.policy, len(forward.rules), absent.exists) == ("DROP", 2, False)
    chains = {"FORWARD": forward, "DOCKER-USER": user}
    assert forwarded(chains, "FORWARD", "enp1s0f0np0", "enp1s0f1np1") == (
        True,
        "-A DOCKER-USER -i enp1s0f0np0 -o enp1s0f1np1 -j ACCEPT",
    )
    assert forwarded(chains, "FORWARD", "enp1s0f1np1", "enp1s0f0np0") == (False, "-P FORWARD DROP")
    # the docker0 conntrack ACCEPT decides for some packets only: passed over
    assert forwarded({**chains, "DOCKER-USER": absent}, "FORWARD", "enp1s0f0np0", "enp1s0f1np1")[0] is False
    wildcard = parse_chain("-P FORWARD DROP\n-A FORWARD -i enp+ ! -o enP7s7 -j ACCEPT\n", "FORWARD")
    assert forwarded({"FORWARD": wildcard}, "FORWARD", "enp1s0f0np0", "enp1s0f1np1")[0] is True
    assert forwarded({"FORWARD": wildcard}, "FORWARD", "enp1s0f0np0", "enP7s7")[0] is False
    with pytest.raises(ParseError, match="no -P, -N or -A line"):
        parse_chain("iptables: Permission denied (you must be root).", "FORWARD")
