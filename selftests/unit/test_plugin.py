"""The pytest plugin itself, run in-process with pytester against a local-only inventory."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

INI = """
[pytest]
addopts = -p no:cacheprovider
markers =
    hints(*ids): troubleshooting hint ids
junit_family = xunit1
"""
INVENTORY = """
[[nodes]]
name = "here"
rank = 0
transport = "local"
"""


@pytest.fixture
def suite(pytester):
    pytester.makeini(INI)
    plugins = ["fixtures.cluster", "fixtures.hints", "fixtures.reports", "fixtures.terminal"]
    pytester.makeconftest(f"pytest_plugins = {plugins!r}")
    pytester.path.joinpath("inv.toml").write_text(INVENTORY)
    return pytester


def _junit(path):
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        failure = case.find("failure")
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        out[case.get("name")] = (failure.get("message") if failure is not None else None, props)
    return out


def test_named_hint_reaches_the_crash_message_junit_and_troubleshooting(suite):
    suite.makepyfile(
        test_x="""
        import pytest

        @pytest.mark.hints("roce-link-down")
        def test_fails(node, evidence):
            evidence.expect(False, what="link", expected="Up", found="Down")

        def test_passes(node, evidence):
            evidence.expect(node.snapshot().raw("whoami").ok, what="id -un", expected="rc 0", found="rc 0")
        """
    )
    result = suite.runpytest("--cluster=inv.toml", "--reports-dir=out")
    result.assert_outcomes(passed=1, failed=1)
    cases = _junit(suite.path / "out" / "junit.xml")
    message, props = cases["test_fails[here]"]
    assert "link on here: expected Up, found Down" in message
    assert "[roce-link-down] A RoCE link is down. Fix:" in message
    assert props == {"hints": "roce-link-down", "node": "here", "expected link": "Up", "found link": "Down"}
    assert cases["test_passes[here]"][0] is None
    result.stdout.re_match_lines(
        [
            r"=+ failures =+",
            r"FAILED test_fails\[here\]: \[roce-link-down\] link on here: expected Up, found Down",
            r"=+ troubleshooting =+",
            r"\[roce-link-down\] A RoCE link is down",
        ]
    )
    summary = json.loads((suite.path / "out" / "summary.json").read_text())
    verdicts = {r["test"]: (r["verdict"], r["node"], r["hints"]) for r in summary["checks"]}
    assert verdicts == {
        "test_x.py::test_fails[here]": ("failed", "here", ["roce-link-down"]),
        "test_x.py::test_passes[here]": ("passed", "here", []),
    }
    here = summary["transports"]["here"]
    assert {k: here[k] for k in ("connections", "commands", "snapshot_probes")} == {
        "connections": 0,
        "commands": 1,
        "snapshot_probes": 33,  # the reads of a local node without a deployment (no compose, logs, image)
    }
    assert len(here["sent"]) == 33 and "cat /proc/meminfo" in here["sent"]  # the audit: each probe sent


def test_symptom_in_output_attaches_a_hint_the_test_did_not_name(suite):
    suite.makepyfile(
        test_y="""
        def test_log(node):
            print("RuntimeError: collective_rpc should not be called on follower node")
            assert False, "startup failed"
        """
    )
    result = suite.runpytest("--cluster=inv.toml", "--reports-dir=out")
    result.assert_outcomes(failed=1)
    message, props = _junit(suite.path / "out" / "junit.xml")["test_log[here]"]
    assert props["hints"] == "follower-not-headless"
    assert "[follower-not-headless]" in message


def test_unknown_hint_id_is_a_usage_error(suite):
    suite.makepyfile(test_z='import pytest\n@pytest.mark.hints("no-such-hint")\ndef test_a():\n    pass\n')
    result = suite.runpytest("--cluster=inv.toml", "--reports-dir=out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*hint ids the catalogue lacks:*", "*test_z.py::test_a: no-such-hint*"])


def test_an_unknown_hint_in_a_check_or_an_error_is_a_usage_error_before_any_node(suite):
    """Not only marks: `evidence.expect(hints=...)`, an error's hint_ids, a chosen `hint = ...`."""
    suite.makepyfile(
        test_y="""
        from gb10check.errors import GB10Error

        class Mine(GB10Error):
            hint_ids = ("no-such-error-hint",)

        def test_a(evidence):
            hint = "no-such-chosen-hint"
            evidence.expect(False, what="x", expected="y", found="z", hints=("no-such-expect-hint",))
        """
    )
    result = suite.runpytest("--cluster=inv.toml", "--reports-dir=out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    for line in (4, 7, 8):
        assert f"test_y.py:{line}: no-such-" in result.stderr.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_site_hints_file(suite):
    suite.path.joinpath("site.toml").write_text(
        '[our-switch]\ntitle = "Lab switch port flaps"\ncause = "c"\nfix = "call Bob"\ncommands = []\nsymptoms = []\n'
    )
    suite.makepyfile(test_s='import pytest\n@pytest.mark.hints("our-switch")\ndef test_a():\n    assert 0\n')
    result = suite.runpytest("--cluster=inv.toml", "--reports-dir=out", "--hints=site.toml")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["[[]our-switch] Lab switch port flaps", "  cause: c", "  fix:   call Bob"])
    message, _ = _junit(suite.path / "out" / "junit.xml")["test_a"]
    assert "[our-switch] Lab switch port flaps. Fix: call Bob" in message


def test_header_shows_the_settings_in_force(suite):
    suite.makepyfile(test_h="def test_a():\n    pass\n")
    result = suite.runpytest("--cluster=inv.toml", "--reports-dir=out")
    result.stdout.fnmatch_lines(
        [
            "gb10check: inventory inv.toml",
            "gb10check: nodes here (rank 0, local)",
            "gb10check: ssh connect_timeout=5s host_key_policy=known_hosts; command_timeout=10s "
            "nvidia_smi_timeout=10s docker_run_timeout=120s; reports out",
            "gb10check: hints builtin; known issues builtin",
        ]
    )


def test_broken_hints_file_is_a_usage_error(suite, monkeypatch):
    monkeypatch.setenv("GB10_CLUSTER", "inv.toml")
    suite.path.joinpath("bad.toml").write_text("[x]\ntitle = 1\n")
    suite.makepyfile(test_h="def test_a():\n    pass\n")
    result = suite.runpytest("--reports-dir=out", "--hints=bad.toml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: gb10check: bad.toml: [[]x]: 'title' must be a non-empty str"])


def test_sim_without_root_stops_with_the_reason(suite, monkeypatch):
    # the interpreter here lives under /root, so a real unprivileged run cannot start it at all;
    # the root test itself is all that is faked
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    suite.makepyfile(test_h="def test_a():\n    pass\n")
    result = suite.runpytest("--sim", "--reports-dir=out")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: the simulated cluster needs root (network and mount namespaces, sshd)*"])
