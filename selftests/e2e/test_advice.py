"""The advice a failure prints is that failure's own: a hint's commands for the nodes and items its
failures found, in the terminal's troubleshooting section, the summary rows and report.html's cells."""

from __future__ import annotations

import html
import re

import pytest

from selftests.e2e.runner import run_suite, section

pytestmark = pytest.mark.sim
R0, R1 = "thinkstationpgx-30", "thinkstationpgx-32"


def _section(out: str, hint_id: str) -> list[str]:
    """The command lines of one hint in the terminal's troubleshooting section."""
    tail = section(out, "troubleshooting")
    block = tail.split(f"[{hint_id}] ", 1)[1].split("\n\n", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip().startswith("$ ")]


def test_firewall_advice_matches_the_failure(tmp_path):
    run = run_suite(tmp_path, "--sim", "firewall-blocks", "-m", "preflight", "-k", "firewall")
    tid = f"tests_preflight/test_firewall.py::test_firewall_allows_cluster_traffic[{R0}]"
    assert set(run.failed()) == {tid}, run.out
    row = next(r for r in run.summary["checks"] if r["test"] == tid)
    assert row["evidence"][-1]["detail"] == "run: sudo ufw allow 20001/tcp && sudo ufw allow from 192.168.101.0/24"
    assert _section(run.out, "ufw-blocks-cluster") == [
        f"$ sudo ufw allow from 192.168.101.0/24   # on {R0}",
        f"$ sudo ufw allow 20001/tcp   # on {R0}",
        f"$ sudo ufw status verbose   # on {R0}",
    ]


def test_link_down_advice_is_the_down_end_once_in_the_section_and_each_cell(tmp_path):
    run = run_suite(tmp_path, "--sim", "link-down", "-m", "network")
    ip_link = [c for c in _section(run.out, "roce-link-down") if "ip link set" in c]
    assert ip_link == [f"$ sudo ip link set dev enP2p1s0f0np0 up   # on {R1}"], run.out
    rows = {r["check"]: r for r in run.summary["checks"] if r["verdict"] == "failed"}
    own = {check: [c for c in _commands(r["troubleshooting"]["roce-link-down"]) if "ip link set" in c]
           for check, r in rows.items()}  # fmt: skip
    fix = [f"$ sudo ip link set dev enP2p1s0f0np0 up   # on {R1}"]
    owner = f"test_qsfp_netdev_up_with_its_address[{R1}-enP2p1s0f0np0]"
    assert own == {owner: fix}, run.out  # DOWN there: one fault, one failure (issue 26)
    followers = {  # what the DOWN port explains, each naming it: no carrier at rank 0, the ports, the ping, the runs
        f"test_qsfp_netdev_up_with_its_address[{R0}-enP2p1s0f0np0]",
        f"test_roce_link_up[{R1}-enP2p1s0f0np0]",
        f"test_rdma_port_active[{R1}-enP2p1s0f0np0]",
        f"test_roce_link_up[{R0}-enP2p1s0f0np0]",
        f"test_rdma_port_active[{R0}-enP2p1s0f0np0]",
        f"test_peer_answers_full_frames[{R0}-{R1}-enP2p1s0f0np0]",
        f"test_rdma_write_runs[{R0}-{R1}-enP2p1s0f0np0]",
        f"test_rdma_bandwidth_all_rails_at_once[{R0}-{R1}]",
    }
    skipped = {r["check"]: r["message"] for r in run.summary["checks"] if r["check"] in followers}
    said = f"follows from {owner}: {R1}'s enP2p1s0f0np0 is administratively DOWN (rail enP2p1s0f0np0)"
    assert skipped == dict.fromkeys(followers, f"Skipped: {said}"), skipped
    assert "8 follow from a failure above" in run.out
    page = html.unescape((tmp_path / "reports" / "report.html").read_text())
    failures = re.findall(r'<li class="failure".*?</li>', page, re.S)
    listed = [t for f in failures for t in re.findall(r'data-test="[^"]*::([^"]+)"', f)]
    assert sorted(listed) == sorted(rows)  # every failed check in "What failed", once
    for failure in failures:  # each failure shows its own commands, never the merged list
        assert "ip link set dev enp1s0f0np0" not in failure and failure.count("ip link set") <= 1, failure
    assert "enP2p1s0f0np0 administrative state: expected UP, found <strong>DOWN here" in page


def _commands(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("$ ")]


def test_with_a_node_down_its_peers_link_findings_follow_from_it(tmp_path):
    """node-down: rank 0's dark ports, its carrier, NCCL's socket netdev there, its pings of rank 1 and the
    cabling between them follow from rank 1 being off: each skips naming it (one fault, one verdict), and
    rank 0 has no failure of its own; rank 1's checks say it cannot be reached, in one line."""
    run = run_suite(tmp_path, "--sim", "node-down", "-m", "network", "-k", "not bandwidth")
    on_rank0 = {tid: hints for tid, hints in run.failed().items() if f"[{R0}" in tid}
    assert on_rank0 == {}, run.out
    rows = {r["check"]: r for r in run.summary["checks"]}
    ends = ("enp1s0f0np0", "enP2p1s0f0np0")
    followers = [
        *(f"{check}[{R0}-{netdev}]" for netdev in ends
          for check in ("test_qsfp_netdev_up_with_its_address", "test_roce_link_up", "test_rdma_port_active")),
        *(f"{check}[{R0}-{R1}-{netdev}]" for netdev in ends
          for check in ("test_peer_answers_full_frames", "test_cable_ends_where_the_inventory_says")),
        f"test_socket_interfaces_are_on_the_fabric[{R0}]",
    ]  # fmt: skip
    said = f"{R1} cannot be reached (off or hung: every end of it is dark)"
    for check in followers:
        assert rows[check]["verdict"] == "skipped", rows[check]
        assert rows[check]["message"].startswith(f"Skipped: follows from test_qsfp_netdev_up_with_its_address[{R1}-")
        assert rows[check]["message"].endswith(said), rows[check]["message"]
    owner = rows[f"test_qsfp_netdev_up_with_its_address[{R1}-enp1s0f0np0]"]
    assert owner["verdict"] in ("failed", "error") and owner["message"].startswith(f"[node-unreachable] {R1} ")
    # each says it in one line; the hint's text once, in the troubleshooting section at the end
    assert run.out.count("[node-unreachable] A node cannot be reached over SSH") == 1, run.out
    follow = [r for r in rows.values() if r["verdict"] == "skipped" and "follows from " in r["message"]]
    assert len(follow) >= len(followers) and f"({len(follow)} follow from a failure above)" in run.out


def test_weights_missing_on_rank_0_are_copied_from_a_node_that_has_them(tmp_path):
    """The copy goes from a node that has the weights to the one that lacks them, over the lacking node's
    address on the rail they share, run on the node that has them (not rank 0 copying to itself)."""
    from selftests.e2e.runner import run_scenario

    run = run_scenario(
        tmp_path, 'base = "healthy"\n[nodes.rank0.hf]\nabsent = true\n', "-m", "preflight", "-k", "weights_present"
    )
    assert set(run.failed()) == {f"tests_preflight/test_weights.py::test_weights_present[{R0}]"}, run.out
    (copy,) = [c for c in _section(run.out, "weights-missing") if c.startswith("$ rsync")]
    assert copy.endswith(f" 169.254.94.252:/home/lenovo/vllm/huggingface/hub/   # on {R1}"), copy
