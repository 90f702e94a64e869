"""The order a run's hints are shown in, root cause first (gb10check/judging/root_cause.py)."""

from __future__ import annotations

from gb10check.judging.root_cause import hint_order


def test_a_wedged_rank_comes_before_the_stuck_engine_and_the_timeouts_it_explains():
    """The engine stuck and the requests timing out follow from the rank that stopped (its collective's
    timeout in the logs), whichever check the run met first."""
    rows = [
        {"test": "tests_service/test_correctness.py::test_canary_answer[a]", "verdict": "failed",
         "hints": ["service-timeout"]},
        {"test": "tests_service/test_metrics.py::test_engine_generates[a]", "verdict": "failed",
         "hints": ["engine-stuck"]},
        {"test": "tests_service/test_logs.py::test_rank_alive[c]", "verdict": "failed", "hints": ["rank-wedged"]},
    ]  # fmt: skip
    assert hint_order([], rows) == ["rank-wedged", "engine-stuck", "service-timeout"]


def test_a_port_that_negotiated_less_comes_before_the_slow_figures_over_it():
    """On a 4-switch with one port at 100G, the three pairs over it measure half: the rate is the cause."""
    rows = [
        {"test": f"tests_network/test_bandwidth.py::test_rdma_bandwidth[{p}-c-r0]", "verdict": "failed",
         "hints": ["bw-low"]}
        for p in ("a", "b", "d")
    ] + [
        {"test": "tests_network/test_rdma_ports.py::test_rdma_port_rate[c-r0]", "verdict": "failed",
         "hints": ["switch-port-rate-low"]},
    ]  # fmt: skip
    assert hint_order([], rows) == ["switch-port-rate-low", "bw-low"]


def test_a_nodes_env_with_another_rank_comes_before_the_compose_and_the_repeated_rank_it_explains():
    """node-rank-repeated on a 3-ring: rank 2's .env says NODE_RANK=1, so its compose resolves --node-rank 1
    and two nodes claim rank 1; the run meets the compose rule first, the .env is what to edit."""
    rows = [
        {"test": "tests_preflight/test_launch_rules.py::test_launch_rule[c-topology]", "verdict": "failed",
         "hints": ["distributed-args-wrong"]},
        {"test": "tests_preflight/test_launch_rules.py::test_launch_rule[c-host-ip]", "verdict": "failed",
         "hints": ["env-mismatch"]},
        {"test": "tests_preflight/test_launch_plan.py::test_node_rank_unique", "verdict": "failed",
         "hints": ["node-rank-repeated"]},
    ]  # fmt: skip
    assert hint_order([], rows) == ["env-mismatch", "distributed-args-wrong", "node-rank-repeated"]


def test_a_crossed_cable_and_a_subnet_shared_by_both_halves_come_before_what_they_break():
    """cable-halves-crossed: the control plane rides the crossed rail, so the master ping fails because of
    it; halves-one-subnet: the shifted GID follows from the halves on one subnet and the per-device index."""
    rows = [
        {"test": "tests_preflight/test_launch_plan.py::test_master_reachable_on_control_plane[b]",
         "verdict": "failed", "hints": ["master-unreachable"]},
        {"test": "tests_network/test_rdma_ports.py::test_gid_index[b-r1]", "verdict": "failed",
         "hints": ["gid-index-mismatch"]},
        {"test": "tests_network/test_cabling.py::test_cable_ends_where_the_inventory_says[a-b-r0]",
         "verdict": "failed", "hints": ["cable-crossed"]},
        {"test": "tests_network/test_address_plan.py::test_each_rail_on_its_own_subnet[b]", "verdict": "failed",
         "hints": ["halves-one-subnet"]},
    ]  # fmt: skip
    order = hint_order([], rows)
    assert order.index("cable-crossed") < order.index("master-unreachable"), order
    assert order.index("halves-one-subnet") < order.index("gid-index-mismatch"), order


def test_the_checks_that_found_a_wedged_rank_come_before_the_requests_it_timed_out():
    """switch4-rank-wedged: the request that timed out borrows [rank-wedged] from the logs (it compared
    nothing); the ranks' own log checks found it and come first. Under a node down, the node's own error
    (nothing compared) still leads the findings that follow from it."""
    from gb10check.judging.root_cause import failures_in_order

    ok = {"ok": False, "found": "its NCCL watchdog timed out"}
    rows = [
        {"test": "tests_service/test_decode_speed.py::test_decode_speed[a]", "verdict": "failed",
         "hints": ["rank-wedged", "service-timeout"], "evidence": [], "message": "POST ...: no answer", "nodes": ["a"]},
        {"test": "tests_service/test_logs.py::test_rank_alive[c]", "verdict": "failed", "hints": ["rank-wedged"],
         "evidence": [ok], "nodes": ["c"]},
        {"test": "tests_network/test_rdma_ports.py::test_rdma_port_active[a-r0]", "verdict": "failed",
         "hints": ["node-unreachable"], "evidence": [{"ok": False, "found": "down"}], "nodes": ["a"]},
        {"test": "tests_preflight/test_driver.py::test_driver_versions_match[b]", "verdict": "error",
         "hints": ["node-unreachable"], "evidence": [], "message": "b: no SSH", "nodes": ["b"]},
    ]  # fmt: skip
    order = hint_order([], rows)
    assert [r["test"].split("::")[1] for r in failures_in_order(rows, order)] == [
        "test_driver_versions_match[b]",
        "test_rdma_port_active[a-r0]",
        "test_rank_alive[c]",
        "test_decode_speed[a]",
    ]


def test_a_start_that_has_not_reached_serving_comes_before_the_api_that_refuses():
    """startup-retuning without --wait-ready: the API refuses connections because the start is under way."""
    rows = [
        {"test": "tests_service/test_models.py::test_health_and_version[a]", "verdict": "failed",
         "hints": ["service-unreachable"]},
        {"test": "tests_service/test_logs.py::test_startup_reached_serving[a]", "verdict": "failed",
         "hints": ["startup-incomplete"]},
    ]  # fmt: skip
    assert hint_order([], rows) == ["startup-incomplete", "service-unreachable"]
