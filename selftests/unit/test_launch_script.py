"""A launch script's start (gb10check/deployment/launch/from_script.py): one deployment written as compose and as a
`docker run` launcher gives one launch plan; a compose launcher's shell sets the rank; what cannot be told
apart before start is refused, naming the lines and what would pick the path."""

from __future__ import annotations

from pathlib import Path

import pytest

from gb10check.deployment.compose_fallback import load_service
from gb10check.deployment.launch.docker_run import run_plan
from gb10check.deployment.launch.from_compose import compose_plan
from gb10check.deployment.launch.from_script import read_script, started_by, started_remotely
from gb10check.deployment.launch.rules import RULES, Context, NotApplicable
from gb10check.errors import ParseError
from gb10check.inventory import parse_inventory
from gb10check.reading.parsers.docker import Image
from selftests.unit.test_launch_plan import COMPOSE, IMAGE

ROOT = Path(__file__).resolve().parents[2]
DOCKER_RUN = (ROOT / "sim" / "deploy" / "docker-run.sh").read_text()
HOST_IP = {0: "169.254.94.252", 1: "169.254.159.206"}
CONTAINER, REF = "vllm-qwen38", "vllm/vllm-openai:qwen38-flash-next"
IMG = Image(IMAGE.id, (REF,), IMAGE.layers, IMAGE.architecture, IMAGE.env, IMAGE.entrypoint, IMAGE.cmd)


def _compose(rank: int, shell: dict[str, str] | None = None, dotenv: dict[str, str] | None = None, text=COMPOSE):
    env = dotenv if dotenv is not None else {
        "MODEL_ID": "Qwen/Qwen3.8-Flash-Next-FP8", "NODE_RANK": str(rank), "VLLM_HOST_IP": HOST_IP[rank]
    }  # fmt: skip
    svc = load_service(
        text, {**env, **(shell or {})}, container=CONTAINER, what="/d/c.yml", compose_dir="/d",
        env_files={"/d/.env": env},
    )  # fmt: skip
    return compose_plan(
        svc, node=f"n{rank}", rank=rank, compose_file="/d/c.yml", compose_text=text,
        env_files={"/d/.env": "".join(f"{k}={v}\n" for k, v in env.items())}, image=IMG, image_ref=REF,
        host_file=lambda _p: None, shell_env=shell, shell_source="launch.sh:1" if shell else "",
    )  # fmt: skip


def _docker_run(rank: int, script: str = DOCKER_RUN, args: list[str] | None = None):
    reading = read_script(script, script="/home/lenovo/vllm/launch.sh", args=args or [str(rank)], env={}, files=None)
    start = started_by(reading, container=CONTAINER, image=REF)
    assert start.docker_run is not None
    ran, run = start.docker_run
    return run_plan(run, ran, node=f"n{rank}", rank=rank, image=IMG, host_file=lambda _p: None)


def _same(plan) -> dict[str, object]:
    """What a plan says vLLM gets: its environment, its command, its container (not where each is written)."""
    c = plan.container
    return {
        "env": {k: s.value for k, s in plan.environment.items()},
        "model": plan.vllm.model,
        "options": plan.vllm.options,
        "container": {
            f: getattr(c, f).value for f in ("network", "ipc", "shm_size", "cap_add", "devices", "memlock", "memory")
        },
        "mounts": [m.target for m in c.mounts],
        "image": plan.image.value,
    }


@pytest.mark.parametrize("rank", [0, 1])
def test_compose_and_docker_run_of_one_deployment_give_one_plan(rank):
    compose, run = _compose(rank), _docker_run(rank)
    assert _same(run) == _same(compose)
    assert run.launcher == "docker run" and compose.launcher == "compose"
    assert run.environment["NODE_RANK"].source.where == "/home/lenovo/vllm/launch.sh"  # the line to change
    assert run.environment["NCCL_SOCKET_IFNAME"].source.line == run.command.line


def test_every_rule_judges_the_two_alike():
    inventory = parse_inventory((ROOT / "fixtures" / "cluster.example.toml").read_text(), "cluster.example.toml")
    for rank in (0, 1):
        node = inventory.nodes[rank].name
        a, b = _compose(rank), _docker_run(rank)
        for rule in RULES:
            verdicts = []
            for plan in (a, b):
                plan = plan.__class__(**{**plan.__dict__, "node": node})
                try:
                    v = rule.check(
                        Context(plan=plan, inventory=inventory, mem_total=128 * 2**30, ports=None, netdevs=None)
                    )
                    verdicts.append((v.outcome, v.found))
                except NotApplicable as e:
                    verdicts.append(("n/a", str(e)))
            assert verdicts[0][0] == verdicts[1][0], (rule.id, verdicts)


