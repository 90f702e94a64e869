"""gb10check's reading of a container script against what bash really runs, case by case.

Each selftests/data/script_cases/*.sh is a container script with a header: `# what:` it covers and
`# reader: agrees` or `# reader: refuses <regex>`, and optionally `# arguments:` (a JSON list: the
words after the script in `bash -c SCRIPT NAME ARGS...`, $0 first) and `# shell: sh` (the script is
run by `sh -c`: dash here, as in vLLM's Ubuntu-based images). For an agreeing case, real bash runs the script
here (never on a node: the suite itself never executes a script) for rank 0 and rank 1, in a
sandbox whose PATH puts a recorder in front of `vllm` and `python3`: each invocation writes its
argv and environment. gb10check.vllm_command must find the same invocations, with the same
arguments and the same environment. A refusing case must be refused with its words: what bash
would do there depends on things the reader cannot know (a loop, a function, a file's content).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gb10check.compose import ComposeService
from gb10check.errors import ParseError
from gb10check.vllm_command import rank_run, vllm_runs

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


def _header(path: Path) -> dict[str, str]:
    header = dict(re.findall(r"^# (what|reader|arguments|shell): (.*)$", path.read_text(), re.M))
    assert {"what", "reader"} <= set(header), f"{path.name}: a case starts with `# what:` and `# reader:`"
    return header


def _shell(
    script: str, arguments: tuple[str, ...], env: dict[str, str], sandbox: Path, shell: str = "bash"
) -> list[tuple[list[str], dict[str, str]]]:
    """What the shell runs: (arguments after the vLLM entry point, environment) per invocation."""
    (sandbox / "bin").mkdir()
    records = sandbox / "records"
    records.mkdir()
    for name in ("vllm", "python3"):
        (sandbox / "bin" / name).write_text(RECORDER)
        (sandbox / "bin" / name).chmod(0o755)
    path = f"{sandbox / 'bin'}:/usr/bin:/bin"
    run = subprocess.run(
        [SHELLS[shell], "-c", script, *arguments],
        env={**env, "PATH": path, "RECORD_DIR": str(records)},
        cwd=sandbox,
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert run.returncode == 0, run.stderr
    out = []
    for record in (json.loads(p.read_text()) for p in sorted(records.iterdir())):
        argv = record["argv"]
        skip = 2 if argv[0] == "vllm" else 3  # `vllm serve`, `python3 -m vllm.entrypoints.openai.api_server`
        out.append((argv[skip:], {k: v for k, v in record["env"].items() if k not in NOT_THE_CONTAINERS}))
    return out


def _reader(
    script: str, arguments: tuple[str, ...], env: dict[str, str], shell: str = "bash"
) -> list[tuple[list[str], dict[str, str]]]:
    runs = vllm_runs(script, env, arguments, shell)
    return [(list(r.argv), {k: v for k, v in r.environment.items() if k not in NOT_THE_CONTAINERS}) for r in runs]


def test_every_case_has_its_header_and_both_kinds_are_there():
    readers = [_header(p)["reader"].split()[0] for p in CASE_FILES]
    assert len(CASE_FILES) >= 20 and set(readers) == {"agrees", "refuses"}


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
            vllm_runs(script, env, arguments, shell)
        return
    by_shell = _shell(script, arguments, env, tmp_path, shell)
    assert by_shell, f"{shell} ran no vLLM: the case tests nothing"
    assert _reader(script, arguments, env, shell) == by_shell


def test_under_sh_the_bash_syntax_the_reader_refuses_does_something_else(tmp_path):
    """Why `[[ ]]` under `sh -c` is refused and not read as bash would: dash takes the other branch."""
    script = (CASES / "sh-double-brackets.sh").read_text()
    env = {**CONTAINER_ENV, "NODE_RANK": "0"}
    (tmp_path / "bash").mkdir()
    (tmp_path / "sh").mkdir()
    [(by_bash, _)] = _shell(script, (), env, tmp_path / "bash", "bash")
    [(by_dash, _)] = _shell(script, (), env, tmp_path / "sh", "sh")
    assert by_bash == ["org/m", "--port", "8000"] and by_dash == ["org/m", "--headless"]


def test_home_is_what_docker_gives_the_container():
    """Docker sets HOME when the container's environment does not: root's, unless compose sets a
    `user:` whose home the image's passwd decides (then a `~` that decides an argument is refused)."""
    script = ["bash", "-c", "vllm serve org/m --download-dir ~/models"]
    as_root = ComposeService("vllm", {"command": script}, {"NODE_RANK": "0"}, "test")
    assert rank_run(as_root, 0, "compose.yaml").value("--download-dir") == "/root/models"
    as_user = ComposeService("vllm", {"command": script, "user": "1000:1000"}, {"NODE_RANK": "0"}, "test")
    with pytest.raises(ParseError, match=r"the home directory `~` \(HOME is not in the container's environment\)"):
        rank_run(as_user, 0, "compose.yaml")
