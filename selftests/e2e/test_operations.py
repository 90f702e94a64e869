"""The suite run unattended for months: the nightly command across changing scenarios with its
history (regression, trend failure, recovery), the Prometheus textfile, report.html in a real
browser, and the systemd units that schedule it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from selftests.e2e.runner import PROJECT

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the simulated cluster needs root")
SLOW = "test_rdma_bandwidth[thinkstationpgx-30-thinkstationpgx-32-enP2p1s0f0np0]"
TREND = "test_figure_trend[test_rdma_bandwidth-thinkstationpgx-30-thinkstationpgx-32-enP2p1s0f0np0-bandwidth_gbps]"


def _nightly(
    tmp: Path, scenario: str, run: str, select: str = "bandwidth", min_runs: int | None = 1
) -> subprocess.CompletedProcess[str]:
    """`gb10check nightly` as a timer runs it, against a scenario that trends with `min_runs` earlier runs
    (None: the inventory's own [history])."""
    body = f'base = "{scenario}"\n' + (f"[inventory.history]\nmin_runs = {min_runs}\n" if min_runs else "")
    path = tmp / f"{run}.toml"
    path.write_text(body)
    command = Path(sys.executable).with_name("gb10check")
    env = {k: v for k, v in os.environ.items() if k != "GB10_CLUSTER"}
    return subprocess.run(
        [str(command), "nightly", f"--sim={path}", "-k", select, "--reports-dir", str(tmp / run),
         "--history", str(tmp / "history"), "--prometheus", str(tmp / "gb10check.prom"), "-p", "no:cacheprovider"],
        cwd=tmp, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _gauges(path: Path) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    families = text_string_to_metric_families(path.read_text())
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}


@needs_root
@pytest.mark.sim
def test_three_nights_show_the_regression_the_trend_and_the_recovery(tmp_path):
    first = _nightly(tmp_path, "healthy", "night1")
    assert first.returncode == 0, first.stdout + first.stderr
    second = _nightly(tmp_path, "link2-slow", "night2")
    assert second.returncode == 1, second.stdout
    third = _nightly(tmp_path, "healthy", "night3")
    assert third.returncode == 0, third.stdout

    # night 2: the slow link is a regression of its check, and its figure fails its trend
    out = second.stdout
    assert f"REGRESSION tests_network/test_bandwidth.py::{SLOW}: passed -> failed" in out
    trend = rf"^FAILED {re.escape(TREND)}( and \d+ more checks? alike)?: \[figure-regressed\] "  # the trends of a pair
    assert re.search(trend, out, re.MULTILINE), out
    md = (tmp_path / "night2" / "summary.md").read_text()
    changes = md.split("## Since the previous run", 1)[1].split("##", 1)[0]
    assert f"**regression**: `tests_network/test_bandwidth.py::{SLOW}` passed -> failed" in changes
    assert md.index("## Since the previous run") < md.index("## Checks")  # listed first
    summary = json.loads((tmp_path / "night2" / "summary.json").read_text())
    trend = next(r for r in summary["checks"] if r["check"] == TREND)
    assert trend["verdict"] == "failed" and trend["hints"] == ["figure-regressed"]
    assert (
        "40 today, 63% worse than the median 109 of the last 1 runs; expected at most 35% worse (its runs spread "
        "±0.0%, 3 spreads allow 0%, within the bandwidth floor 35% and ceiling 45%)"
    ) in trend["message"]
    junit = (tmp_path / "night2" / "junit.xml").read_text()
    assert f'name="{TREND}"' in junit and "[figure-regressed]" in junit

    # night 3: the recovery, listed first too; the trend is judged against the median of 109 and 40
    assert f"RECOVERY   tests_network/test_bandwidth.py::{SLOW}: failed -> passed" in third.stdout
    md3 = (tmp_path / "night3" / "summary.md").read_text()
    assert f"- recovery: `tests_network/test_bandwidth.py::{SLOW}` failed -> passed" in md3

    # the history holds the three runs; the .prom file the last night's values
    assert len(list((tmp_path / "history").glob("run-*.json"))) == 3
    gauges = _gauges(tmp_path / "gb10check.prom")
    ends = (("node", "thinkstationpgx-30"), ("peer", "thinkstationpgx-32"), ("rail", "enP2p1s0f0np0"))
    slow = (("check", SLOW), ("figure", "bandwidth_gbps"), *ends)
    assert gauges[("gb10check_figure", slow)] == 109.0
    assert gauges[("gb10check_check_passed", (("check", SLOW), ("hint", ""), ("node", "thinkstationpgx-30")))] == 1.0
    assert gauges[("gb10check_recoveries", ())] == 2.0 and gauges[("gb10check_regressions", ())] == 0.0
    assert gauges[("gb10check_node_up", (("node", "thinkstationpgx-32"),))] == 1.0

    # report.html of night 3 plots the slow link's figure over the three nights: 109, 40, 109
    html = (tmp_path / "night3" / "report.html").read_text()
    plot = re.search(
        r'<figure class="plot \w+" data-figure="test_rdma_bandwidth\[thinkstationpgx-30-thinkstationpgx-32-'
        r'enP2p1s0f0np0\]::bandwidth_gbps" data-points="3">',
        html,
    )
    assert plot, "no plot of the slow link's bandwidth"
    svg = html[plot.end() : html.index("</figure>", plot.end())]
    assert re.findall(r'data-value="([\d.]+)"', svg) == ["109", "40", "109"]  # the three nights
    assert ">Gb/s</text>" in svg and re.search(r">median [\d.]+ Gb/s<", svg), svg  # its unit, the median drawn
    # self-contained: nothing to fetch (no script, stylesheet or image from elsewhere)
    assert not re.search(r'(src|href)="(https?:)?//', html) and not re.search(r"<script[^>]*\ssrc=", html)


@needs_root
@pytest.mark.sim
def test_eight_nights_only_the_slow_ones_fail_and_healthy_noise_never_does(tmp_path):
    """The issue's nights with the inventory's own [history] (min_runs 3): healthy x3, link2-slow, healthy,
    decode-slow, healthy, healthy. Each slow night's figures regress on that night; the healthy ones pass,
    however the busy machine moves their decode figures (the unit tests judge many more recorded nights)."""
    nights = ["healthy", "healthy", "healthy", "link2-slow", "healthy", "decode-slow", "healthy", "healthy"]
    decode = "test_figure_trend[test_decode_speed-thinkstationpgx-30-{}]"
    runs = [
        _nightly(tmp_path, scenario, f"n{i}", "test_rdma_bandwidth or test_decode_speed", min_runs=None)
        for i, scenario in enumerate(nights)
    ]
    regressed = []
    for i in range(len(nights)):
        rows = json.loads((tmp_path / f"n{i}" / "summary.json").read_text())["checks"]
        regressed.append({r["check"] for r in rows if r["hints"] == ["figure-regressed"] and r["verdict"] == "failed"})
    summary = "\n".join(
        f"{nights[i]}: rc {run.returncode}; " + "; ".join(x for x in run.stdout.splitlines() if x.startswith("FAILED"))
        for i, run in enumerate(runs)
    )
    assert [run.returncode for run in runs] == [0, 0, 0, 1, 0, 1, 0, 0], summary
    assert TREND in regressed[3] and all("enP2p1s0f0np0" in check for check in regressed[3]), summary
    assert regressed[5] == {decode.format("decode_tokens_per_s"), decode.format("tpot_s")}, summary
    assert not any(regressed[i] for i in (0, 1, 2, 4, 6, 7)), summary
    line = next(x for x in runs[5].stdout.splitlines() if "[figure-regressed] decode_tokens_per_s" in x)
    assert re.search(
        r"worse than the median [\d.]+ of the last 5 runs; expected at most \d+% worse \(its runs spread "
        r"±[\d.]+%, 3 spreads allow \d+%, within the tokens_per_s floor 40% and ceiling 60%\)",
        line,
    ), line


@needs_root
@pytest.mark.sim
def test_a_corrupt_or_foreign_file_in_the_history_is_skipped_not_deleted(tmp_path):
    history = tmp_path / "history"
    history.mkdir()
    (history / "run-20260101T000000Z-1.json").write_text("{ not json")
    (history / "notes.txt").write_text("the operator's own file")
    (history / "run-20260102T000000Z-2.json").write_text(json.dumps({"schema_version": 99, "checks": []}))
    proc = _nightly(tmp_path, "healthy", "night")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        "gb10check: history: " in proc.stdout and "notes.txt: not a run file of gb10check (left alone)" in proc.stdout
    )
    assert "run-20260101T000000Z-1.json: skipped, cannot read it as a run" in proc.stdout
    assert "found 99" in proc.stdout
    assert {p.name for p in history.iterdir()} >= {"notes.txt", "run-20260101T000000Z-1.json"}


