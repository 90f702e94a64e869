"""The acceptance suite against every builtin scenario: exactly which checks fail, with which hints."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

from gb10check.judging.dark_ports import OWNER_TEST
from selftests.e2e.runner import PROJECT, run_scenario, run_suite, sim_leftovers
from sim.scenario import builtin_names, load_scenario

pytestmark = pytest.mark.sim
SCHEMA = json.loads((PROJECT / "gb10check" / "reporting" / "summary.schema.json").read_text())

DRV = "tests_preflight/test_driver.py::test_driver_versions_match"
INSTALLED = "tests_preflight/test_driver.py::test_installed_module_is_the_loaded_one"
GPU = "tests_preflight/test_container_gpu.py::test_gpu_visible_in_container"
LINK = "tests_network/test_roce_links.py::test_roce_link_up"
MODEL = "tests_service/test_models.py::test_served_model[thinkstationpgx-30]"
SSH = "tests_preflight/test_ssh_mesh.py::test_passwordless_ssh_over_qsfp"
LINT = "tests_preflight/test_launch_rules.py::test_launch_rule"
P = "tests_preflight/"
R0, R1 = "thinkstationpgx-30", "thinkstationpgx-32"


# a marker that selects one folder (test_markers_select_their_folder): its ids are the full run's in that folder
FOLDERS = {"preflight": "tests_preflight/", "network": "tests_network/", "service": "tests_service/"}


def reference_of(scenario) -> str:
    """The builtin healthy scenario of the same topology and size: the test ids a run must have."""
    shape = (scenario.topology, len(scenario.nodes))
    for name in builtin_names():
        if name == "healthy" or name.startswith("healthy-"):
            healthy = load_scenario(name)
            if (healthy.topology, len(healthy.nodes)) == shape:
                return name
    raise AssertionError(f"no builtin healthy scenario is a {shape[0]} of {shape[1]} nodes")


def run_timeout(scenario) -> float:
    """The bound on one run: a node more is more checks and more bandwidth rounds."""
    return 120 + 30 * max(0, len(scenario.nodes) - 2)


@pytest.fixture(scope="module")
def healthy_ids(tmp_path_factory):
    """Every test id of a healthy run of a shape (the reference scenario), per marker (None: all): a
    fault run must have them all. A healthy scenario's own run is its reference (no second run)."""
    cache: dict[tuple[str, str | None], set[str]] = {}

    def ids(reference: str, marker: str | None, own=None) -> set[str]:
        whole = None if marker in FOLDERS else marker
        if (reference, whole) not in cache:
            if own is not None and whole == marker:
                run = own
            else:
                run = run_suite(
                    tmp_path_factory.mktemp(f"{reference}-{whole}"),
                    "--sim",
                    reference,
                    *_marker(whole),
                    timeout=run_timeout(load_scenario(reference)),
                )
                assert run.failed() == {} and run.rc == 0, run.out
            cache[(reference, whole)] = set(run.junit)
        found = cache[(reference, whole)]
        return {tid for tid in found if tid.startswith(FOLDERS[marker])} if marker in FOLDERS else found

    return ids


def _marker(marker: str | None) -> tuple[str, ...]:
    return ("-m", marker) if marker else ()


PLACEHOLDER = re.compile(r"\{(rank\d+)\}")


def resolved(scenario, tid: str) -> str:
    """A test id of the scenario's [expect] with each {rank<k>} the node of rank k."""
    names = scenario.placeholders()

    def name(m: re.Match[str]) -> str:
        assert m[1] in names, f"{tid}: the scenario has no {m[1]} ({', '.join(sorted(names))})"
        return names[m[1]]

    return PLACEHOLDER.sub(name, tid)


