"""Every command a hint prints, run where it says (issue: "one fault, one verdict, the right command").

A fault scenario is brought up by hand, the suite run against it on rank 0, and each `$ COMMAND   # on NODE`
line of its troubleshooting section is held to what an operator will do with it: it parses as bash, it
names nodes of the failures its hint explains, and it runs on each of those sim nodes over SSH (a tool
there; a command the sim cannot run is named, with why, in the hint's `not_in_sim`). Where the sim can
apply the fix, running the hint's commands fixes it: the rerun passes the check that failed. A copy goes
from a node that has the files to the node that lacks them, over an address of that node on a rail both
share (the hint says "over their QSFP address").
"""

from __future__ import annotations

import ipaddress
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from gb10check.judging.hints import Catalogue
from selftests.e2e.by_hand import UpByHand, up_by_hand

pytestmark = pytest.mark.sim
# never run on a sim node whatever a hint says: its nodes are namespaces of this machine, whose kernel, services,
# packages and firmware these would change; a hint that prints one says why in its not_in_sim
NEVER = frozenset({"reboot", "shutdown", "poweroff", "halt", "systemctl", "apt", "apt-get", "dpkg", "modprobe",
                   "rmmod", "fwupdmgr", "nvidia-ctk", "netplan", "mount", "umount"})  # fmt: skip
SAYS_WHERE = re.compile(r"# (on|where) ")
LINE = re.compile(r"^    \$ (?P<command>.+?)(?:   # on (?P<nodes>[\w.-]+(?:, [\w.-]+)*))?$")


@dataclass(frozen=True)
class Case:
    scenario: str
    stage: str
    fixed: tuple[str, ...] = ()  # checks the hint's commands fix in the sim (the rerun passes them)
    copies: bool = False  # its hint copies files from another node


FIREWALL = "tests_preflight/test_firewall.py::test_firewall_allows_cluster_traffic"
CASES = (
    # the netdev down: `ip link set dev X up` on the node that has it down brings it back
    Case("link-down", "network", ("tests_network/test_interfaces.py::test_qsfp_netdev_up_with_its_address",)),
    # the real ufw: the allow lines the failure lists open it
    Case(
        "ufw-blocks-perftest", "preflight", ("tests_preflight/test_firewall.py::test_firewall_allows_cluster_traffic",)
    ),
    # the copy's source and address (the copy itself is not run: the sim's weights are sparse 185 GB files)
    Case("weights-missing", "preflight", copies=True),
    # a glob read on the odd node (the fake sysfs), the firmware tools named as the sim's lack
    Case("cx-firmware-differs", "preflight"),
    # the node's own /etc (an overlay): the mode and owner the hint sets fix its check
    Case("netplan-permissions", "preflight", ("tests_preflight/test_netplan.py::test_netplan_file_mode",)),
    # a whole rail's check: its commands for each node on the rail
    Case("mtu-mismatch", "network"),
    # a reboot the sim cannot do: the reads run, the reboot is named as the sim's lack
    Case("driver-mismatch", "preflight"),
)


@pytest.fixture(scope="module", params=CASES, ids=[c.scenario for c in CASES])
def case(request):
    for sim in up_by_hand(request.param.scenario):
        yield request.param, sim


def _suite(sim: UpByHand, stage: str, reports: Path, *extra: str) -> dict:
    run = subprocess.run(
        ["ip", "netns", "exec", sim.api_namespace, sys.executable, "-m", "gb10check.commands.cli", stage,
         f"--cluster={sim.inventory_path}", f"--reports-dir={reports}", "-q", "-p", "no:cacheprovider",
         *extra],
        capture_output=True, text=True, timeout=900, cwd=reports.parent,
    )  # fmt: skip
    assert run.returncode in (0, 1), run.stdout[-3000:] + run.stderr[-2000:]
    return json.loads((reports / "summary.json").read_text())


# the sim's login is uid 0, whose sudo PAM refuses: as root `sudo` changes nothing, so it runs the command
AS_ROOT = 'sudo() { while [ "${1#-}" != "$1" ]; do shift; done; "$@"; }; '


def _on_node(sim: UpByHand, node: str, command: str) -> subprocess.CompletedProcess[str]:
    """The command as the operator runs it: a login to the node (the inventory's host) and bash."""
    host = next(n.host for n in sim.inventory.nodes if n.name == node)
    args = ["ip", "netns", "exec", sim.api_namespace, "ssh", "-i", str(sim.dir / "client_key"),
            "-o", f"UserKnownHostsFile={sim.dir / 'known_hosts'}", "-o", "BatchMode=yes",
            f"root@{host}", "bash", "-c", _quoted(AS_ROOT + command)]  # fmt: skip
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def _quoted(command: str) -> str:
    return "'" + command.replace("'", "'\\''") + "'"


def _printed(summary: dict) -> list[tuple[str, str, list[str]]]:
    """(hint id, command, nodes) of every command line of the troubleshooting section."""
    out = []
    for hint_id, text in summary["troubleshooting"].items():
        for line in text.splitlines():
            match = LINE.match(line)
            if match:
                out.append((hint_id, match["command"], (match["nodes"] or "").split(", ") if match["nodes"] else []))
    return out


