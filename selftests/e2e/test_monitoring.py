"""What an operator wires the nightly run into: node_exporter's textfile collector, Prometheus with
the alerting rules of contrib/prometheus, the Grafana dashboard of contrib/grafana. The rules and
the dashboard are checked against what the suite writes, then run for real: a simulated run with a
slow link writes its textfile, a real node_exporter serves it on loopback, a real Prometheus scrapes
it, evaluates the rules and answers every query of the dashboard."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from selftests.e2e.runner import PROJECT

RULES = PROJECT / "contrib" / "prometheus" / "gb10check.rules.yml"
DASHBOARD = PROJECT / "contrib" / "grafana" / "gb10check.json"
SLOW_LINK = "enP2p1s0f0np0"
R0, R1 = "thinkstationpgx-30", "thinkstationpgx-32"


def _figures_the_checks_record() -> set[str]:
    """The figure names the checks pass to evidence.figure (an f-string's fixed part as a prefix)."""
    source = "".join(p.read_text() for d in ("tests_preflight", "tests_network", "tests_service", "fixtures")
                     for p in (PROJECT / d).glob("*.py"))  # fmt: skip
    return set(re.findall(r'\.figure\(f?"([a-z_]+)', source))


def _rule_expressions() -> list[str]:
    rules = yaml.safe_load(RULES.read_text())
    return [r["expr"] for g in rules["groups"] for r in g["rules"]]


def _dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def _check_expressions(expressions: list[str]) -> None:
    """Each names only metrics the suite writes, and figures some check records."""
    from gb10check.reporting import prometheus

    written = {f.name for f in prometheus.registry_of({"checks": [], "counts": {}}, ["n"]).collect()}
    figures = _figures_the_checks_record()
    assert {"bandwidth_gbps", "decode_tokens_per_s", "ttft_s"} <= figures, figures  # the scan finds them
    for expr in expressions:
        names = set(re.findall(r"\bgb10check_[a-z_]+", expr))
        assert names and names <= written, (expr, names - written)
        for op, value in re.findall(r'figure(=~?)"([^"]+)"', expr):
            wanted = value if op == "=" else value.removesuffix(".+")
            assert wanted in figures, (expr, wanted, sorted(figures))


def test_the_alerting_rules_name_the_metrics_the_suite_writes():
    expressions = _rule_expressions()
    assert len(expressions) >= 4
    _check_expressions(expressions)


def test_the_grafana_dashboard_graphs_what_the_suite_writes():
    dashboard = _dashboard()
    panels = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels) >= 8
    _check_expressions([t["expr"] for p in panels for t in p["targets"]])
    variables = {v["name"] for v in dashboard["templating"]["list"]}
    for p in panels:  # every panel on the chosen data source, every variable it uses defined
        assert all(t["datasource"]["uid"] == "${datasource}" for t in p["targets"]), p["title"]
        assert set(re.findall(r"\$(\w+)", json.dumps(p["targets"]))) <= variables | {"datasource"}, p["title"]
    cells = [(p["gridPos"]["x"] + dx, p["gridPos"]["y"] + dy) for p in panels
             for dx in range(p["gridPos"]["w"]) for dy in range(p["gridPos"]["h"])]  # fmt: skip
    assert all(0 <= x < 24 for x, _ in cells)
    assert len(set(cells)) == len(cells), "panels overlap"


# -- for real: node_exporter and Prometheus on loopback ------------------------------------------------
def _tool(name: str) -> str:
    """bin/setup unpacks Debian's binaries into the venv; one on PATH does as well."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() else shutil.which(name) or ""


NODE_EXPORTER, PROMETHEUS, PROMTOOL = (_tool(n) for n in ("prometheus-node-exporter", "prometheus", "promtool"))
needs_prometheus = pytest.mark.skipif(
    not (NODE_EXPORTER and PROMETHEUS and PROMTOOL),
    reason="no Prometheus, promtool or node_exporter (bin/setup unpacks Debian's into .venv/bin)",
)


@needs_prometheus
def test_promtool_accepts_the_rules():
    proc = subprocess.run([PROMTOOL, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and f"SUCCESS: {len(_rule_expressions())} rules found" in proc.stdout, proc


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(command: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def _get(url: str, **kwargs: Any) -> Any:
    """A JSON answer; a starting Prometheus's `503 Service Unavailable` is an HTTPError (retried)."""
    reply = httpx.get(url, timeout=5, **kwargs)
    reply.raise_for_status()
    return reply.json()


def _query(prometheus: str, expr: str) -> list[dict[str, Any]]:
    reply = _get(f"{prometheus}/api/v1/query", params={"query": expr})
    assert reply["status"] == "success", (expr, reply)
    return list(reply["data"]["result"])


