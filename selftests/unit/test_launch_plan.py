"""The launch plan (gb10check/deployment/launch) from a compose service, and what the shell reader makes of the
constructs launchers use (held to real bash case by case in test_script_differential.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gb10check.deployment.compose_fallback import load_service
from gb10check.deployment.launch.from_compose import compose_plan
from gb10check.deployment.launch.process import started
from gb10check.deployment.shell.values import Deferred
from gb10check.deployment.shell.walk import read
from gb10check.errors import DecidedAtStart, ParseError
from gb10check.judging.fit import GIB
from gb10check.reading.parsers.docker import Image

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = (ROOT / "sim" / "deploy" / "compose.yml").read_text()
ENV = {"MODEL_ID": "Qwen/Qwen3.8-Flash-Next-FP8", "VLLM_HOST_IP": "169.254.94.252"}
IMAGE = Image(
    "sha256:1",
    ("vllm/vllm-openai:x",),
    (),
    "arm64",
    ("PATH=/usr/bin", "NCCL_SOCKET_IFNAME=eth0"),
    ("vllm", "serve"),
    None,
)


def _plan(rank: int, compose: str = COMPOSE, image: Image | None = IMAGE, env: dict[str, str] | None = None):
    dotenv = {**ENV, "NODE_RANK": str(rank), **(env or {})}
    svc = load_service(
        compose, dotenv, container="vllm-qwen38", what="c.yml", compose_dir="/d", env_files={"/d/.env": dotenv}
    )
    text = "".join(f"{k}={v}\n" for k, v in dotenv.items())
    return compose_plan(
        svc,
        node=f"n{rank}",
        rank=rank,
        compose_file="/d/c.yml",
        compose_text=compose,
        env_files={"/d/.env": text},
        image=image,
        image_ref="vllm/vllm-openai:x",
        host_file=lambda _p: None,
    )


def _started(script: str, env: dict[str, str] | None = None, **kw):
    return started(read(script, what="s", env=dict(env or {}), **kw), "s")


def test_each_rank_runs_its_branch_with_its_sources():
    for rank in (0, 1):
        plan = _plan(rank)
        run = plan.vllm
        assert run.model == "Qwen/Qwen3.8-Flash-Next-FP8"
        assert run.value("--node-rank") == str(rank) and run.value("--master-addr") == "169.254.94.252"
        assert run.has("--headless") == (rank == 1)
        assert run.value("-cc.cudagraph_mode") == "FULL_DECODE_ONLY"
        c = plan.container
        assert c.restart.value == "no" and c.memory.value == 105 * GIB and c.memlock.value == (-1, -1)
        assert c.network.value == "host" and c.ipc.value == "host" and c.cap_add.value == ("IPC_LOCK",)
    plan = _plan(1)
    hca = plan.env_source("NCCL_IB_HCA")
    assert (hca.where, hca.what) == ("/d/c.yml", "environment")
    assert COMPOSE.splitlines()[hca.line - 1].strip() == "- NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0"
    assert str(plan.env_source("VLLM_HOST_IP")) == "/d/.env:2 (env_file)"
    assert plan.container.memory.source.line == COMPOSE.splitlines().index("    mem_limit: 105G") + 1


def test_the_images_env_is_under_the_compose_and_named_as_such():
    plan = _plan(0)
    assert plan.env("NCCL_SOCKET_IFNAME") == "enp1s0f0np0"  # the compose's wins over the image's eth0
    assert str(plan.env_source("PATH")) == "image ENV (vllm/vllm-openai:qwen38-flash-next)"
    without = re.sub(r"\n      - NCCL_SOCKET_IFNAME=enp1s0f0np0", "", COMPOSE)
    assert _plan(0, without).env("NCCL_SOCKET_IFNAME") == "eth0"  # baked into the image: invisible in any file


def test_without_the_image_an_unset_variable_is_decided_at_start():
    plan = _plan(0, image=None)
    assert not plan.env_complete
    with pytest.raises(DecidedAtStart, match=r"not in the environment read .the ENV of vllm/vllm-openai"):
        plan.env("NCCL_NET")
    assert plan.env("NCCL_IB_DISABLE") == "0"  # what the compose itself sets is known


def test_an_exec_form_command_takes_the_images_entrypoint():
    compose = """services:
  vllm:
    image: vllm/vllm-openai:x
    container_name: vllm-qwen38
    command: ["Qwen/Qwen3.8-Flash-Next-FP8", "-cc.cudagraph_mode=FULL_DECODE_ONLY", "--max-num-seqs", "8"]
