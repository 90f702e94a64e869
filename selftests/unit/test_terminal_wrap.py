"""On a terminal, the failures and hints wrap only between words; a hint's command stays one line to paste."""

from __future__ import annotations

from types import SimpleNamespace

from fixtures.terminal import _writer, wrapped

MOVE = (
    "FAILED test_cable_ends_where_the_inventory_says[thinkstationpgx-30-thinkstationpgx-32-c0a]: [cable-crossed] "
    "who answers ARP on thinkstationpgx-30 and thinkstationpgx-32 over rail c0a: expected thinkstationpgx-30's "
    "enp1s0f0np0 <-> thinkstationpgx-32's enp1s0f1np1, found 10.20.0.2 answered by nobody; thinkstationpgx-30's "
    "enp1s0f0np0 is wired to thinkstationpgx-34's enp1s0f1np1: move that cable (or switch port) to "
    "thinkstationpgx-32's enp1s0f1np1"
)


def test_a_long_line_wraps_between_words_and_keeps_every_token_whole():
    lines = wrapped(MOVE, 80)
    assert len(lines) > 3
    assert all(len(line) <= 80 or " " not in line.strip() for line in lines[1:])  # longer: one token alone
    assert lines[0].startswith("FAILED test_cable_ends_where_the_inventory_says[")  # the check id stays beside FAILED
    assert all(line.startswith("    ") for line in lines[1:])  # continuation indented under its line
    assert " ".join(part.strip() for part in lines).split() == MOVE.split()  # no word cut, none lost


def test_short_lines_and_narrow_terminals_are_left_as_they_are():
    assert wrapped("FAILED x: short", 80) == ["FAILED x: short"]
    assert wrapped(MOVE, 30) == [MOVE]  # narrower than any sensible wrap: the terminal folds it


def _reporter(tty: bool, width: int = 70) -> tuple[SimpleNamespace, list[str]]:
    out: list[str] = []
    reporter = SimpleNamespace(isatty=lambda: tty, _tw=SimpleNamespace(fullwidth=width), write_line=out.append)
    return reporter, out


def test_on_a_terminal_prose_wraps_and_a_command_stays_one_line():
    reporter, out = _reporter(tty=True)
    write = _writer(reporter)  # type: ignore[arg-type]
    command = (
        "    $ ping -c 1 -I enp1s0f0np0 10.20.0.2; ip neigh show dev enp1s0f0np0 to 10.20.0.2   # on thinkstationpgx-30"
    )
    write(MOVE)
    write(command)
    assert out[-1] == command
    assert len(out) > 2 and all(len(line) < 70 for line in out[1:-1])


def test_piped_every_line_is_written_whole():
    reporter, out = _reporter(tty=False)
    write = _writer(reporter)  # type: ignore[arg-type]
    write(MOVE)
    assert out == [MOVE]
