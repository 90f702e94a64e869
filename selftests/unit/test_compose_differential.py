"""gb10check's fallback compose reader against the real Docker Compose v2, case by case.

Each folder of selftests/data/compose_cases holds a compose file, its .env (and whatever else the
case needs) and case.toml: what it covers, the container name, whether Compose accepts it, and
whether the fallback reader agrees or refuses (with the words of its refusal); `absent` when Compose
reads the file but would not run the deployment's service (both readers must say so). Compose
(.venv/bin/docker-compose, installed by bin/setup) runs `config --format json` in a copy of the
folder with an empty environment; the fallback reads the same files as on a node without the
plugin (the compose file, the inventory's .env, the override files beside it). Field by field they
must agree, including what each rank's script runs and the environment vLLM gets; where Compose
refuses a file, the fallback must refuse it too. Where Compose v1 differs, case.toml's `v1` says
how; the suite follows v2.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from gb10check.deployment.compose import ComposeService, parse_compose_config
from gb10check.deployment.compose_fallback import load_service, parse_dotenv
from gb10check.deployment.launch.container_command import argv_of, container_started
from gb10check.errors import ParseError
from gb10check.reading.probes import DEFAULT_NAMES, OVERRIDE_NAMES

PROJECT = Path(__file__).resolve().parents[2]
CASES = PROJECT / "selftests" / "data" / "compose_cases"
COMPOSE = PROJECT / ".venv" / "bin" / "docker-compose"
ULIMITS = ("memlock", "stack", "nofile")


def _compose(folder: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(folder)}  # no variable of this machine leaks into a case
    version = subprocess.run([COMPOSE, "version", "--short"], capture_output=True, text=True, env=env, timeout=30)
    run = subprocess.run(
        [COMPOSE, "config", "--format", "json"], cwd=folder, capture_output=True, text=True, env=env, timeout=30
    )
    return subprocess.CompletedProcess(run.args, run.returncode, version.stdout + run.stdout, run.stderr)


def _fallback(folder: Path, container: str) -> ComposeService:
    name = next(n for n in DEFAULT_NAMES if (folder / n).exists())
    dotenv = parse_dotenv((folder / ".env").read_bytes().decode(), ".env")
    return load_service(
        (folder / name).read_bytes().decode(),
        dotenv,
        container=container,
        what=name,
        compose_dir=str(folder),
        env_files={str(folder / ".env"): dotenv},
        overrides=tuple(o for o in OVERRIDE_NAMES if (folder / o).exists()),
    )


def _runs(service: ComposeService) -> object:
    """What the container's command starts with its environment, or the refusal, as data."""
    try:
        argv = argv_of(_words(service.get("entrypoint")), _words(service.get("command")), ("vllm", "serve"), None)
        launch = container_started(
            argv, dict(service.environment), what="c", files=lambda _p: None, env_complete=True, env_missing=""
        )
        return [(launch.vllm.argv, launch.env)] if launch.vllm else [("no vllm", launch.notes)]
    except ParseError as exc:
        return f"refused: {exc}"


def _words(value: object) -> list[str] | None:
    if value is None:
        return None
    return [str(v) for v in value] if isinstance(value, list) else shlex.split(str(value))


def _fields(service: ComposeService) -> dict[str, object]:
    return {
        "environment": service.environment,
        "image": service.image,
        "memory": service.memory_limit,
        "ulimits": {u: service.ulimit(u) for u in ULIMITS},
        "devices": service.devices,
        "capabilities": service.cap_add,
        "privileged": service.privileged,
        "restart": service.restart,
        "ipc": service.get("ipc"),
        "network_mode": service.get("network_mode"),
        "argv": service.script_argv,
        "runs": _runs(service),
    }


CASE_DIRS = sorted(p for p in CASES.iterdir() if (p / "case.toml").is_file())


