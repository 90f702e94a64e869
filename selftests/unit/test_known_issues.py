"""The known-issues catalogue: its format (every mistake a clear error naming the file and the entry), its
version conditions, the judging of a node's facts, the facts read from a node, the builtin entries (each
with a public source and a builtin scenario that trips it), and `gb10check known-issues`."""

from __future__ import annotations

import json
import subprocess
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest

from gb10check.commands import known_issues as known_issues_command
from gb10check.deployment.launch.vllm_args import parse_vllm
from gb10check.errors import GB10Error, HintCatalogueError, ParseError
from gb10check.judging.hints import Catalogue
from gb10check.judging.known_issue_facts import cuda_graphs, image_driver, nccl_from, node_facts
from gb10check.judging.known_issues import FACTS, Condition, judge, load, parse_known_issues, version_key
from gb10check.reading.parsers.host_release import NO_DGX_RELEASE, parse_dgx_release
from gb10check.reading.parsers.nccl_library import SCRIPT, parse_container_libraries
from gb10check.reading.snapshot import Snapshot
from gb10check.reading.transport import CommandResult

PROJECT = Path(__file__).resolve().parents[2]
ENTRY = """[[known_issue]]
id = "x-y"
title = "t"
outcome = "failure"
added = 2026-12-07
what = "w"
fix = "f"
match = { kernel = "==6.17.0-1008" }
[[known_issue.sources]]
url = "https://example.org/a"
date = 2026-03-15
said = "s"
"""


def test_versions_compare_number_by_number():
    assert version_key("6.17.0-1008-nvidia") == (6, 17, 0, 1008)
    assert version_key("2.28.9+cuda13.0") == (2, 28, 9)  # a build label is no part of the version
    assert Condition("kernel", "==6.17.0-1008").holds("6.17.0-1008-nvidia")
    assert not Condition("kernel", "==6.17.0-1008").holds("6.17.0-1014-nvidia")
    assert Condition("nccl", ">=2.28.9,<2.30.4").holds("2.29.7+cuda13.0")
    assert not Condition("nccl", ">=2.28.9,<2.30.4").holds("2.30.4")
    assert Condition("nccl", "<2.29.3").holds("2.29")  # padded: 2.29 is 2.29.0
    assert Condition("driver", "!=580.173.02").holds("580.95.05")
    assert Condition("nccl_from", "pip-wheel|system").holds("system")
    assert not Condition("nccl_from", "pip-wheel").holds("system")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace('id = "x-y"', 'id = "X_Y"'), "'id' must be lowercase words"),
        (lambda t: t.replace('outcome = "failure"', 'outcome = "fatal"'), "outcome 'fatal' is one of failure"),
        (lambda t: t.replace('fix = "f"\n', ""), "'fix' must be a non-empty string"),
        (lambda t: t + 'colour = "red"\n', "unknown key(s) colour"),
        (lambda t: t.replace("kernel =", "kernal ="), "unknown fact 'kernal'"),
        (lambda t: t.replace('"==6.17.0-1008"', '"6.17.0-1008"'), "is not a comparison"),
        (lambda t: t.replace('{ kernel = "==6.17.0-1008" }', '{ nccl_from = "conda" }'), "'conda' is not one of"),
        (lambda t: t.replace('match = { kernel = "==6.17.0-1008" }', "match = {}"), "at least one fact"),
        (lambda t: t.split("[[known_issue.sources]]")[0], "at least one public source"),
        (lambda t: t.replace("https://example.org/a", "http://example.org/a"), "public https:// address"),
        (lambda t: t.replace("date = 2026-03-15", 'date = "2026-03-15"'), "'date' must be a date"),
        (lambda t: t.replace("added = 2026-12-07", "added = 2026-12-07T10:00:00"), "'added' must be a date"),
        (lambda t: t + t, "'x-y' is there twice"),
        (lambda t: "[hints]\n" + t, "unknown table(s) hints"),
        (lambda t: t.replace("[[known_issue]]", "[known_issue]"), "an array of tables"),
        (lambda t: t.replace('said = "s"', 'said = "s"\nurl2 = "x"'), "unknown key(s) url2"),
        (lambda t: t + "= broken", "not valid TOML"),
    ],
)
def test_a_malformed_entry_is_an_error_naming_the_file_and_the_entry(edit, message):
    with pytest.raises(HintCatalogueError) as exc:
        parse_known_issues(edit(ENTRY), "site.toml")
    assert message in str(exc.value) and str(exc.value).startswith("site.toml")