def expected_failures(expect, ids: set[str], scenario=None) -> dict[str, set[str]]:
    """The scenario's [expect.fails] ({rank<k>} resolved), its `*` patterns resolved against the run's test ids
    but those its [expect.skips] names (a node that is off: its checks fail, those that follow from it skip)."""
    fails = {resolved(scenario, tid) if scenario else tid: hints for tid, hints in expect.fails.items()}
    skips = {resolved(scenario, tid) if scenario else tid for tid in expect.skips}
    exact = {tid: set(h) for tid, h in fails.items() if "*" not in tid}
    out = dict(exact)
    for pattern, hints in fails.items():
        if "*" in pattern:
            glob = re.compile(".*".join(map(re.escape, pattern.split("*"))))  # only `*` is special: ids have [ ]
            matched = {tid for tid in ids if glob.fullmatch(tid) and tid not in exact and tid not in skips}
            assert matched, f"the pattern {pattern!r} matches no test"
            out |= {tid: set(hints) for tid in matched}
    return out


OWNER = OWNER_TEST.split("[", 1)[0]  # the interface check: the one owner of a dark port


def followers(failed: dict[str, set[str]]) -> list[str]:
    """Issue 26's rule, one fault one verdict: once a dark port's owner failed in a run, a check that fails
    with `roce-link-down` besides the owners is a follower that failed again instead of skipping."""
    if not any(t.startswith(OWNER) for t in failed):
        return []
    return sorted(t for t, hints in failed.items() if "roce-link-down" in hints and not t.startswith(OWNER))


def _difference(found: dict[str, set[str]], expected: dict[str, set[str]]) -> str:
    """What a scenario's run failed beyond or short of its [expect], one line per test id, first."""
    lines = [f"failed, not expected: {t} {sorted(found[t])}" for t in sorted(set(found) - set(expected))]
    lines += [f"expected, did not fail: {t} {sorted(expected[t])}" for t in sorted(set(expected) - set(found))]
    lines += [
        f"other hints: {t} {sorted(found[t])}, expected {sorted(expected[t])}"
        for t in sorted(set(found) & set(expected))
        if found[t] != expected[t]
    ]
    return "\n".join(lines) + "\n"


def _advisories_as_expected(scenario, expect, ids: set[str], run) -> None:
    """Exactly the checks the scenario names record an advisory (what costs speed), each saying what its
    phrase says; the advice it names is there (other checks may advise too: advice is never a verdict)."""
    rows = {r["test"]: r.get("advisories", []) for r in run.summary["checks"]}
    for kind, wanted in (("advisory", expect.advisories), ("advice", expect.advice)):
        expected = {tid: [phrase] for tid, phrase in wanted.items()}
        resolved = expected_failures(type(expect)(fails=expected), ids, scenario)
        found = {tid for tid, items in rows.items() if any(a["kind"] == kind for a in items)}
        if kind == "advisory":
            assert found == set(resolved), f"advisories: found {sorted(found)}, expected {sorted(resolved)}\n{run.out}"
        for tid, (phrase,) in ((t, tuple(p)) for t, p in resolved.items()):
            said = [f"{a['found']}: {a['why']}" for a in rows.get(tid, []) if a["kind"] == kind]
            assert any(phrase in s for s in said), (tid, kind, phrase, said)


@pytest.mark.parametrize("scenario", builtin_names())
def test_scenario_fails_exactly_what_it_expects(scenario, tmp_path, healthy_ids):
    """Each builtin scenario states in its file what it breaks and what must fail ([expect]), its
    nodes by rank ({rank<k>}); its run has every test id of a healthy run of its shape."""
    loaded = load_scenario(scenario)
    expect = loaded.expect
    assert expect is not None, f"sim/scenarios/{scenario}.toml has no [expect] table"
    run = run_suite(tmp_path, "--sim", scenario, *_marker(expect.marker), *expect.args, timeout=run_timeout(loaded))
    reference = reference_of(loaded)
    ids = healthy_ids(reference, expect.marker, own=run if reference == scenario else None)
    expected = expected_failures(expect, ids, loaded)
    assert set(run.junit) == ids, run.out
    assert followers(run.failed()) == [], run.out  # (before [expect]: a scenario may not expect a follower)
    assert run.failed() == expected, _difference(run.failed(), expected) + run.out
    assert run.rc == (1 if expected else 0), run.out
    for tid in expected:
        message = run.junit[tid]["message"]
        for hint_id in expected[tid]:
            assert f"[{hint_id}]" in message, f"{tid}: the JUnit failure message lacks [{hint_id}]: {message}"
    skipped = run.skipped()
    skips = {resolved(loaded, tid): resolved(loaded, reason) for tid, reason in expect.skips.items()}
    for tid, reason in skips.items():
        assert reason in skipped.get(tid, ""), (tid, skipped.get(tid))
    if skips:
        assert set(skipped) == set(skips), skipped
    _advisories_as_expected(loaded, expect, ids, run)
    assert sim_leftovers(run.pid) == []
    jsonschema.validate(run.summary, SCHEMA)  # every scenario's summary.json has the documented shape
    # the terminal run ends with the troubleshooting section for what failed
    if expected:
        tail = run.section("troubleshooting")
        for hint_id in set().union(*expected.values()):
            assert f"[{hint_id}]" in tail


