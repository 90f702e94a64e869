"""report.html's model and page from summary.json: the cluster's shape and bandwidth matrix, the stage header,
the failures with their fix at the top (root cause first), the picture's parts and colours, the trend plots'
time labels and size, and the advice when there is no history."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gb10check.inventory import load_inventory
from gb10check.reporting import html_report
from gb10check.reporting.history import Run, Trend
from gb10check.reporting.report import Row, bandwidth_matrix, cluster_of, title_of
from gb10check.reporting.trend_plot import plot, time_labels

PROJECT = Path(__file__).resolve().parents[2]


def _cluster(example: str) -> dict[str, Any]:
    return cluster_of(load_inventory(PROJECT / "fixtures" / example))


def _row(test: str, verdict: str = "passed", nodes: tuple[str, ...] = (), rail: str | None = None, **extra: Any):
    check = test.split("::")[-1]
    return {"test": test, "check": check, "title": "", "node": nodes[0] if nodes else None, "nodes": list(nodes),
            "verdict": verdict, "evidence": [], "hints": [], "message": "", "duration": 0.1, "rail": rail,
            "figures": {}, "facts": {}, "troubleshooting": {}, **extra}  # fmt: skip


def _summary(rows: list[dict[str, Any]], cluster: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    return {"schema_version": 3, "started": "2026-12-04T06:14:05+0000", "duration": 3.0, "inventory": "c.toml",
            "scenario": None, "interrupted": False, "counts": counts, "timings": {}, "transports": {},
            "troubleshooting": {}, "selection": {}, "matrix": [], "checks": rows,
            **({"cluster": cluster} if cluster else {}), **extra}  # fmt: skip


def test_a_check_is_named_by_its_docstrings_first_sentence_or_its_readable_name():
    assert (
        title_of("Every member of a rail: the same MTU.\n\nMore.", "test_x") == "Every member of a rail: the same MTU"
    )
    assert title_of("The run works\n    over this rail. It explains.", "t") == "The run works over this rail"
    assert title_of(None, "test_rdma_port_active[a-enp1s0f0np0]") == "Rdma port active"


def test_every_check_has_a_title_line_of_its_own():
    """report.html and summary.md head each check with its title: the docstring's first line, a short
    sentence of its own (a paragraph's first sentence ran to 300 characters; one said "Skipped, not failed")."""
    import ast

    long_or_missing = {}
    for path in sorted(PROJECT.glob("tests_*/test_*.py")):
        for fn in ast.walk(ast.parse(path.read_text())):
            if isinstance(fn, ast.FunctionDef) and fn.name.startswith("test_"):
                doc = ast.get_docstring(fn) or ""
                first = doc.split("\n\n", 1)[0]
                if not first or "\n" in first or len(first) > 72 or not first.endswith("."):
                    long_or_missing[f"{path.name}::{fn.name}"] = first[:80]
    assert not long_or_missing, long_or_missing


def test_summary_json_carries_the_clusters_shape_and_the_bandwidth_matrix():
    ring = _cluster("cluster.ring.example.toml")
    assert ring["topology"] == "ring" and [n["rank"] for n in ring["nodes"]] == list(range(len(ring["nodes"])))
    assert all(len(r["members"]) == 2 and {"node", "netdev", "address"} <= set(r["members"][0]) for r in ring["rails"])
    rows = [
        Row("t::test_rdma_bandwidth[a-b-r0]", "test_rdma_bandwidth[a-b-r0]", "a", "passed", rail="r0",
            nodes=["a", "b"], figures={"bandwidth_gbps": 109.0}),
        Row("t::test_all[a-b]", "test_all[a-b]", "a", "failed", nodes=["a", "b"],
            figures={"bandwidth_gbps": 149.0, "bandwidth_gbps_r0": 109.0, "bandwidth_gbps_r1": 40.0}),
        Row("t::test_x[a]", "test_x[a]", "a", "passed", nodes=["a"], figures={"bandwidth_gbps": 1.0}),
    ]  # fmt: skip
    assert bandwidth_matrix(rows) == [
        {"a": "a", "b": "b", "rail": "r0", "at_once": False, "gbps": 109.0},
        {"a": "a", "b": "b", "rail": "r0", "at_once": True, "gbps": 109.0},
        {"a": "a", "b": "b", "rail": "r1", "at_once": True, "gbps": 40.0},
        {"a": "a", "b": "b", "rail": None, "at_once": True, "gbps": 149.0},
    ]


def test_the_header_says_each_stage_and_one_not_selected_says_so():
    rows = [_row("tests_preflight/test_d.py::test_d[a]", "failed", ("a",), hints=["driver-mismatch"]),
            _row("tests_network/test_l.py::test_l[a]", "passed", ("a",))]  # fmt: skip
    page = html_report.page(_summary(rows, selection={"markers": "preflight or network"}), {})
    states = {s.name: (s.state, s.summary) for s in page.stages}
    assert states["preflight"] == ("failed", "1 of 1 failed")
    assert states["network"] == ("passed", "1 passed")
    assert states["service"] == ("none", "not run: not selected (-m 'preflight or network')")
    assert states["trends"] == ("none", "not run: no --history=DIR")


def test_with_a_node_down_its_hint_comes_first_and_the_api_before_the_api_checks_own():
    """The run meets the service's hints first (alphabetically too: a misleading secondary one), but the node
    that cannot be reached explains them: it leads; the API that does not answer leads the API checks' own."""
    rows = [
        _row("tests_service/test_a.py::test_served_model[a]", "failed", ("a",), hints=["api-wrong-model"]),
        _row("tests_service/test_a.py::test_health[a]", "failed", ("a",), hints=["service-unreachable"]),
        _row("tests_preflight/test_d.py::test_d[b]", "failed", ("b",), hints=["node-unreachable"],
             message="[node-unreachable] b: cannot connect"),
        _row("tests_preflight/test_d.py::test_e[b]", "failed", ("b",), hints=["node-unreachable"],
             message="[node-unreachable] b: cannot connect"),
    ]  # fmt: skip
    summary = _summary(rows, troubleshooting={"api-wrong-model": "[api-wrong-model] x", "node-unreachable": "[n] y"})
    order = html_report.hint_order(summary)
    assert order[0] == "node-unreachable" and order.index("service-unreachable") < order.index("api-wrong-model")
    text = html_report.render(summary, summary["troubleshooting"])
    assert text.index('data-hint="node-unreachable"') < text.index('data-hint="api-wrong-model"')
    # the same finding about the same node: one entry naming both checks, the count still 2
    group = html_report.page(summary, {}).groups[0]
    assert group.count == 2 and len(group.failures) == 1 and group.failures[0].same[0].label == "E"


def test_regressions_trend_failures_and_recoveries_are_listed_together_before_the_failures():
    trend = "gb10check/trends::test_figure_trend[test_bw-a-b-r0-bandwidth_gbps]"
    rows = [
        _row("tests_network/test_bw.py::test_bw[a-b-r0]", "failed", ("a", "b"), "r0", hints=["bw-low"]),
        _row(trend, "failed", hints=["figure-regressed"], message="40, 63% worse"),
        _row("tests_network/test_x.py::test_x[a]", "passed", ("a",)),
    ]
    history = {"regressions": [{"test": rows[0]["test"], "was": "passed", "now": "failed"}],
               "recoveries": [{"test": rows[2]["test"], "was": "failed", "now": "passed"}]}  # fmt: skip
    text = html_report.render(_summary(rows, history=history), {})
    changes = text[text.index('id="changes"') : text.index('id="failures"')]
    assert [m for m in re.findall(r'<li class="(\w+)"', changes)] == ["regression", "trend", "recovery"]
    assert "2 of 3 checks failed" in text


def _picture(example: str, rows: list[dict[str, Any]], matrix: list[dict[str, Any]] | None = None):
    cluster = _cluster(example)
    page = html_report.page(_summary(rows, cluster, matrix=matrix or []), {})
    assert page.picture is not None
    return cluster, page.picture


def test_the_picture_of_a_pair_colours_the_down_rails_line_and_writes_the_good_ones_gbps():
    cluster = _cluster("cluster.example.toml")
    a, b = (n["name"] for n in cluster["nodes"])
    good, bad = (r["name"] for r in cluster["rails"])
    rows = [
        _row(f"tests_network/t.py::test_bw[{a}-{b}-{good}]", "passed", (a, b), good, figures={"bandwidth_gbps": 109.0}),
        _row(f"tests_network/t.py::test_bw[{a}-{b}-{bad}]", "failed", (a, b), bad),
        _row(f"tests_network/t.py::test_up[{b}-{bad}]", "failed", (b,), bad),
        _row(f"tests_network/t.py::test_all[{a}-{b}]", "failed", (a, b)),  # both rails at once: not on the good line
    ]
    matrix = [{"a": a, "b": b, "rail": good, "at_once": False, "gbps": 109.0}]
    _, pic = _picture("cluster.example.toml", rows, matrix)
    assert pic.topology == "pair" and [box.label for box in pic.boxes] == [a, b]
    lines = {line.part.heading: line for line in pic.lines}
    ok, down = lines[f"{a} and {b} over rail {good}"], lines[f"{a} and {b} over rail {bad}"]
    assert [s.state for s in ok.segments] == ["none", "passed", "none"] and ok.label == "109 Gb/s"
    assert [s.state for s in down.segments] == ["none", "failed", "failed"]  # b's end and the middle
    assert rows[3] in ok.part.listed  # the pair's own check is in the good line's panel, not its colour


def test_the_picture_of_a_ring_draws_each_cables_two_rails_and_a_switch_links_every_node():
    ring, pic = _picture("cluster.ring.example.toml", [])
    assert len(pic.boxes) == len(ring["nodes"]) and len(pic.lines) == len(ring["rails"])
    first3 = {n["name"] for n in ring["nodes"][:3]}
    three = {**ring, "nodes": ring["nodes"][:3],
             "rails": [r for r in ring["rails"] if {m["node"] for m in r["members"]} <= first3]}  # fmt: skip
    tri = html_report.page(_summary([], three), {}).picture
    assert tri is not None and max(b.y + b.h / 2 for b in tri.boxes) + 36 >= tri.height  # no empty lower third
    switch = _cluster("cluster.switch.example.toml")
    down = switch["nodes"][1]["name"]
    rows = [_row("tests_preflight/t.py::test_d[x]", "failed", (down,), hints=["node-unreachable"])]
    _, pic = _picture("cluster.switch.example.toml", rows)
    assert pic.switch is not None and len(pic.rail_rows) == len(switch["rails"])
    assert len(pic.lines) == len(switch["nodes"]) * len(switch["rails"])  # every node to every rail
    assert {b.label: b.part.state for b in pic.boxes}[down] == "failed"
    for box in pic.boxes:  # legible: no two node boxes overlap
        for other in pic.boxes:
            if other is not box:
                assert abs(box.x - other.x) >= box.w or abs(box.y - other.y) >= box.h, (box.label, other.label)


def test_runs_within_one_minute_get_distinct_time_labels_and_a_plot_is_tall_enough_to_read():
    same_minute = ["2026-12-04T06:14:05+0000", "2026-12-04T06:14:31+0000", "2026-12-04T06:14:58+0000"]
    assert [a for a, _ in time_labels(same_minute)] == ["06:14:05", "06:14:31", "06:14:58"]
    nights = ["2026-12-02T03:00:00+0000", "2026-12-03T03:00:00+0000", "2026-12-04T03:00:00+0000"]
    assert [a for a, _ in time_labels(nights)] == ["02 Dec", "03 Dec", "04 Dec"]
    trend = Trend("t[a-b-r0]::bandwidth_gbps", 40.0, 109.0, 2, 0.63, True, allowed=0.35)
    p = plot(trend.key, list(zip(same_minute, [109.0, 109.0, 40.0], strict=True)), trend, "failed")
    assert p.height >= 150 and p.unit == "Gb/s"
    assert [lv.text for lv in p.levels] == ["median 109 Gb/s", "trend limit 70.9 Gb/s"]
    gaps = [b.at - a.at for a, b in zip(p.yticks[1:], p.yticks, strict=False)]
    assert min(gaps) >= 20  # y labels never overlap
    assert [t.anchor for t in p.xticks] == ["start", "middle", "end"]  # the last label is not cut off


def test_without_history_the_page_says_what_to_type():
    text = html_report.render(_summary([_row("tests_preflight/t.py::test_d[a]", "passed", ("a",))]), {})
    assert "the nightly does" not in text
    assert "gb10check nightly --history=" in text


def test_a_nightly_with_history_plots_each_figure_over_its_runs():
    key = "test_bw[a-b-r0]::bandwidth_gbps"
    past = [Run(Path(f"run-{i}.json"), f"2026-12-0{i}T03:00:00+0000", {}, {key: 109.0}) for i in (1, 2)]
    row = _row("tests_network/t.py::test_bw[a-b-r0]", "passed", ("a", "b"), "r0", figures={"bandwidth_gbps": 108.0})
    text = html_report.render(_summary([row], started="2026-12-03T03:00:00+0000"), {}, past)
    assert re.findall(r'data-value="([\d.]+)"', text) == ["109", "109", "108"]
    assert ">02 Dec<" in text and ">03 Dec<" in text


def test_eight_nodes_on_a_switch_get_the_matrix_node_by_node_and_ring_labels_clear_their_lines():
    switch = _cluster("cluster.switch.example.toml")
    _, pic = _picture("cluster.switch.example.toml", [])
    assert pic.square == []  # 4 nodes, 6 pairs: a list
    eight = {**switch, "nodes": [{"name": f"n{k}", "rank": k} for k in range(8)]}
    eight["rails"] = [{**r, "members": [{"node": f"n{k}", "netdev": r["name"], "address": f"10.{i}.0.{k + 1}/24"}
                                         for k in range(8)]} for i, r in enumerate(switch["rails"])]  # fmt: skip
    page = html_report.page(_summary([], eight), {})
    assert page.picture is not None and len(page.picture.matrix) == 28
    square = page.picture.square
    assert [a for a, _ in square] == [f"n{k}" for k in range(7)] and all(len(cells) == 7 for _, cells in square)
    assert square[0][1][0] is not None and square[1][1][0] is None  # n0-n1 in the first row; n1-n1 none
    ring = _cluster("cluster.ring.example.toml")
    matrix = [{"a": r["members"][0]["node"], "b": r["members"][1]["node"], "rail": r["name"], "at_once": False,
               "gbps": 109.0} for r in ring["rails"]]  # fmt: skip
    _, pic = _picture("cluster.ring.example.toml", [], matrix)
    assert all(line.label == "109 Gb/s" for line in pic.lines)
    for line in pic.lines:  # each label off its line: its distance from the line at least half the text's height
        seg = line.segments[1]
        dx, dy = seg.x2 - seg.x1, seg.y2 - seg.y1
        distance = abs(dy * (line.lx - seg.x1) - dx * (line.ly - 4 - seg.y1)) / (dx * dx + dy * dy) ** 0.5
        assert distance >= 7, (line.tip, distance)


def test_what_changed_and_a_trend_failure_say_which_pair_they_are_about():
    bw = "tests_network/test_bw.py::test_bw[a-b-r0]"
    rows = [
        _row(bw, "failed", ("a", "b"), "r0", figures={"bandwidth_gbps": 40.0}),
        _row("gb10check/trends::test_figure_trend[test_bw-a-b-r0-bandwidth_gbps]", "failed", message="40, 63% worse"),
    ]
    page = html_report.page(
        _summary(rows, history={"regressions": [{"test": bw, "was": "passed", "now": "failed"}]}), {}
    )
    pair = "a and b over rail r0"
    assert [(c.kind, c.where) for c in page.changes] == [("regression", pair), ("trend", pair)]
    assert [f.where for f in page.failures] == [pair, pair]  # the trend's too: never "the cluster"


def test_the_trend_checks_listed_under_their_stage_say_which_pair_each_is_about():
    rows = [
        _row("tests_network/t.py::test_bw[a-b-r0]", "passed", ("a", "b"), "r0", figures={"bandwidth_gbps": 40.0}),
        _row("tests_network/t.py::test_bw[a-c-r0]", "passed", ("a", "c"), "r0", figures={"bandwidth_gbps": 109.0}),
        _row("gb10check/trends::test_figure_trend[test_bw-a-b-r0-bandwidth_gbps]", "failed", title="Bw: against"),
        _row("gb10check/trends::test_figure_trend[test_bw-a-c-r0-bandwidth_gbps]", "passed", title="Bw: against"),
    ]
    trends = next(c for c in html_report.page(_summary(rows), {}).checks if c.stage.name == "trends")
    assert [(t.state, t.param) for t in trends.cluster] == [("failed", "a and b over rail r0"),
                                                             ("passed", "a and c over rail r0")]  # fmt: skip


def test_wrong_model_leads_with_the_served_name_that_differs_not_the_404s_that_follow():
    """wrong-model: eleven requests each got a 404 and one check found the served name that differs; the
    decisive finding was 7th of 12. The 404s are one entry naming their checks, after the served name."""
    found404 = "HTTP 404: The model `qwen3.8-flash-next` does not exist."

    def failed(check: str, what: str, found: str) -> dict[str, Any]:
        item = {"what": what, "expected": "an answer", "found": found, "ok": False, "detail": "", "hints": []}
        return _row(f"tests_service/t.py::{check}[a]", "failed", ("a",), hints=["model-not-registered"],
                    evidence=[item])  # fmt: skip

    rows = [failed(f"test_canary_{i}", f"chat completion {i}", found404) for i in range(6)]
    rows += [failed("test_served_model", "served model name", "qwen3-next")]
    rows += [failed(f"test_tool_{i}", f"tool call {i}", found404) for i in range(5)]
    group = html_report.page(_summary(rows), {}).groups[0]
    assert [(f.row["check"], f.count) for f in group.failures] == [
        ("test_served_model[a]", 1),
        ("test_canary_0[a]", 11),
    ]


def test_a_run_that_measured_no_bandwidth_shows_no_empty_matrix():
    cluster = _cluster("cluster.example.toml")
    text = html_report.render(_summary([_row("tests_service/t.py::test_s[a]", "passed", ("a",))], cluster), {})
    assert 'id="picture"' in text and 'id="matrix"' not in text


def test_a_slow_pair_on_a_switch_gets_a_line_per_slow_rail_labelled_with_that_rails_figure():
    """One rail of a pair slow behind the switch: its dashed line between the two nodes says that rail's Gb/s,
    not the all-rails figure; the all-rails check's own line is drawn only where no rail's check failed."""
    switch = _cluster("cluster.switch.example.toml")
    a, b = switch["nodes"][0]["name"], switch["nodes"][1]["name"]
    slow, fast = (r["name"] for r in switch["rails"][:2])
    rows = [
        _row(f"tests_network/t.py::test_bw[{a}-{b}-{slow}]", "failed", (a, b), slow, figures={"bandwidth_gbps": 40.0}),
        _row(f"tests_network/t.py::test_bw[{a}-{b}-{fast}]", "passed", (a, b), fast, figures={"bandwidth_gbps": 109.0}),
        _row(f"tests_network/t.py::test_bw_all[{a}-{b}]", "failed", (a, b), figures={"bandwidth_gbps": 149.0}),
    ]
    matrix = [{"a": a, "b": b, "rail": slow, "at_once": False, "gbps": 40.0},
              {"a": a, "b": b, "rail": fast, "at_once": False, "gbps": 109.0},
              {"a": a, "b": b, "rail": None, "at_once": True, "gbps": 149.0}]  # fmt: skip
    _, pic = _picture("cluster.switch.example.toml", rows, matrix)
    between = [line for line in pic.lines if line.tip.startswith(f"{a} and {b} ")]
    assert [(line.tip, line.label) for line in between] == [
        (f"{a} and {b} over rail {slow}: a check failed", "40 Gb/s")
    ]
    only_all = [r for r in rows if r["rail"] is None]
    _, pic = _picture("cluster.switch.example.toml", only_all, matrix)
    between = [line for line in pic.lines if line.tip.startswith(f"{a} and {b} ")]
    assert [(line.tip, line.label) for line in between] == [
        (f"{a} and {b} every rail at once: a check failed", "149 Gb/s all rails")
    ]