def test_judging_a_nodes_facts():
    entries = parse_known_issues(
        ENTRY
        + ENTRY.replace('"x-y"', '"two"').replace(
            '{ kernel = "==6.17.0-1008" }', '{ dgx_os = "==7.5.0", cx_firmware = "==28.45.4028" }'
        ),
        "site.toml",
    )
    facts = {"kernel": "6.17.0-1008-nvidia", "dgx_os": "7.5.0", "cx_firmware": ["28.45.1020", "28.45.4028"]}
    judged = judge(entries, facts, {})
    assert [(e.id, m) for e, m in judged.matched] == [
        ("x-y", "kernel 6.17.0-1008-nvidia"),
        ("two", "dgx_os 7.5.0, cx_firmware 28.45.4028"),  # one device of several is enough
    ]
    # no DGX OS on the node (None): its entry does not hold; a fact not read leaves the entry unjudged...
    judged = judge(entries, {"kernel": "6.17.0-1014-nvidia", "dgx_os": None}, {"cx_firmware": "sysfs unreadable"})
    assert judged.matched == () and judged.unjudged == ()
    judged = judge(entries, {"kernel": "6.17.0-1014-nvidia", "dgx_os": "7.5.0"}, {"cx_firmware": "sysfs unreadable"})
    assert [(e.id, why) for e, why in judged.unjudged] == [("two", "cx_firmware: sysfs unreadable")]
    # ...unless what was read already rules it out
    judged = judge(entries, {"kernel": "6.17.0-1014-nvidia", "dgx_os": "7.4.0"}, {"cx_firmware": "sysfs unreadable"})
    assert judged.unjudged == ()


def test_a_site_file_adds_and_replaces_and_an_unreadable_one_is_named(tmp_path):
    site = tmp_path / "ours.toml"
    site.write_text(
        ENTRY + ENTRY.replace('"x-y"', '"kernel-6-17-0-1008-panics"').replace('title = "t"', 'title = "ours"')
    )
    entries = {e.id: e for e in load([site])}
    assert entries["x-y"].file == str(site)
    assert entries["kernel-6-17-0-1008-panics"].title == "ours"  # the site's replaces the builtin
    with pytest.raises(HintCatalogueError, match=r"--known-issues .*missing\.toml: cannot read"):
        load([tmp_path / "missing.toml"])
    (tmp_path / "latin1.toml").write_bytes(b"# caf\xe9\n")
    with pytest.raises(HintCatalogueError, match="not UTF-8"):
        load([tmp_path / "latin1.toml"])


def test_every_entry_is_a_hint_and_may_not_take_a_hints_id(tmp_path):
    catalogue = Catalogue.load()
    for entry in load():
        hint = catalogue[entry.id]
        assert hint.title == entry.title and hint.fix == entry.fix
        assert all(s.url in hint.cause for s in entry.sources)  # the hint names the sources
    clash = tmp_path / "clash.toml"
    clash.write_text(ENTRY.replace('"x-y"', '"roce-link-down"'))
    with pytest.raises(HintCatalogueError, match=r"has the id of the hint in gb10check/judging/hints\.toml"):
        Catalogue.load((), [clash])


def _builtin_scenarios() -> list[dict]:
    return [tomllib.loads(p.read_text()) for p in sorted((PROJECT / "sim" / "scenarios").glob("*.toml"))]


def test_every_builtin_entry_has_dated_public_sources_and_a_scenario_that_trips_it():
    """Issue 29: every entry with its sources, each with a scenario: a failure's id among the hints a
    scenario expects of test_no_known_issue; an advisory's or advice's title holds the phrase one expects."""
    expects = [s.get("expect", {}) for s in _builtin_scenarios()]
    failed = {
        h for e in expects for t, hints in e.get("fails", {}).items() if "test_no_known_issue" in t for h in hints
    }
    phrases = {
        kind: [p for e in expects for t, p in e.get(key, {}).items() if "test_no_known_issue" in t]
        for kind, key in (("advisory", "advisories"), ("advice", "advice"))
    }
    entries = load()
    assert len(entries) >= 7
    for entry in entries:
        assert entry.sources and all(s.url.startswith("https://") and s.date <= entry.added for s in entry.sources)
        if entry.outcome == "failure":
            assert entry.id in failed, f"no builtin scenario trips {entry.id}"
        else:
            assert any(p in entry.title for p in phrases[entry.outcome]), f"no builtin scenario trips {entry.id}"