@pytest.mark.parametrize("name", ["healthy-ring4", "healthy-switch4"])
def test_a_healthy_cluster_checks_every_node_rail_end_and_pair(name, healthy_ids):
    """Not two fixed hosts: every node, every end of every rail, and every two nodes that talk over
    a rail (a switch: any two on each rail; a ring: each cable's neighbours), each pair once."""
    scenario = load_scenario(name)
    ids = healthy_ids(name, None)
    rank = {n: node.rank for n, node in scenario.nodes.items()}
    assert {f"{DRV}[{n}]" for n in scenario.nodes} <= ids
    bandwidth, ends = set(), set()
    for rail in scenario.model.rails:
        members = sorted(rail.members, key=lambda e: rank[e.node])
        ends |= {f"{LINK}[{e.node}-{e.netdev}]" for e in members}
        bandwidth |= {
            f"tests_network/test_bandwidth.py::test_rdma_bandwidth[{a.node}-{b.node}-{rail.name}]"
            for i, a in enumerate(members)
            for b in members[i + 1 :]
        }
    assert ends <= ids
    assert {t for t in ids if "::test_rdma_bandwidth[" in t} == bandwidth
    n = len(scenario.nodes)
    assert len(bandwidth) == (2 * n if scenario.topology == "ring" else 2 * n * (n - 1) // 2)


def test_driver_mismatch_message_gives_both_versions(tmp_path):
    run = run_suite(tmp_path, "--sim", "driver-mismatch", "-m", "preflight")
    message = run.junit[f"{DRV}[{R1}]"]["message"]
    assert "on thinkstationpgx-32" in message
    assert "kernel module 580.159.03, userspace NVML library 580.173" in message
    assert "reboot this node" in message


def test_markers_select_their_folder(tmp_path):
    for marker, prefix in (
        ("preflight", "tests_preflight/"),
        ("network", "tests_network/"),
        ("service", "tests_service/"),
    ):
        run = run_suite(tmp_path / marker, "--sim", "-m", marker)
        assert run.rc == 0, run.out
        assert run.junit and all(tid.startswith(prefix) for tid in run.junit), run.junit.keys()


def test_summary_records_verdicts_measurements_and_hints(tmp_path):
    run = run_suite(tmp_path, "--sim", "wrong-model")
    assert run.summary is not None
    rows = {r["test"]: r for r in run.summary["checks"]}
    model = rows[MODEL]
    assert (model["verdict"], model["node"], model["hints"]) == ("failed", R0, ["model-not-registered"])
    served = next(m for m in model["evidence"] if m["what"] == "served model name")
    assert (served["expected"], served["found"], served["ok"]) == ("qwen3.8-flash-next", "qwen3-next", False)
    driver = rows[f"{DRV}[{R0}]"]
    assert (driver["check"], driver["verdict"]) == (f"test_driver_versions_match[{R0}]", "passed")
    assert [(m["found"], m["ok"]) for m in driver["evidence"]] == [
        ("580.173.02", True),
        ("kernel module 580.173.02, userspace 580.173.02", True),
    ]
    md = (tmp_path / "reports" / "summary.md").read_text()
    assert f"| test_served_model[{R0}] | {R0} | failed | " in md and "[model-not-registered]" in md


def test_one_snapshot_round_trip_per_node(tmp_path):
    run = run_suite(tmp_path, "--sim")
    # the snapshot, the one `docker run` of the container-GPU check, the one docker command that reads
    # NCCL's config files in the image, the one that reads its NCCL library, the GPU's state read while the
    # decode runs, and the bandwidth runs (each link alone, then both at once: 4 clients on rank 0, 4 server
    # starts and 4 stops on rank 1)
    transports = run.summary["transports"]
    assert {node: (t["connections"], t["commands"]) for node, t in transports.items()} == {
        R0: (1, 5 + 4),
        R1: (1, 5 + 8),
    }
    # each node's snapshot also logs in to the other over each of the two rails; rank 0 (the lower rank of
    # the pair) pings rank 1 over each, and rank 1 (a follower) pings the master address on the control plane
    assert transports[R0]["snapshot_probes"] == transports[R1]["snapshot_probes"] + 2 - 1 > 20


def test_sim_scenario_file_with_verbatim_stub_output(tmp_path):
    run = run_scenario(
        tmp_path,
        'description = "rank 1 nvidia-smi prints garbage"\nbase = "healthy"\n'
        '[[nodes.thinkstationpgx-32.stubs]]\ntool = "nvidia-smi"\nmatch = "--query-gpu"\n'
        'stdout = "Segmentation fault\\n"\nrc = 139\n',
        "-m",
        "preflight",
    )
    assert run.failed() == {f"{DRV}[{R1}]": {"unexpected-output"}}, run.out
    message = run.junit[f"{DRV}[{R1}]"]["message"]
    assert "cannot parse nvidia-smi" in message and "Segmentation fault" in message and "exit status 139" in message


def test_a_missing_tool_fails_every_check_that_needs_it(tmp_path):
    """Docker absent on rank 1: each check that reads Docker there fails with tool-missing (never a pass)."""
    run = run_scenario(
        tmp_path,
        'base = "healthy"\n[[nodes.thinkstationpgx-32.stubs]]\ntool = "docker"\n'
        'stderr = "sh: 1: docker: not found\\n"\nrc = 127\n',
        "-m",
        "preflight",
    )
    needs_docker = {
        f"{GPU}[{R1}]",
        f"{P}test_docker.py::test_docker_memory_accounting[{R1}]",
        f"{P}test_image.py::test_image_present[{R1}]",
        f"{P}test_image.py::test_image_layers_identical",
        f"{P}test_memory.py::test_memory_free_before_start[{R1}]",  # is the container running? unknown
        f"{P}test_skew.py::test_nccl_library_same_on_every_node",  # read in the container
        f"{P}test_launch_plan.py::test_running_container_is_the_files_plan[{R1}]",  # is the container running?
    }
    failed = run.failed()
    assert set(failed) == needs_docker, run.out
    assert all("tool-missing" in hints for hints in failed.values()), failed
    assert "`docker` is not installed or not on PATH" in run.junit[f"{GPU}[{R1}]"]["message"]


def test_ufw_unit_disabled_is_not_persistent(tmp_path):
    """ENABLED=yes but ufw.service disabled: the real systemctl, reading the node's own unit links."""
    run = run_scenario(
        tmp_path, 'base = "healthy"\n[nodes.thinkstationpgx-30.ufw]\nunit = "disabled"\n', "-m", "preflight"
    )
    after_reboot = f"{P}test_firewall.py::test_firewall_after_reboot[{R0}]"
    assert run.failed() == {after_reboot: {"ufw-not-persistent"}}, run.out
    assert "ufw.conf ENABLED=yes, ufw.service disabled" in run.junit[after_reboot]["message"]


def test_docker_daemon_down_is_named_as_such(tmp_path):
    """The docker CLI answers, the daemon does not: the parser knows the text and names its hint."""
    run = run_scenario(
        tmp_path, 'base = "healthy"\n[nodes.thinkstationpgx-32.docker]\ndaemon = "down"\n', "-m", "preflight"
    )
    failed = run.failed()
    assert set(failed) == {
        f"{GPU}[{R1}]",
        f"{P}test_docker.py::test_docker_memory_accounting[{R1}]",
        f"{P}test_image.py::test_image_present[{R1}]",
        f"{P}test_image.py::test_image_layers_identical",
        f"{P}test_memory.py::test_memory_free_before_start[{R1}]",
        f"{P}test_skew.py::test_nccl_library_same_on_every_node",
        f"{P}test_launch_plan.py::test_running_container_is_the_files_plan[{R1}]",
    }, run.out
    assert all(hints == {"docker-daemon-down"} for hints in failed.values()), failed
    # the stub prints what docker 28 prints with no daemon: `[]` for inspect (never "image missing") and
    # `info`'s JSON of empty server fields (never "cgroup vNone, driver ")
    messages = " ".join(run.junit[tid]["message"] for tid in failed)
    assert "None" not in messages and "image-missing" not in messages, messages


def test_hung_tool_is_a_timeout_verdict_not_a_hung_suite(tmp_path):
    run = run_scenario(
        tmp_path,
        'base = "healthy"\n[[nodes.thinkstationpgx-32.stubs]]\ntool = "nvidia-smi"\ndelay = 120\n',
        "-m",
        "preflight",
        env={},
        timeout=90,
    )
    failed = run.failed()
    assert set(failed) == {f"{DRV}[{R1}]", f"{P}test_nvidia_smi.py::test_nvidia_smi_answers[{R1}]", f"{GPU}[{R1}]"}, (
        run.out
    )
    assert "command-timeout" in failed[f"{DRV}[{R1}]"]
    assert "timed out after" in run.junit[f"{DRV}[{R1}]"]["message"]


def _start_hung_run(tmp_path):
    import subprocess
    import sys
    import time

    from selftests.e2e.runner import PROJECT

    scenario = tmp_path / "hung.toml"
    scenario.write_text('base = "healthy"\n[[nodes.thinkstationpgx-32.stubs]]\ntool = "nvidia-smi"\ndelay = 120\n')
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            f"--sim={scenario}",
            f"--reports-dir={tmp_path / 'reports'}",
            "-m",
            "preflight",
        ],
        cwd=PROJECT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    # wait until the snapshot is stuck in the slow stub, however long the sim took to come up
    hung_stub = f"/run/gb10sim/{proc.pid}/thinkstationpgx-32/state.json nvidia-smi"
    deadline = time.monotonic() + 60
    while subprocess.run(["pgrep", "-f", hung_stub], capture_output=True).returncode != 0:
        assert time.monotonic() < deadline and proc.poll() is None, "the run never reached the hung nvidia-smi"
        time.sleep(0.1)
    return proc


