def test_the_reports_folder_is_held_never_through_a_planted_symlink(tmp_path):
    """The run's hold on its reports folder (.gb10check-run.lock) is opened without following a symlink:
    one planted there is refused, its target untouched; a second hold on the folder is refused too."""
    import pytest as _pytest

    from gb10check.errors import ReportsUnwritable
    from gb10check.report import RUN_LOCK, claim

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
