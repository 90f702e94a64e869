"""The neutralising step: a node's control characters are shown, never obeyed."""

from __future__ import annotations

import pytest

from gb10check.errors import GB10Error
from gb10check.judging.verdict import CheckFailed, Evidence
from gb10check.safe_text.neutralise import neutralise, neutralise_tree

OSC_TITLE = "\x1b]0;owned\x07"
OSC8_LINK = "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (OSC_TITLE, "\\x1b]0;owned\\x07"),
        ("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),
        (OSC8_LINK, "\\x1b]8;;http://evil.example/\\x1b\\click\\x1b]8;;\\x1b\\"),
        ("\x9b31m red", "\\x9b31m red"),  # C1 CSI: ESC [ in one byte
        ("ok\rFAILED", "ok\\rFAILED"),  # a carriage return would rewrite the line
        ("\u202egnp.exe", "\\u202egnp.exe"),  # right-to-left override
        ("a\x00b\x7fc\x08", "a\\x00b\\x7fc\\x08"),
        ("line 1\nline 2\ttab", "line 1\nline 2\ttab"),  # the reports' own line breaks and tabs stay
        ("café ✓ 漢字", "café ✓ 漢字"),
        ("", ""),
    ],
)
def test_control_characters_are_shown_as_their_escapes(text, shown):
    assert neutralise(text) == shown
    assert neutralise(shown) == shown  # once is enough: nothing left to neutralise


def test_every_control_character_is_caught():
    controls = [chr(c) for c in (*range(0x20), *range(0x7F, 0xA0)) if chr(c) not in "\n\t"]
    out = neutralise("".join(controls))
    assert all(c not in out for c in controls) and out.count("\\") == len(controls)


def test_a_tree_is_neutralised_keys_and_all():
    tree = {"checks": [{"facts": {"vllm_version": "0.12\x1b[2J"}, f"figure{OSC_TITLE}": 1.5, "ok": True}]}
    assert neutralise_tree(tree) == {
        "checks": [{"facts": {"vllm_version": "0.12\\x1b[2J"}, "figure\\x1b]0;owned\\x07": 1.5, "ok": True}]
    }


def test_errors_checks_and_evidence_pass_the_step():
    assert "\x1b" not in str(GB10Error(f"nvidia-smi: {OSC_TITLE}"))
    assert "\x1b" not in str(CheckFailed(f"found {OSC8_LINK}"))
    evidence = Evidence("node-a")
    evidence.fact("vllm_version", f"0.12.0{OSC_TITLE}")
    assert evidence.facts["vllm_version"] == "0.12.0\\x1b]0;owned\\x07"
    with pytest.raises(CheckFailed) as failed:
        evidence.expect(False, what="served model", expected="m", found=f"m{OSC_TITLE}", detail="\x9b2J")
    assert "\x1b" not in str(failed.value) and "\x9b" not in str(failed.value)
    comparison = evidence.items[0]
    assert (comparison.found, comparison.detail) == ("m\\x1b]0;owned\\x07", "\\x9b2J")


def test_prometheus_labels_and_report_html_hold_no_control_character():
    from gb10check.reporting import html_report, prometheus
    from selftests.e2e import bad_day

    summary = bad_day.history_template()
    row = summary["checks"][1]  # type: ignore[index]
    row.update(node=f"a{OSC_TITLE}", check=f"test_driver_loaded[a{OSC_TITLE}]", message=f"found {OSC8_LINK}")
    row["facts"] = {"vllm_version": f"0.12{OSC_TITLE}"}
    exposition = prometheus.generate_latest(prometheus.registry_of(summary, [f"a{OSC_TITLE}"])).decode()
    assert 'node="a\\\\x1b]0;owned\\\\x07"' in exposition and "\x1b" not in exposition
    page = html_report.render(summary, {"driver-mismatch": f"fix {OSC8_LINK}"})
    assert "\\x1b]8;;http://evil.example/" in page and "\x1b" not in page and "\x07" not in page