def test_the_cases_cover_what_the_compose_issue_names():
    names = {p.name for p in CASE_DIRS}
    for needed in (
        "bare-name-list", "second-env-file", "dotenv-references", "override-file", "mem-limit-and-deploy-equal",
        "container-name-interpolated", "yaml-booleans", "privileged", "cap-add-all", "script-exports",
        "script-multiline-quotes", "script-apostrophe-comment", "defaults-colon-vs-plain", "dollar-dollar",
        "dotenv-crlf", "dotenv-bom", "yaml-escaped-quotes", "command-string", "command-list",
        "ulimits-int-and-mapping",
    ):  # fmt: skip
        assert needed in names


@pytest.mark.skipif(not COMPOSE.is_file(), reason=f"no Docker Compose at {COMPOSE}: bin/setup installs it")
@pytest.mark.parametrize("folder", CASE_DIRS, ids=[p.name for p in CASE_DIRS])
def test_the_fallback_reads_each_case_as_docker_compose_does(folder, tmp_path):
    case = tomllib.loads((folder / "case.toml").read_text())
    work = tmp_path / folder.name
    shutil.copytree(folder, work)
    (work / "case.toml").unlink()
    real = _compose(work)
    if case["compose"] == "rejects":
        assert real.returncode != 0, f"Compose accepted a case that says it rejects: {real.stdout[:300]}"
    else:
        assert real.returncode == 0, real.stderr
    if case["fallback"] == "refuses":
        with pytest.raises(ParseError, match=case["refusal"]):
            _fallback(work, case["container"])
        return
    assert case["compose"] == "accepts", "a case Compose rejects must be refused by the fallback too"
    if "absent" in case:  # Compose reads the file; the deployment's service is not among what it would run
        with pytest.raises(ParseError, match=case["absent"]):
            parse_compose_config(real.stdout, container=case["container"], what="config")
        with pytest.raises(ParseError, match=case["absent"]):
            _fallback(work, case["container"])
        return
    by_compose = parse_compose_config(real.stdout, container=case["container"], what="config")
    by_fallback = _fallback(work, case["container"])
    assert by_compose.reader.startswith("docker compose 2.") and by_fallback.reader == "gb10check's own reader"
    assert _fields(by_fallback) == _fields(by_compose)


def test_the_script_reader_follows_what_the_cases_say():
    """Spot checks that the agreement above is agreement on the right answer."""
    exports = _fallback(CASES / "script-exports", "vllm")
    [(_, env)] = _runs(exports)  # type: ignore[misc]
    assert env["NCCL_IB_HCA"] == "=rocep1s0f0,roceP2p1s0f0" and env["NCCL_IB_GID_INDEX"] == "3"
    assert env["NCCL_DEBUG"] == "INFO" and env["NCCL_SOCKET_IFNAME"] == "enp1s0f0np0" and "LOCAL_ONLY" not in env
    multiline = _fallback(CASES / "script-multiline-quotes", "vllm")
    [(argv, _)] = _runs(multiline)  # type: ignore[misc]
    assert argv == ("org/m", "--tensor-parallel-size", "2", "--max-num-seqs", "8", "--port", "20001")
    [(argv, _)] = _runs(_fallback(CASES / "entrypoint-script-with-arguments", "vllm"))  # type: ignore[misc]
    assert argv == ("org/m", "--tensor-parallel-size", "2", "--served-model-name", "two words", "--port", "8000")
    bare = _fallback(CASES / "bare-name-list", "vllm")
    assert bare.environment["NODE_RANK"] == "1"  # from .env, never ''
    booleans = _fallback(CASES / "yaml-booleans", "vllm").environment
    assert (booleans["A"], booleans["C"], booleans["E"], booleans["G"]) == ("yes", "true", "1.5", "1:30")
    assert [argv for argv, _ in _runs(_fallback(CASES / "script-case-rank", "vllm"))] == [("org/m", "--headless")]
    loop = container_started(
        argv_of(
            _words(_fallback(CASES / "script-loop", "vllm").get("entrypoint")),
            _words(_fallback(CASES / "script-loop", "vllm").get("command")),
            None,
            None,
        ),
        {},
        what="c",
        files=lambda _p: None,
        env_complete=True,
        env_missing="",
    )
    assert loop.vllm is not None and loop.vllm.argv == ("org/m",)
    assert any("once it exits, line 1 starts another" in n for n in loop.notes)