def test_sigterm_tears_down_and_still_writes_reports(tmp_path):
    import json
    import signal

    proc = _start_hung_run(tmp_path)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2, out  # pytest's "interrupted"
    assert sim_leftovers(proc.pid) == []
    summary = json.loads((tmp_path / "reports" / "summary.json").read_text())
    assert summary["interrupted"] is True


def test_a_killed_run_is_cleaned_by_the_next(tmp_path):
    import signal

    proc = _start_hung_run(tmp_path)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    left = sim_leftovers(proc.pid)
    assert left, "SIGKILL should have left the sim behind"
    assert f"gb10sim-{proc.pid}-sw" in left  # the switches' namespace (the LAN's bridge), cleaned too
    run_suite(tmp_path / "next", "--sim", "-m", "preflight", shared=False)  # its cleaning is the point
    assert sim_leftovers(proc.pid) == []


def test_no_driver_loaded_has_its_own_hint(tmp_path):
    """No nvidia module at all is not a version skew: driver-not-loaded, not driver-version-mismatch."""
    run = run_scenario(
        tmp_path, 'base = "healthy"\n[nodes.thinkstationpgx-32]\ndriver = { kernel = "" }\n', "-m", "preflight"
    )
    failed = run.failed()
    assert failed[f"{DRV}[{R1}]"] == {"driver-not-loaded"}, run.out
    assert failed[f"{INSTALLED}[{R1}]"] == {"driver-not-loaded"}, run.out
    assert "NVIDIA kernel module on thinkstationpgx-32: expected loaded, found not loaded" in run.out