def test_dgx_release_gives_the_updated_version_and_never_quotes_the_serial(capture):
    text = capture("commands/dgx_release.dgx_spark.reconstructed.txt")
    assert parse_dgx_release(text) == "7.5.0"  # DGX_OTA_VERSION over the install's DGX_SWBUILD_VERSION
    installed_only = "\n".join(line for line in text.splitlines() if not line.startswith("DGX_OTA"))
    assert parse_dgx_release(installed_only) == "7.2.3"
    assert parse_dgx_release(NO_DGX_RELEASE + "\n") is None
    broken = text.replace('DGX_OTA_VERSION="7.5.0"', 'DGX_OTA_VERSION="seven"')
    with pytest.raises(ParseError, match="dgx-release") as exc:
        parse_dgx_release(broken)
    assert "1970125000042" not in str(exc.value)


def _run_libraries_script(tmp_path: Path, mlx5: bytes | None) -> str:
    """The container script's libmlx5 part run by this machine's real sh and grep, its library paths moved to
    a folder of the test's (a stand-in libmlx5.so.1 whose dynamic strings hold the symbol or not)."""
    lib = tmp_path / "lib" / "aarch64-linux-gnu"
    lib.mkdir(parents=True)
    if mlx5 is not None:
        (lib / "libmlx5.so.1").write_bytes(mlx5)
    first = SCRIPT.split("f=$(grep", 1)[0]
    moved = first.replace("/usr/lib/*-linux-gnu/", f"{tmp_path}/lib/*-linux-gnu/")
    nccl = "echo 'gb10check-nccl none'"
    out = subprocess.run(["sh", "-c", moved + nccl], capture_output=True, text=True, timeout=10, check=True)
    assert out.stderr == ""
    return out.stdout


def test_the_container_script_tells_a_libmlx5_with_the_dmabuf_symbol_from_one_without(tmp_path):
    with_it = parse_container_libraries(
        _run_libraries_script(tmp_path / "a", b"\x7fELF\0mlx5dv_reg_mr\0mlx5dv_reg_dmabuf_mr\0")
    )
    assert with_it.mlx5 is not None and with_it.mlx5.dmabuf and with_it.nccl is None
    without = parse_container_libraries(_run_libraries_script(tmp_path / "b", b"\x7fELF\0mlx5dv_reg_mr\0"))
    assert without.mlx5 is not None and not without.mlx5.dmabuf
    assert parse_container_libraries(_run_libraries_script(tmp_path / "c", None)).mlx5 is None
    with pytest.raises(ParseError, match="gb10check-mlx5"):
        parse_container_libraries("gb10check-nccl none\n")


def _plan(*argv: str) -> SimpleNamespace:
    return SimpleNamespace(vllm=parse_vllm(["vllm", "serve", "Qwen/Qwen3", *argv]))


@pytest.mark.parametrize(
    ("argv", "graphs"),
    [
        ((), "yes"),  # vLLM's default captures them
        (("--enforce-eager",), "no"),
        (("-cc.cudagraph_mode=NONE",), "no"),
        (("-cc.cudagraph_mode=FULL_DECODE_ONLY",), "yes"),
        (("--compilation-config.cudagraph_mode=NONE",), "no"),
        (("--compilation-config", '{"cudagraph_mode": "NONE"}'), "no"),
        (("--compilation-config", '{"cudagraph_mode": "PIECEWISE"}'), "yes"),
    ],
)
def test_whether_vllm_captures_cuda_graphs_from_its_command(argv, graphs):
    assert cuda_graphs(_plan(*argv)) == graphs  # type: ignore[arg-type]


def test_the_image_and_library_facts():
    env = ("PATH=/usr/bin", "CUDA_DRIVER_VERSION=590.48.01")
    assert image_driver(env, "580.173.02") == "newer"
    assert image_driver(env, "590.48.01") == "not-newer"
    assert image_driver(("PATH=/usr/bin",), "580.173.02") == "not-newer"  # an image that names no driver
    assert nccl_from("/usr/local/lib/python3.12/dist-packages/nvidia/nccl/lib/libnccl.so.2", "loaded") == "pip-wheel"
    assert nccl_from("/usr/lib/aarch64-linux-gnu/libnccl.so.2", "ldconfig") == "system"