"""
    run = _plan(0, compose).vllm
    assert run.entry == "vllm serve" and run.model == "Qwen/Qwen3.8-Flash-Next-FP8"
    assert run.value("-cc.cudagraph_mode") == "FULL_DECODE_ONLY" and run.value("--max-num-seqs") == "8"
    with pytest.raises(DecidedAtStart, match="the image's ENTRYPOINT and CMD"):
        _ = _plan(0, compose, image=None).vllm


@pytest.mark.parametrize("shell", [["/bin/bash", "-lc"], ["sh", "-c"], ["bash", "-l", "-c"], ["/bin/sh", "-ec"]])
def test_a_shell_script_command_is_read_after_the_shells_own_options(shell):
    compose = f"""services:
  vllm:
    image: x
    container_name: vllm-qwen38
    entrypoint: {shell!r}
    command: ["vllm serve org/m --max-num-seqs 4"]
""".replace("'", '"')
    run = _plan(0, compose).vllm
    assert (run.model, run.value("--max-num-seqs")) == ("org/m", "4")


def test_conditions_on_an_unset_variable_are_bashs_when_the_environment_is_whole():
    script = 'if [ "$R" -eq 0 ]; then vllm serve a --port 1; elif [ "$R" = 1 ]; then vllm serve b --headless; fi'
    assert _started(script, {"R": "1"}).vllm.model == "b"
    assert _started(script, {"R": "2"}).vllm is None  # neither branch: no vLLM, said so
    split = _started(script, {}, env_complete=False, env_missing="the image's ENV")
    assert isinstance(split.vllm.model, Deferred) and "depends on" in split.vllm.model.why
    with pytest.raises(ParseError, match="bash cannot parse it"):
        _started("if [ 1 = 1 ]; then vllm serve a", {})


@pytest.mark.parametrize(
    ("script", "model", "note"),
    [
        ("serve() { vllm serve m; }\nserve", "m", None),
        ("while true; do vllm serve m; done", "m", "a restart loop"),
        ("false || vllm serve m", "m", None),
        ("M=$(cat /model)\nvllm serve $M", "<$(cat /model)>", None),
    ],
)
def test_what_launchers_do_is_read_or_named(script, model, note):
    launch = _started(script)
    assert str(launch.vllm.model) == model
    if note:
        assert any(note in n for n in launch.notes)


def test_a_value_decided_at_start_skips_what_needs_it_and_names_it():
    launch = _started('vllm serve m --port "$(cat /etc/port)" --max-num-seqs 8')
    assert launch.vllm.value("--max-num-seqs") == "8"
    with pytest.raises(DecidedAtStart, match=r"--port of `vllm serve` is decided at start \(the command substitution"):
        launch.vllm.value("--port")
    extra = _started("vllm serve m $EXTRA_ARGS", {}, env_complete=False, env_missing="x")
    with pytest.raises(DecidedAtStart, match="EXTRA_ARGS"):
        extra.vllm.has("--headless")


def test_the_script_reader_follows_waits_exports_and_prefixes():
    script = (
        "set -euo pipefail\n"
        "until nc -z 10.0.0.1 29500; do sleep 1; done  # wait for rank 0 (a loop that sets nothing)\n"
        "export NCCL_DEBUG\nNCCL_DEBUG=WARN\nLOCAL=1\nHOST=$(hostname)\n"
        "nvidia-smi && NCCL_IB_HCA==a,b exec vllm serve m --tag ${LOCAL:-x}-${UNSET:-d} 2>&1 | tee /tmp/log\n"
    )
    launch = _started(script, {"NODE_RANK": "0"})
    assert launch.vllm.argv == ("m", "--tag", "1-d")
    assert launch.env == {"NODE_RANK": "0", "NCCL_DEBUG": "WARN", "NCCL_IB_HCA": "=a,b"}


def test_two_vllm_at_once_is_refused():
    with pytest.raises(ParseError, match=r"it starts 2 `vllm serve` at once"):
        _started("vllm serve a --port 1 &\nvllm serve b --port 2 &\nwait")
