"""With --history, a member's RoCE v2 IPv4 GID that moved to another index since the previous kept run is
named (fixtures/history.py, gb10check/reporting/history.py moves): two nights of `gb10check network`, the second
with an extra address before the link's on rank 1's enP2p1s0f0np0 (scenario gid-index-shifted)."""

from __future__ import annotations

import json

import pytest

from selftests.e2e.runner import run_suite

pytestmark = pytest.mark.sim
MOVED = "gb10check/trends::test_figure_moved[test_gid_index-thinkstationpgx-32-enP2p1s0f0np0-gid_index]"
CHECK = "test_gid_index[thinkstationpgx-32-enP2p1s0f0np0]"
STAYED = "gb10check/trends::test_figure_moved[test_gid_index-thinkstationpgx-32-enp1s0f0np0-gid_index]"


def test_a_gid_index_that_moved_since_the_last_run_is_named(tmp_path):
    history = tmp_path / "history"
    args = ("-m", "network", "-k", "test_gid_index", f"--history={history}")
    first = run_suite(tmp_path / "night1", "--sim", "healthy", *args)
    assert first.rc == 0, first.out
    assert "no earlier run" in first.skipped()[MOVED]  # nothing to compare with yet: no verdict
    second = run_suite(tmp_path / "night2", "--sim", "gid-index-shifted", *args)
    assert second.rc == 1, second.out
    message = second.junit[MOVED]["message"]
    assert message.startswith(f"[gid-index-moved] gid_index of {CHECK}"), message
    assert "3 then, 5 now" in message, message
    assert STAYED in second.junit and second.junit[STAYED].get("message") in (None, ""), second.junit[STAYED]
    tail = second.section("troubleshooting")
    assert "[gid-index-moved]" in tail and "ip -br addr show enP2p1s0f0np0   # on thinkstationpgx-32" in tail, tail
    rows = {r["test"]: r for r in json.loads((tmp_path / "night2" / "reports" / "summary.json").read_text())["checks"]}
    assert rows[MOVED]["node"] == "thinkstationpgx-32" and rows[MOVED]["hints"] == ["gid-index-moved"]
    gid = rows["tests_network/test_rdma_ports.py::test_gid_index[thinkstationpgx-32-enP2p1s0f0np0]"]
    assert gid["figures"] == {"gid_index": 5.0} and gid["facts"] == {"nccl_gid_index": "3"}