def test_the_command_lists_every_entry_and_its_facts(capsys, tmp_path):
    assert known_issues_command.main(["-v"]) == 0
    out = capsys.readouterr().out
    for entry in load():
        assert f"[{entry.id}] {entry.title}" in out and entry.sources[0].url in out
    assert all(name in out for name in FACTS)
    site = tmp_path / "ours.toml"
    site.write_text(ENTRY)
    assert known_issues_command.main(["--json", "--known-issues", str(site)]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed[-1]["id"] == "x-y" and listed[-1]["match"] == {"kernel": "==6.17.0-1008"}
    site.write_text(ENTRY.replace("kernel =", "kernal ="))
    assert known_issues_command.main(["--known-issues", str(site)]) == 4
    assert "unknown fact 'kernal'" in capsys.readouterr().err


def _snapshot(**stdout: str) -> Snapshot:
    return Snapshot("n1", {name: CommandResult(name, 0, text, "", 0.1, False) for name, text in stdout.items()})


HOST = {
    "proc_driver_version": "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.173.02  Release Build  "
    "(dvs-builder@U22-I3-AF03-09-1)  Tue Jun 23 08:38:17 UTC 2026\nGCC version:  gcc version 13.3.0\n",
    "kernel_release": "6.17.0-1008-nvidia\n",
    "os_release": 'PRETTY_NAME="Ubuntu 24.04.3 LTS"\nID=ubuntu\n',
    "dgx_release": NO_DGX_RELEASE + "\n",
    "cx_firmware": "/sys/class/infiniband/rocep1s0f0/fw_ver:28.45.4028\n"
    "/sys/class/infiniband/rocep1s0f1/fw_ver:28.45.4028\n",
}


def test_a_nodes_facts_from_its_snapshot_what_it_lacks_and_what_could_not_be_read():
    """No DGX OS (no /etc/dgx-release) is None, so DGX OS 7.5.0's entry cannot match; no deployment: no image
    facts at all; a container that could not be read leaves its facts missing, with why."""
    facts = node_facts(_snapshot(**HOST), deployed=False, libraries=None, plan=None)
    assert facts.values["driver"] == "580.173.02" and facts.values["kernel"] == "6.17.0-1008-nvidia"
    assert facts.values["dgx_os"] is None and facts.values["cx_firmware"] == ["28.45.4028"]
    assert facts.values["nccl"] is None and facts.missing == {}
    judged = judge(load(), facts.values, facts.missing)
    assert [e.id for e, _ in judged.matched] == ["kernel-6-17-0-1008-panics"] and judged.unjudged == ()
    snap = _snapshot(**HOST)
    snap.results["image_inspect"] = CommandResult("image_inspect", 1, "[]\n", "Error: No such image: v\n", 0.1, False)
    down = node_facts(snap, deployed=True, libraries=GB10Error("n1: docker: daemon down"), plan=None)
    assert down.missing["nccl"] == "n1: docker: daemon down"
    assert down.missing["image_driver"] == "the deployment's image is not on the node"
    assert down.missing["cuda_graphs"] == "no launch plan was read"
    assert {e.id for e, _ in judge(load(), down.values, down.missing).unjudged} >= {"nccl-2-28-9-pip-wheel-wedge"}


def test_the_small_files_hashes_and_the_caches_filesystem():
    from gb10check.reading.parsers.hfcache import parse_fs_type, parse_sha256sums

    digest = "4beb7a92d75b" + "0" * 52
    assert parse_sha256sums(f"{digest}  config.json\n{digest} *tokenizer.json\n") == {
        "config.json": digest,
        "tokenizer.json": digest,
    }
    assert parse_sha256sums("") == {}
    with pytest.raises(ParseError, match="HASH  FILE"):
        parse_sha256sums("sha256sum: config.json: Permission denied\n")
    assert parse_fs_type("nfs4\n") == "nfs4" and parse_fs_type("ext2/ext3\n") == "ext2/ext3"
    with pytest.raises(ParseError, match="filesystem"):
        parse_fs_type("stat: cannot read file system information for '/x': No such file or directory\n")