def test_the_history_keeps_the_newest_runs_only(tmp_path):
    from gb10check.reporting import history
    from gb10check.reporting.schema import SCHEMA_VERSION

    run = {"schema_version": SCHEMA_VERSION, "started": "2026-01-01T00:00:00+0000", "checks": []}
    for i in range(5):
        (tmp_path / f"run-2026010{i + 1}T000000Z-{i}.json").write_text(json.dumps(run))
    (tmp_path / "mine.json").write_text("{}")
    (tmp_path / "run-20250101T000000Z-9.json").write_text("{}")  # the oldest name, but not a run it can read
    history.keep(tmp_path, run, retain=3)
    kept = sorted(p.name for p in tmp_path.glob("run-*.json"))
    assert len(kept) == 4 and kept[1] == "run-20260104T000000Z-3.json", kept  # the newest 3 runs, and:
    assert (tmp_path / "mine.json").exists()  # never a file it did not write
    assert (tmp_path / "run-20250101T000000Z-9.json").exists()  # nor one it cannot read as a run


# -- the JSON Schema of summary.json ----------------------------------------------------------------
def test_summary_schema_is_valid_and_strict():
    import jsonschema

    schema = json.loads((PROJECT / "gb10check" / "reporting" / "summary.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"schema_version": 3}, schema)


# -- report.html in a real browser ----------------------------------------------------------------------
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


@pytest.fixture
def browser():
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.skip("Debian's chromium and chromium-driver are not installed (bin/setup installs them as root)")
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1400,2400"):  # fmt: skip
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


RED, GREEN = "rgb(179, 38, 30)", "rgb(30, 123, 52)"  # the page's --red and --green


def _viewport(browser, width: int, height: int, mobile: bool = False) -> None:
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)


def _top(browser, css: str) -> float:
    return float(browser.execute_script(f"return document.querySelector('{css}').getBoundingClientRect().top"))


@needs_root
@pytest.mark.sim
def test_report_html_in_a_real_browser(tmp_path, browser):
    """A nightly's regression as the operator sees it at a laptop's width and a phone's: the stage header,
    what changed and what failed above the rest, the picture's nodes and links in their colours, a click on
    the slow link showing its failure, the plots, nothing fetched, and no sideways scrolling on a phone."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    for run in ("night1", "night2"):
        proc = _nightly(tmp_path, "healthy" if run == "night1" else "link2-slow", run)
        assert proc.returncode in (0, 1), proc.stdout
    page = tmp_path / "night2" / "report.html"
    _viewport(browser, 1366, 768)
    browser.get(page.as_uri())
    assert browser.get_log("browser") == []  # no console error, no failed fetch
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0  # nothing fetched
    summary = json.loads((tmp_path / "night2" / "summary.json").read_text())
    bad = [r for r in summary["checks"] if r["verdict"] == "failed"]

    # the header: a verdict per stage; the preflight and service stages were not selected (-k bandwidth)
    stages = {e.get_attribute("data-stage"): e for e in browser.find_elements(By.CSS_SELECTOR, "#stages li")}
    assert [stages[s].get_attribute("data-state") for s in ("preflight", "network", "service", "trends")] == [
        "none", "failed", "none", "failed"]  # fmt: skip
    assert "not run: not selected (-k 'bandwidth')" in stages["preflight"].text
    assert browser.find_element(By.ID, "headline").text.endswith(
        f"{len(bad)} of {len(summary['checks'])} checks failed"
    )

    # what changed, then what failed with its fix, above the picture and the grids
    assert _top(browser, "#changes") < _top(browser, "#failures") < _top(browser, "#cluster") < _top(browser, "#checks")
    kinds = [e.get_attribute("class") for e in browser.find_elements(By.CSS_SELECTOR, "#changes li")]
    assert kinds[0] == "regression" and "trend" in kinds  # the trend failures beside the regressions
    hints = [e.get_attribute("data-hint") for e in browser.find_elements(By.CSS_SELECTOR, "#failures article")]
    assert hints == ["bw-low", "figure-regressed"], hints  # the measurement before its history's verdict
    listed = browser.find_elements(By.CSS_SELECTOR, "#failures [data-test]")
    assert sorted(e.get_attribute("data-test") for e in listed) == sorted(r["test"] for r in bad)
    failing = browser.find_element(By.CSS_SELECTOR, f'li.failure[data-test$="{SLOW}"]')
    hint = failing.find_element(By.CSS_SELECTOR, "pre.hint-text")
    assert not hint.is_displayed()
    failing.find_element(By.TAG_NAME, "summary").click()
    assert hint.is_displayed() and "[bw-low] RDMA bandwidth below the rail's minimum" in hint.text
    assert browser.find_element(By.ID, "fix-bw-low").is_displayed()  # the hint's cause, fix and commands

    # the picture: two nodes, a line per rail; the slow rail's middle red with its 40 Gb/s, the other green
    boxes = browser.find_elements(By.CSS_SELECTOR, "svg#picture a.box")
    assert sorted(b.get_attribute("data-node") for b in boxes) == ["thinkstationpgx-30", "thinkstationpgx-32"]
    links = {
        link.find_element(By.TAG_NAME, "title").get_attribute("textContent").split(":")[0]: link
        for link in browser.find_elements(By.CSS_SELECTOR, "svg#picture a.link")
    }
    slow, fast = (
        links[f"thinkstationpgx-30 and thinkstationpgx-32 over rail {r}"] for r in ("enP2p1s0f0np0", "enp1s0f0np0")
    )

    def middle(link):
        segment = link.find_elements(By.CSS_SELECTOR, "line.seg")[1]
        return browser.execute_script("return getComputedStyle(arguments[0]).stroke", segment)

    assert (middle(slow), middle(fast)) == (RED, GREEN)
    assert "40 Gb/s" in slow.text and "109 Gb/s" in fast.text
    panel = browser.find_element(By.ID, slow.get_attribute("data-part"))
    assert not panel.is_displayed()
    # a click on the link (its middle: a line has no height, so the mouse is moved there) shows its failures
    ActionChains(browser).move_to_element(slow.find_elements(By.CSS_SELECTOR, "line.seg")[1]).click().perform()
    assert panel.is_displayed() and "RDMA write bandwidth over the rail, alone on it" in panel.text, panel.text

    plots = browser.find_elements(By.CSS_SELECTOR, "#plots figure svg")
    assert plots and all(p.size["width"] > 100 and p.size["height"] > 100 for p in plots)
    assert all(p.find_elements(By.CSS_SELECTOR, "polyline") for p in plots)
    shot = tmp_path / "report.png"
    browser.save_screenshot(str(shot))
    assert len(set(_png_pixels(shot.read_bytes()))) > 50  # not a blank page

    # a phone: the page never scrolls sideways (the picture and the tables scroll in their own box)
    _viewport(browser, 390, 844, mobile=True)
    browser.get(page.as_uri())
    width = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], width
    assert _top(browser, "#failures") < _top(browser, "#cluster")


@needs_root
@pytest.mark.sim
def test_report_html_of_a_switch_with_a_node_down_in_a_real_browser(tmp_path, browser):
    """switch4-node-down: the node that is off leads the failures (node-unreachable), its box and its lines to
    the switch are red, the others' boxes green; a click on its box lists its failures by what they check."""
    from selenium.webdriver.common.by import By

    from selftests.e2e.runner import run_suite

    run = run_suite(tmp_path, "--sim", "switch4-node-down", "-m", "preflight or network", "-k", "not bandwidth")
    assert run.rc == 1, run.out
    _viewport(browser, 1366, 768)
    browser.get((tmp_path / "reports" / "report.html").as_uri())
    assert browser.get_log("browser") == []
    hints = [e.get_attribute("data-hint") for e in browser.find_elements(By.CSS_SELECTOR, "#failures article")]
    assert hints[0] == "node-unreachable", hints
    stages = {e.get_attribute("data-stage"): e.get_attribute("data-state")
              for e in browser.find_elements(By.CSS_SELECTOR, "#stages li")}  # fmt: skip
    assert stages == {"preflight": "failed", "network": "failed", "service": "none", "trends": "none"}, stages
    down = "thinkstationpgx-32"
    boxes = {b.get_attribute("data-node"): b for b in browser.find_elements(By.CSS_SELECTOR, "svg#picture a.box")}
    assert (
        len(boxes) == 4 and browser.find_element(By.CSS_SELECTOR, "#picture").get_attribute("data-topology") == "switch"
    )

    def stroke(element):
        return browser.execute_script("return getComputedStyle(arguments[0]).stroke", element)

    assert {n: stroke(b.find_element(By.TAG_NAME, "rect")) for n, b in boxes.items()} == {
        n: RED if n == down else GREEN for n in boxes
    }
    to_switch = [
        link for link in browser.find_elements(By.CSS_SELECTOR, "svg#picture a.link")
        if re.match(f"{down} .* to the switch", link.find_element(By.TAG_NAME, "title").get_attribute("textContent"))
    ]  # fmt: skip
    assert len(to_switch) == 2 and all(
        stroke(link.find_element(By.CSS_SELECTOR, "line.seg")) == RED for link in to_switch
    )
    boxes[down].click()
    panel = browser.find_element(By.ID, boxes[down].get_attribute("data-part"))
    assert panel.is_displayed() and "The GPU visible inside a container" in panel.text and "more" in panel.text, (
        panel.text
    )


def _png_pixels(png: bytes) -> bytes:
    """The image data of a PNG (its IDAT chunks, inflated): a blank page has a handful of byte values."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    data, at = b"", 8
    while at < len(png):
        length = int.from_bytes(png[at : at + 4], "big")
        if png[at + 4 : at + 8] == b"IDAT":
            data += png[at + 8 : at + 8 + length]
        at += 12 + length
    return zlib.decompress(data)


# -- scheduling ---------------------------------------------------------------------------------------
def test_the_systemd_units_verify(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (bin/setup installs systemd as root)")
    units = sorted((PROJECT / "contrib" / "systemd").iterdir())
    assert {u.name for u in units} == {"gb10check-nightly.service", "gb10check-nightly.timer",
                                       "gb10check-after-boot.service"}  # fmt: skip
    command = Path(sys.executable).with_name("gb10check")
    for unit in units:  # as installed: the clone in place of /opt/gb10check, a user this machine has
        text = unit.read_text().replace("/opt/gb10check/.venv/bin/gb10check", str(command))
        (tmp_path / unit.name).write_text(text.replace("User=lenovo", "User=root"))
    proc = subprocess.run(["systemd-analyze", "verify", *(str(tmp_path / u.name) for u in units)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0 and proc.stderr.strip() == "" and proc.stdout.strip() == "", proc.stderr
    nightly = (PROJECT / "contrib" / "systemd" / "gb10check-nightly.service").read_text()
    assert "--history=" in nightly and "--prometheus=" in nightly and "SuccessExitStatus=1" in nightly
    boot = (PROJECT / "contrib" / "systemd" / "gb10check-after-boot.service").read_text()
    assert "smoke --after-boot" in boot and "After=network-online.target docker.service" in boot


# -- the post-reboot smoke ----------------------------------------------------------------------------
@needs_root
@pytest.mark.sim
def test_after_boot_waits_for_a_late_node_and_gives_up_on_a_dead_one_within_their_bounds(tmp_path):
    from selftests.e2e.bad_day import timed

    late = timed(tmp_path / "late", "--sim", "node-boots-late", "-m", "smoke", "--after-boot")
    assert late.run.rc == 0, late.run.out
    # it waited for rank 1 (tried again, backing off), then went on (how long: bench_sim's figures)
    assert re.search(r"after boot: thinkstationpgx-32 answers SSH after \d+ s", late.run.out), late.run.out
    attempts = late.run.summary["transports"]["thinkstationpgx-32"]["connect_attempts"]
    assert attempts > 1, f"one connect to a node that boots 8 s late: {late.run.out}"
    dead = timed(tmp_path / "dead", "--sim", "node-never-boots", "-m", "smoke", "--after-boot")
    assert dead.run.rc == 1
    message = dead.run.junit["tests_preflight/test_driver.py::test_driver_versions_match[thinkstationpgx-32]"][
        "message"
    ]
    # it gave up when its budget was spent (a connect under way then may add its own 2 s timeout), and the
    # session then asked it no more (the first failure is the answer for the rest of the run)
    waited = re.search(r"still unreachable after waiting (\d+) s for it to boot \(ssh.boot_timeout 3 s\)", message)
    assert waited and 3 <= int(waited[1]) <= 3 + 2 + 2, message
    assert dead.seconds < 120  # a hang guard only
