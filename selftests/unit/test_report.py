def test_the_reports_folder_is_held_never_through_a_planted_symlink(tmp_path):
    """The run's hold on its reports folder (.gb10check-run.lock) is opened without following a symlink:
    one planted there is refused, its target untouched; a second hold on the folder is refused too."""
    import pytest as _pytest

    from gb10check.errors import ReportsUnwritable
    from gb10check.reporting.report import RUN_LOCK, claim

    target = tmp_path / "someone-elses-file"
    target.write_text("theirs\n")
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / RUN_LOCK).symlink_to(target)
    with _pytest.raises(ReportsUnwritable, match="a symlink or another file there"):
        claim(planted)
    assert target.read_text() == "theirs\n"
    first = claim(tmp_path)
    try:
        with _pytest.raises(ReportsUnwritable, match=f"another gb10check run writes its reports into {tmp_path}"):
            claim(tmp_path)
    finally:
        first.close()
    claim(tmp_path).close()  # once the first let go


def test_a_long_failure_line_is_cut_between_clauses_never_inside_a_netdev():
    """ring4-out-of-order's line: two cable moves in one finding, 1400 characters; the terminal shows the
    clauses that fit whole and says where the rest is; a line without clauses is cut between words."""
    from gb10check.reporting.report import whole_words

    move = "spark-1's enP2p1s0f0np0 is wired to spark-3's enP2p1s0f1np1: move that cable to spark-2's enP2p1s0f1np1"
    line = f"[cable-crossed] who answers ARP over rail c0b: {move}; {move}; {move}; {move}; {move}; {move}"
    shown = whole_words(line, 600, "summary.md has the whole line")
    assert len(shown) <= 600 + 40 and shown.endswith(" … (summary.md has the whole line)"), shown
    kept = shown.removesuffix(" … (summary.md has the whole line)")
    assert line.startswith(kept) and kept.endswith("enP2p1s0f1np1"), kept  # a whole clause, the last one too
    words = whole_words("word " * 200, 100, "rest")
    assert words.endswith("word … (rest)") and "wor …" not in words
    assert whole_words("short", 600, "x") == "short"


def test_a_simulated_run_names_its_scenario_not_the_sims_runtime_path():
    """The sim's inventory lives under /run for the run only: summary.md names the scenario, a real run its
    inventory's path."""
    from gb10check.reporting.report import Summary

    sim = Summary(started=0.0, inventory="/run/gb10sim/123/cluster.toml", scenario="healthy")
    text = sim.to_markdown()
    assert "/run/gb10sim" not in text and "the simulated cluster's, scenario `healthy`" in text
    real = Summary(started=0.0, inventory="/etc/gb10/cluster.toml", scenario=None)
    assert "- inventory: `/etc/gb10/cluster.toml`" in real.to_markdown()