def test_an_rdma_device_that_does_not_exist_is_not_a_cable_fault(tmp_path):
    run = run_scenario(
        tmp_path,
        'base = "healthy"\n[[nodes.thinkstationpgx-32.stubs]]\ntool = "ibdev2netdev"\n'
        'stdout = "rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)\\nroceP2p1s0f0x port 1 ==> enP2p1s0f0np0 (Up)\\n"\n',
        "-m",
        "network",
    )
    assert run.failed() == {f"{LINK}[{R1}-enP2p1s0f0np0]": {"rdma-device-missing"}}, run.out
    assert "roceP2p1s0f0x" in run.junit[f"{LINK}[{R1}-enP2p1s0f0np0]"]["message"]


def test_a_pass_records_what_it_found_never_a_contradiction(tmp_path):
    """A healthy run's summary: no passing comparison says something is missing or was not done."""
    run = run_suite(tmp_path, "--sim")
    assert run.rc == 0, run.out
    contradiction = re.compile(r"\b(not listed|not tried|no such|not found|missing|not loaded|no answer)\b", re.I)
    bad = [
        (row["test"], m["what"], m["found"])
        for row in run.summary["checks"]
        for m in row["evidence"]
        if m["ok"] and contradiction.search(m["found"])
    ]
    assert bad == []