def _firing(prometheus: str, expected: str) -> list[dict[str, Any]]:
    """The firing alerts, once `expected` is among them."""
    alerts = _get(f"{prometheus}/api/v1/alerts")["data"]["alerts"]
    firing = [a for a in alerts if a["state"] == "firing"]
    return firing if any(a["labels"]["alertname"] == expected for a in firing) else []


def _until(what: str, probe: Any, budget: float = 30.0) -> Any:
    deadline = time.monotonic() + budget
    while True:
        try:
            found = probe()
        except httpx.HTTPError:
            found = None
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {budget:g} s: {what}")
        time.sleep(0.2)


@pytest.fixture
def textfile(tmp_path: Path) -> Path:
    """The textfile of a simulated run with a slow link and nccl-tests configured (all stages)."""
    scenario = tmp_path / "slow.toml"
    scenario.write_text(
        'base = "link2-slow"\n[inventory]\nnccl_tests = { command = "all_gather_perf", max_buffer_gib = 1 }\n'
    )
    prom = tmp_path / "textfile" / "gb10check.prom"
    env = {k: v for k, v in os.environ.items() if k != "GB10_CLUSTER"}
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("gb10check")), "all", f"--sim={scenario}", "--prometheus", str(prom),
         "--reports-dir", str(tmp_path / "reports"), "-p", "no:cacheprovider", "-q"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 1 and prom.is_file(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return prom


@pytest.fixture
def prometheus(tmp_path: Path, textfile: Path) -> Iterator[str]:
    exporter_port, prometheus_port = _free_port(), _free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": [str(RULES)],
                "scrape_configs": [
                    {"job_name": "node", "static_configs": [{"targets": [f"127.0.0.1:{exporter_port}"]}]}
                ],
            }
        )
    )
    servers = [
        _serve([NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{exporter_port}", "--collector.disable-defaults",
                "--collector.textfile", f"--collector.textfile.directory={textfile.parent}"],
               tmp_path / "node_exporter.log"),
        _serve([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{prometheus_port}"], tmp_path / "prometheus.log"),
    ]  # fmt: skip
    try:
        url = f"http://127.0.0.1:{prometheus_port}"
        _until("Prometheus is ready", lambda: httpx.get(f"{url}/-/ready", timeout=5).status_code == 200, budget=60)
        yield url
    finally:
        for server in servers:
            server.terminate()
        for server in servers:
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=5)


@pytest.mark.skipif(os.geteuid() != 0, reason="the simulated cluster needs root")
@pytest.mark.sim
@needs_prometheus
def test_prometheus_scrapes_the_run_fires_its_alerts_and_answers_the_dashboard(prometheus):
    _until("Prometheus scraped the textfile", lambda: _query(prometheus, "gb10check_run_timestamp_seconds"))
    # the rules load and the slow link's alerts fire (for: 0m), naming what failed
    firing = _until("GB10RdmaBandwidthLow fires", lambda: _firing(prometheus, "GB10RdmaBandwidthLow"))
    by_name: dict[str, list[dict[str, str]]] = {}
    for alert in firing:
        by_name.setdefault(alert["labels"]["alertname"], []).append(alert["labels"])
    slow = by_name.get("GB10RdmaBandwidthLow", [])
    assert {(labels["node"], labels["peer"], labels["rail"]) for labels in slow} == {(R0, R1, SLOW_LINK)}, firing
    failing = {labels["check"] for labels in by_name.get("GB10CheckFailing", [])}
    assert f"test_rdma_bandwidth[{R0}-{R1}-{SLOW_LINK}]" in failing, failing
    assert f"test_rdma_bandwidth_all_rails_at_once[{R0}-{R1}]" in failing, failing
    assert not {"GB10NodeUnreachable", "GB10CheckStale"} & set(by_name), by_name
    groups = _get(f"{prometheus}/api/v1/rules")["data"]["groups"]
    assert [r["health"] for g in groups for r in g["rules"]] == ["ok"] * len(_rule_expressions())

    # every panel of the dashboard shows something for this run ($instance: all of them)
    for panel in _dashboard()["panels"]:
        results = [_query(prometheus, t["expr"].replace("$instance", ".*")) for t in panel["targets"]]
        assert any(results), f"panel {panel['title']!r} shows nothing: {[t['expr'] for t in panel['targets']]}"
    rows = _query(prometheus, "gb10check_check_passed == 0")
    assert {r["metric"]["hint"] for r in rows} >= {"bw-low"}
    nccl = _query(prometheus, 'gb10check_figure{figure="nccl_busbw_gbs"}')
    assert nccl and float(nccl[0]["value"][1]) > 0
