"""gb10check's reading of a script against what bash (or dash) really runs, case by case.

Each selftests/data/script_cases/*.sh is a script with a header: `# what:` it covers and `# reader:` one of
`agrees` (the reading finds what the shell runs), `defers <regex>` (a value only the start decides: the
reading names it, matching the regex, and agrees on every other word), `refuses <regex>` (bash itself stops:
a `:?` guard), and optionally `# arguments:` (a JSON list: the words after the script in `bash -c SCRIPT
NAME ARGS...`, $0 first), `# shell: sh` (run by `sh -c`: dash here, as in vLLM's Ubuntu-based images),
`# note: <regex>` (what the reading must say it could not evaluate or what dash does differently) and
`# bash: restart-loop` (the script restarts vLLM forever: the sandbox's `sleep` ends the shell after the
first turn). For each case real bash runs the script here (never on a node: the suite never executes a
script) for rank 0 and rank 1, in a sandbox whose PATH puts a recorder in front of `vllm` and `python3`:
each invocation writes its argv and environment. gb10check's reader (gb10check/deployment/shell, merged over its paths
by gb10check/deployment/launch/process.py) must find the same invocation, with the same arguments and environment.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gb10check.deployment.launch.process import started
from gb10check.deployment.launch.vllm_args import parse_vllm
from gb10check.deployment.shell.values import Deferred
from gb10check.deployment.shell.walk import read
from gb10check.errors import ParseError

CASES = Path(__file__).resolve().parents[1] / "data" / "script_cases"
CASE_FILES = sorted(CASES.glob("*.sh"))
# the container's environment, as Compose would give it (set, empty and multi-word values)
CONTAINER_ENV = {
    "MODEL": "org/m",
    "PORT": "9000",
    "DEBUG": "1",
    "EMPTY": "",
    "QUOTED": "two words",
    "HOME": "/home/vllm",
    "PATH": "/usr/local/bin:/usr/bin:/bin",
}
SHELLS = {"bash": "/bin/bash", "sh": "/usr/bin/dash"}  # sh: dash, as in vLLM's Ubuntu-based images
# what bash or the recorder's interpreter add to a child's environment on their own
NOT_THE_CONTAINERS = ("PWD", "SHLVL", "_", "OLDPWD", "LC_CTYPE", "PATH", "RECORD_DIR")
RECORDER = f"""#!{sys.executable}
import json, os, pathlib, sys
out = pathlib.Path(os.environ["RECORD_DIR"])
record = {{"argv": [os.path.basename(sys.argv[0]), *sys.argv[1:]], "env": dict(os.environ)}}
(out / f"{{len(list(out.iterdir())):03d}}.json").write_text(json.dumps(record))
"""
# a restart loop's `sleep`: ends the shell that runs the loop (its parent) after the first turn
ENDS_THE_LOOP = "#!/bin/sh\nkill -TERM $PPID\n"


def _header(path: Path) -> dict[str, str]:
    header = dict(re.findall(r"^# (what|reader|arguments|shell|note|bash): (.*)$", path.read_text(), re.M))
    assert {"what", "reader"} <= set(header), f"{path.name}: a case starts with `# what:` and `# reader:`"
    return header


def _shell(
    script: str, arguments: tuple[str, ...], env: dict[str, str], sandbox: Path, shell: str = "bash", loop: bool = False
) -> list[tuple[list[str], dict[str, str]]]:
    """What the shell runs: (arguments after the vLLM entry point, environment) per invocation."""
    (sandbox / "bin").mkdir()
    records = sandbox / "records"
    records.mkdir()
    for name in ("vllm", "python3"):
        (sandbox / "bin" / name).write_text(RECORDER)
        (sandbox / "bin" / name).chmod(0o755)
    if loop:
        (sandbox / "bin" / "sleep").write_text(ENDS_THE_LOOP)
        (sandbox / "bin" / "sleep").chmod(0o755)
    path = f"{sandbox / 'bin'}:/usr/bin:/bin"
    run = subprocess.run(
        [SHELLS[shell], "-c", script, *arguments],
        env={**env, "PATH": path, "RECORD_DIR": str(records)},
        cwd=sandbox,
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert run.returncode == 0 or loop, run.stderr
    out = []
    for record in (json.loads(p.read_text()) for p in sorted(records.iterdir())):
        argv = record["argv"]
        if argv[0] == "python3" and argv[1:3] != ["-m", "vllm.entrypoints.openai.api_server"]:
            continue  # python3 -c ... before the launch: not vLLM
        skip = 2 if argv[0] == "vllm" else 3  # `vllm serve`, `python3 -m vllm.entrypoints.openai.api_server`
        out.append((argv[skip:], {k: v for k, v in record["env"].items() if k not in NOT_THE_CONTAINERS}))
    return out


def _reading(script: str, arguments: tuple[str, ...], env: dict[str, str], shell: str):
    return read(
        script,
        what="the case",
        env=dict(env),
        arguments=arguments[1:],
        arg0=arguments[0] if arguments else shell,
        dialect=shell,
    )


def _reader(reading) -> list[tuple[list[object], dict[str, object]]]:
    """Every vLLM the one path runs (one after the other, as the shell does); over several paths, the merge."""
    if len(reading.paths) == 1:
        out = []
        for ran in reading.paths[0].ran:
            command = parse_vllm(ran.argv)
            if command is not None:
                out.append((list(command.argv), {k: v for k, v in ran.env.items() if k not in NOT_THE_CONTAINERS}))
        return out
    launch = started(reading, "the case")
    assert launch.vllm is not None
    return [(list(launch.vllm.argv), {k: v for k, v in launch.env.items() if k not in NOT_THE_CONTAINERS})]


def test_every_case_has_its_header_and_every_kind_is_there():
    readers = [_header(p)["reader"].split()[0] for p in CASE_FILES]
    assert len(CASE_FILES) >= 60 and set(readers) == {"agrees", "defers", "refuses"}


@pytest.mark.parametrize("rank", ["0", "1"])
@pytest.mark.parametrize("path", CASE_FILES, ids=[p.stem for p in CASE_FILES])
def test_the_reader_finds_what_bash_runs(path, rank, tmp_path):
    script = path.read_text()
    header = _header(path)
    reader, arguments = header["reader"], tuple(json.loads(header.get("arguments", "[]")))
    shell = header.get("shell", "bash")
    env = {**CONTAINER_ENV, "NODE_RANK": rank, "LOG_DIR": str(tmp_path), "WORKDIR": str(tmp_path)}
    if reader.startswith("refuses "):
        with pytest.raises(ParseError, match=reader.removeprefix("refuses ")):
            _reader(_reading(script, arguments, env, shell))
        return
    reading = _reading(script, arguments, env, shell)
    by_shell = _shell(script, arguments, env, tmp_path, shell, loop=header.get("bash") == "restart-loop")
    assert by_shell, f"{shell} ran no vLLM: the case tests nothing"
    by_shell = by_shell[:1] if header.get("bash") == "restart-loop" else by_shell
    found = _reader(reading)
    if "note" in header:
        assert any(re.search(header["note"], n) for n in reading.notes), reading.notes
    if reader == "agrees":
        assert found == by_shell
        return
    pattern = reader.removeprefix("defers ")
    (argv, env_found), (shell_argv, shell_env) = found[0], by_shell[0]
    deferred = [w for w in [*argv, *env_found.values()] if isinstance(w, Deferred)]
    launch = started(reading, "the case")
    deferred += [v for v in launch.vllm.options.values() if isinstance(v, Deferred)] + (
        [launch.vllm.model] if isinstance(launch.vllm.model, Deferred) else []
    )
    assert any(re.search(pattern, d.why) for d in deferred), [d.why for d in deferred]
    if len(argv) == len(shell_argv):  # every word the start does not decide is bash's
        assert [a for a, b in zip(argv, shell_argv, strict=True) if not isinstance(a, Deferred) and a != b] == []
    assert {k: v for k, v in env_found.items() if not isinstance(v, Deferred)} == {
        k: v for k, v in shell_env.items() if not isinstance(env_found.get(k), Deferred)
    }


def test_under_sh_the_bash_syntax_does_what_dash_does(tmp_path):
    """`[[ ]]` under `sh -c` is no test: dash runs a command `[[`, not found, and rank 0 takes the headless
    branch; the reading finds the same, and says why."""
    script = (CASES / "sh-double-brackets.sh").read_text()
    env = {**CONTAINER_ENV, "NODE_RANK": "0"}
    (tmp_path / "bash").mkdir()
    (tmp_path / "sh").mkdir()
    [(by_bash, _)] = _shell(script, (), env, tmp_path / "bash", "bash")
    [(by_dash, _)] = _shell(script, (), env, tmp_path / "sh", "sh")
    assert by_bash == ["org/m", "--port", "8000"] and by_dash == ["org/m", "--headless"]
    reading = _reading(script, (), env, "sh")
    assert list(started(reading, "the case").vllm.argv) == by_dash
    assert any("`[[ ... ]]` is bash's; under sh" in n for n in reading.notes)
