"""Nodes installed in other languages (scenario locale-other-language: rank 0 in Chinese, rank 1 with
LC_ALL=de_DE.UTF-8): logged in as a user would, their tools print translated words that the parsers
cannot read; through the suite's transport (LC_ALL=C LANGUAGE=) the same commands read as healthy.
The whole scenario passing is selftests/e2e/test_scenarios.py's."""

from __future__ import annotations

import subprocess

import pytest

from gb10check.errors import ParseError
from gb10check.reading.parsers.ping import parse_ping
from gb10check.reading.parsers.ufw import parse_ufw_status
from gb10check.reading.transport import SshTransport

pytestmark = pytest.mark.sim
PING = "ping -n -c 2 -i 0.2 -W 1 -M do -s 1472 -I enP2p1s0f0np0 192.168.101.11"


@pytest.fixture(scope="module")
def other_languages():
    from sim import netns
    from sim.cluster import SimCluster, why_not_available
    from sim.scenario import load_scenario

    if why_not_available():
        pytest.skip(why_not_available())
    sim = SimCluster(load_scenario("locale-other-language"))
    sim.up()
    previous = netns.enter(sim.api_namespace)
    try:
        yield sim
    finally:
        netns.leave(previous)
        sim.down()


def _login(sim, index, command):
    """The command as a user's own ssh runs it: the node's language in force (sshd's SetEnv)."""
    node = sim.nodes[index]
    args = ["ssh", "-i", str(sim.dir / "client_key"), "-o", f"UserKnownHostsFile={sim.dir / 'known_hosts'}"]
    args += ["-o", "BatchMode=yes", f"root@{node.lan_ip}", command]
    return subprocess.run(args, capture_output=True, text=True, timeout=30).stdout


def _suite(sim, index, command):
    node = sim.nodes[index]
    transport = SshTransport(node.name, node.lan_ip, user="root", key=str(sim.dir / "client_key"),
                             known_hosts=str(sim.dir / "known_hosts"), use_ssh_config=False)  # fmt: skip
    try:
        return transport.run(command, timeout=20).stdout
    finally:
        transport.close()


def test_without_the_c_locale_the_nodes_tools_speak_their_language(other_languages):
    ping = _login(other_languages, 0, PING)
    assert "已发送 2 个包， 已接收 2 个包" in ping, ping  # iputils' zh_CN catalogue
    with pytest.raises(ParseError):
        parse_ping(ping)
    ufw = _login(other_languages, 1, "ufw status verbose")
    assert "Voreinstellung: deny (eingehend)" in ufw, ufw  # ufw's own German catalogue, the real ufw
    with pytest.raises(ParseError):
        parse_ufw_status(ufw)
    assert "Datei oder Verzeichnis nicht gefunden" in _login(other_languages, 1, "cat /nonexistent 2>&1")
    assert "没有那个文件或目录" in _login(other_languages, 0, "cat /nonexistent 2>&1")  # coreutils, glibc


def test_the_suites_transport_reads_them_in_english(other_languages):
    result = parse_ping(_suite(other_languages, 0, PING))
    assert (result.transmitted, result.received, result.size) == (2, 2, 1472)
    status = parse_ufw_status(_suite(other_languages, 1, "ufw status verbose"))
    assert (status.active, status.default_incoming) == (True, "deny")
    assert "No such file or directory" in _suite(other_languages, 1, "cat /nonexistent 2>&1")