def test_the_launchers_shell_sets_the_rank_compose_interpolates():
    script = "#!/bin/sh\ncd /d\nNODE_RANK=1 HEADLESS=1 docker compose --env-file .env up -d vllm\n"
    reading = read_script(script, script="/d/up.sh", args=[], env={}, files=None)
    start = started_by(reading, container=CONTAINER, image=REF)
    up = start.compose_up
    assert up is not None and up.service == "vllm" and up.env_files == (".env",) and up.ran.line == 3
    assert up.env["NODE_RANK"] == "1"
    dotenv = {"MODEL_ID": "Qwen/Qwen3.8-Flash-Next-FP8", "NODE_RANK": "0", "VLLM_HOST_IP": HOST_IP[1]}
    # the launcher's compose passes the rank on from the shell (Compose: the shell wins over .env)
    text = COMPOSE.replace("      - MASTER_ADDR=", "      - NODE_RANK=${NODE_RANK:-0}\n      - MASTER_ADDR=")
    assert _compose(1, dotenv=dotenv, text=text).vllm.options["--node-rank"] == "0"  # without it: rank 0
    plan = _compose(1, shell={"NODE_RANK": up.env["NODE_RANK"]}, dotenv=dotenv, text=text)
    assert plan.vllm.options["--node-rank"] == "1" and "--headless" in plan.vllm.options
    assert "launcher's shell" in plan.read_by


def test_the_throwaway_run_before_the_real_one_is_not_the_rank():
    script = (
        f"docker run --rm --gpus all {REF} nvidia-smi -L\n"
        f"docker run -d --name {CONTAINER} --network host {REF} vllm serve m --headless\n"
    )
    start = started_by(read_script(script, script="/s.sh", args=[], env={}, files=None), container=CONTAINER, image=REF)
    assert start.docker_run is not None and start.docker_run[0].line == 2


def test_a_branch_only_the_start_decides_is_named_with_what_picks_it():
    script = (
        'if [ "$ROLE" = head ]; then\n'
        f"  docker run -d --name {CONTAINER} {REF} vllm serve m --port 8000\n"
        "else\n"
        f"  docker run -d --name {CONTAINER} {REF} vllm serve m --headless\n"
        "fi\n"
    )
    with pytest.raises(ParseError, match=r"different containers on different paths \(lines 2, 4\).*launch.args"):
        started_by(read_script(script, script="/s.sh", args=[], env={}, files=None), container=CONTAINER, image=REF)
    one = read_script(script, script="/s.sh", args=[], env={"ROLE": "head"}, files=None)
    start = started_by(one, container=CONTAINER, image=REF)
    assert start.docker_run is not None and start.docker_run[0].line == 2


def test_a_script_that_starts_nothing_here_says_so():
    script = 'for h in spark1 spark2; do ssh "$h" docker run -d img vllm serve m; done\n'
    with pytest.raises(ParseError, match="ssh HOST docker run"):
        started_by(read_script(script, script="/s.sh", args=[], env={}, files=None), container=CONTAINER, image=REF)


def test_a_usage_guard_that_stops_the_script_is_no_start():
    with pytest.raises(ParseError, match="exit 2"):
        started_by(read_script(DOCKER_RUN, script="/s.sh", args=[], env={}, files=None), container=CONTAINER, image=REF)


def test_a_check_that_the_container_already_runs_is_a_fork_not_a_success():
    """`docker ps | grep -q NAME` answers a question: assumed to succeed (as an action is), it said the
    container ran already and the launcher skipped its start on every path (eugr's launch-cluster.sh)."""
    script = (
        "check() {\n"
        "  if docker ps --format '{{.Names}}' | grep -q \"^vllm$\"; then RUNNING=1; return 0; fi\n"
        '  if ssh peer "docker ps | grep -q vllm"; then RUNNING=1; fi\n'
        "}\n"
        "check\n"
        '[ -n "${RUNNING:-}" ] && exit 0\n'
        f"docker run -d --name {CONTAINER} --network host {REF} vllm serve m\n"
    )
    reading = read_script(script, script="/s.sh", args=[], env={}, files=None)
    taken = [p.taken for p in reading.paths]
    assert any(any("grep -q" in t and t.endswith("false") for t in x) for x in taken), taken
    assert any("ssh peer" in t for x in taken for t in x), taken
    start = started_by(reading, container=CONTAINER, image=REF)
    assert start.docker_run is not None and start.docker_run[0].line == 7


def test_a_function_from_a_sourced_file_is_named_by_its_own_text():
    lib = 'pick() {\n  if [[ "$(hostname)" == head ]]; then ROLE=head; fi\n}\n'
    script = (
        f'source "$(dirname "${{BASH_SOURCE[0]}}")/lib.sh"\npick\ndocker run -d --name {CONTAINER} {REF} vllm serve m\n'
    )
    reading = read_script(script, script="/d/s.sh", args=[], env={}, files={"/d/lib.sh": lib}.get)
    assert [p.taken for p in reading.paths] == [
        ('`[[ "$(hostname)" == head ]];` (line 2) true',),
        ('`[[ "$(hostname)" == head ]];` (line 2) false',),
    ]