def _failed_nodes(summary: dict, hint_id: str, names: set[str]) -> set[str]:
    """The nodes of the failures that carry the hint: a check's own, or for a check of the whole cluster (a skew)
    the nodes its finding names (the odd ones out)."""
    nodes: set[str] = set()
    for row in summary["checks"]:
        if row["verdict"] in ("failed", "error") and hint_id in (row.get("hints") or []):
            own = set(row.get("nodes") or [row.get("node")]) - {None, ""}
            nodes |= own or {n for n in names if n in (row.get("message") or "")}
    return nodes


def _tools(command: str) -> set[str]:
    """The programs a command line runs: each simple command's first word (after sudo, env and assignments)."""
    out = set()
    for part in re.split(r"&&|\|\||[;|]", command.split("   # ", 1)[0]):
        words = [w for w in part.split() if "=" not in w]
        while words and (words[0] in ("sudo", "env") or words[0].startswith("-")):
            words.pop(0)
        if words:
            out.add(words[0])
    return out


def test_every_hint_command_parses_names_its_nodes_and_runs_there(case, tmp_path):
    scenario, sim = case
    summary = _suite(sim, scenario.stage, tmp_path / "reports")
    printed = _printed(summary)
    assert printed, f"{scenario.scenario}: no hint command printed"
    catalogue = Catalogue.load()
    names = {n.name for n in sim.inventory.nodes}
    ran = 0
    for hint_id, command, nodes in printed:
        syntax = subprocess.run(["bash", "-n"], input=command + "\n", capture_output=True, text=True, timeout=30)
        assert syntax.returncode == 0, f"[{hint_id}] {command!r} is not valid bash: {syntax.stderr}"
        assert set(nodes) <= names, f"[{hint_id}] {command!r} names nodes the cluster lacks: {nodes}"
        failed = _failed_nodes(summary, hint_id, names)
        assert not nodes or set(nodes) <= failed | _sources(summary, hint_id), (
            f"[{hint_id}] {command!r} is for {nodes}, its failures are on {sorted(failed)}"
        )
        assert nodes or SAYS_WHERE.search(command), f"[{hint_id}] {command!r} does not say which node to run it on"
        tools = _tools(command)
        never = tools & NEVER
        assert never <= set(catalogue[hint_id].not_in_sim), (
            f"[{hint_id}] {command!r}: {sorted(never)} would change this machine, not a sim node; say why in the "
            "hint's not_in_sim"
        )
        if tools & set(catalogue[hint_id].not_in_sim):
            continue
        for node in nodes:
            result = _on_node(sim, node, command)
            assert result.returncode not in (126, 127) and "command not found" not in result.stderr, (
                f"[{hint_id}] {command!r} on {node}: {result.stderr.strip()[-500:]} (a tool the sim lacks belongs in "
                f"the hint's not_in_sim, with why)"
            )
            ran += 1
    assert ran, f"{scenario.scenario}: no command ran on a node"
    if scenario.copies:
        _copies_go_from_a_node_that_has_the_files_over_the_fabric(sim, summary)
    if scenario.fixed:
        again = _suite(sim, scenario.stage, tmp_path / "again")
        verdicts = {row["check"]: row["verdict"] for row in again["checks"]}
        for check in scenario.fixed:
            name = check.split("::", 1)[1]
            mine = {k: v for k, v in verdicts.items() if k.split("[", 1)[0] == name}
            assert mine and all(v == "passed" for v in mine.values()), f"after the hint's commands: {mine}"


def _sources(summary: dict, hint_id: str) -> set[str]:
    """A copy's source: the node a command that copies runs on (it has the files), named by the hint itself."""
    if hint_id != "weights-missing":
        return set()
    return {n for _, command, nodes in _printed(summary) if command.startswith("rsync") for n in nodes}


def _copies_go_from_a_node_that_has_the_files_over_the_fabric(sim: UpByHand, summary: dict) -> None:
    """Each copy runs on a node that has the files and sends them to an address of the node that lacks them,
    on a rail both share."""
    copies = [(c, n) for h, c, n in _printed(summary) if h == "weights-missing" and c.startswith("rsync")]
    assert copies, summary["troubleshooting"]
    lacking = _failed_nodes(summary, "weights-missing", {n.name for n in sim.inventory.nodes})
    for command, nodes in copies:
        source, target = command.split()[-2:]
        address, _, dest = target.partition(":")
        (node,) = nodes
        assert node not in lacking, f"{command!r} runs on {node}, which lacks the weights"
        assert _on_node(sim, node, f"test -d {source}").returncode == 0, f"{node} has no {source}"
        owners = {
            m.node
            for r in sim.inventory.rails
            for m in r.members
            if ipaddress.ip_interface(m.address).ip == ipaddress.ip_address(address)
        }
        assert owners and owners <= lacking, f"{address} is {owners or 'no fabric address'}, not of {lacking}"
        shared = [r for r in sim.inventory.rails if {node, *owners} <= set(r.nodes)]
        assert shared, f"{node} and {owners} share no rail for {address}"
        assert dest.startswith("/"), dest