def test_a_link_mtu_the_inventory_sets_is_held_on_both_ends(tmp_path):
    run = run_scenario(tmp_path, 'base = "healthy"\n[links.enp1s0f0np0]\nmtu = 9000\n', "-m", "network")
    mtu = "tests_network/test_interfaces.py::test_one_mtu_per_link[enp1s0f0np0]"
    assert run.failed() == {mtu: {"mtu-mismatch"}}, run.out
    assert (
        "MTU on rail enp1s0f0np0: expected the same on every member: 9000, as the inventory says"
        in (run.junit[mtu]["message"])
    )


# pair faults run on the other shapes (NAME@BASE): one per stage kind, the shapes' largest where it is cheap
REBASED = [("link-down", "healthy-switch8"), ("node-down", "healthy-ring4"), ("driver-mismatch", "healthy-switch4")]


@pytest.mark.parametrize(("name", "base"), REBASED, ids=[f"{n}@{b}" for n, b in REBASED])
def test_a_pair_fault_on_another_shape_fails_only_its_own_checks(name, base, tmp_path):
    """Issue 26's rule on every shape: a pair's fault put on a ring or a switch fails no check its own
    [expect] does not name, with no hint it does not name, and only about the ranks its [expect] names for
    that check (rank 0 and 1 where it names none); the checks of ranks 2 and up pass or skip (one fault, one
    verdict at any size: link-down on eight nodes behind a switch is one failure, as on the pair)."""
    pair = load_scenario(name)
    assert pair.expect is not None
    # each check the pair's [expect] names (a pattern's, `*[{rank1}]` or `test_skew.py::*`, is any check) with
    # the ranks it names there; a check named with no rank is about the pair's two (rank 0's API, a comparison)
    ranks: dict[str, set[str]] = {}
    for tid in pair.expect.fails:
        check = tid.split("::", 1)[1].split("[", 1)[0] if "::" in tid else "*"
        named = {m[1] for m in PLACEHOLDER.finditer(tid)} or {"rank0", "rank1"}
        ranks.setdefault(check, set()).update(named)
    hints = set().union(*(set(h) for h in pair.expect.fails.values()))
    rebased = load_scenario(f"{name}@{base}")
    names = rebased.placeholders()
    run = run_suite(tmp_path, "--sim", f"{name}@{base}", *_marker(pair.expect.marker), timeout=run_timeout(rebased))
    failed = run.failed()
    assert failed, f"{name}@{base} failed nothing:\n{run.out}"
    assert followers(failed) == [], run.out
    rows = {row["test"]: row for row in run.summary["checks"]}
    for tid, found in failed.items():
        check = tid.split("::", 1)[1].split("[", 1)[0]
        own = ranks.get(check, ranks.get("*"))
        assert own is not None, f"{tid} fails on {base}; {name}'s own checks are {sorted(ranks)}\n{run.out}"
        assert found <= hints, f"{tid}: hints {sorted(found)}, {name} names {sorted(hints)}"
        row = rows[tid]
        where = ({row.get("node")} | set(row.get("nodes") or [])) - {None, ""}  # none: a check of the whole cluster
        allowed = {names[r] for r in own}
        assert not where or where & allowed, f"{tid} is about {sorted(where)}, not {sorted(allowed)}\n{run.out}"