def test_a_file_the_reading_was_given_exists_for_the_scripts_tests():
    script = (
        'DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"\n'
        'if [ -f "$DIR/config.local.env" ]; then source "$DIR/config.local.env"; fi\n'
        f'docker run -d --name "$NAME" {REF} vllm serve m\n'
    )
    given = read_script(script, script="/d/s.sh", args=[], env={}, files={"/d/config.local.env": "NAME=vllm\n"}.get)
    assert len(given.paths) == 1 and given.paths[0].ran[-1].argv[4] == "vllm"
    unknown = read_script(script, script="/d/s.sh", args=[], env={}, files=None)
    assert len(unknown.paths) == 2  # not given: on the node it may be there or not


def _over_ssh(script: str) -> str:
    """The sim's docker run launcher as a head would send it: the same docker run, as one line over ssh."""
    head, _, _ = script.partition("docker rm -f vllm-qwen38")
    sent = (
        "docker run -d --name vllm-qwen38 --network host --ipc host --restart no "
        "--device /dev/infiniband:/dev/infiniband --cap-add IPC_LOCK --ulimit memlock=-1 --ulimit stack=67108864 "
        "--memory 105g -v ${HF:-/home/lenovo/vllm/huggingface}:/root/.cache/huggingface -e MASTER_ADDR=169.254.94.252 "
        "-e MASTER_PORT=29501 ${NCCL_ENV[*]} -e HF_HUB_OFFLINE=1 -e MODEL_ID=$MODEL_ID -e NODE_RANK=$RANK "
        "-e VLLM_HOST_IP=$HOST_IP --entrypoint vllm $IMAGE serve ${common[*]} ${role[*]}"
    )
    return head + f'ssh -o BatchMode=yes -p 22 lenovo@169.254.159.206 "{sent}"\nssh spark-other "docker run -d img x"\n'


def test_a_node_the_head_starts_over_ssh_has_the_plan_of_its_own_docker_run():
    reading = read_script(
        _over_ssh(DOCKER_RUN), script="/h/head.sh", args=["1"], env={"HF": "/home/lenovo/vllm/huggingface"}, files=None
    )
    with pytest.raises(ParseError, match=r"no path through the script runs `docker run`.*launch.runs_on"):
        started_by(reading, container=CONTAINER, image=REF)
    start = started_remotely(reading, hosts=["n1", "169.254.159.206"], container=CONTAINER, image=REF)
    assert start.docker_run is not None
    ran, run = start.docker_run
    assert ran.line == DOCKER_RUN.partition("docker rm -f")[0].count("\n") + 1 and ran.script == "/h/head.sh"
    sent = run_plan(run, ran, node="n1", rank=1, image=IMG, host_file=lambda _p: None)
    assert _same(sent) == _same(_docker_run(1))
    with pytest.raises(ParseError, match=r"sends this node \(by n7, 10.0.0.7\) a command over ssh"):
        started_remotely(reading, hosts=["n7", "10.0.0.7"], container=CONTAINER, image=REF)


def test_a_value_decided_at_start_in_what_ssh_sends_stays_one_deferred_word():
    """The head's own unknown (HF not in its environment) reaches the node inside the sent line: the remote
    reading keeps it decided at start in its place and reads every other word."""
    reading = read_script(_over_ssh(DOCKER_RUN), script="/h/head.sh", args=["1"], env={}, files=None)
    start = started_remotely(reading, hosts=["169.254.159.206"], container=CONTAINER, image=REF)
    assert start.docker_run is not None
    _, run = start.docker_run
    assert run.last("--network") == "host" and run.image == REF
    mounts = [v for k, v in run.flags if k in ("-v", "--volume")]
    assert len(mounts) == 1 and str(mounts[0]).endswith(":/root/.cache/huggingface") and not isinstance(mounts[0], str)


def test_runs_on_is_checked_against_the_inventory():
    base = (ROOT / "fixtures" / "cluster.example.toml").read_text()
    for launch, message in (
        ('launch = { script = "/h/head.sh", runs_on = "nowhere" }', "names no node"),
        ('launch = { runs_on = "thinkstationpgx-30" }', "no launch script is named"),
        ('launch = { script = "/h/other.sh", runs_on = "thinkstationpgx-30" }', "launch script is not named"),
    ):
        text = base.replace('user = "lenovo"\n', f'user = "lenovo"\n{launch}\n', 1)
        with pytest.raises(Exception, match=message):
            parse_inventory(text, "t.toml")
