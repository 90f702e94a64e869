"""`gb10check plan` offline on a deployment's files, and the running container read back (docker inspect and
/proc), pure: the plan, its sources and the rules' verdicts."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest

from gb10check.commands import plan as plan_command
from gb10check.deployment.launch.running import parse_processes, running_plan
from gb10check.errors import ParseError
from gb10check.reading.parsers.docker import parse_container_inspect

PROJECT = Path(__file__).resolve().parents[2]
COMPOSE = PROJECT / "sim" / "deploy" / "compose.yml"  # the sim's deployment: two ranks, one compose
DOCKER_RUN = PROJECT / "sim" / "deploy" / "docker-run.sh"  # the same deployment as a `docker run` launcher
EXAMPLE = PROJECT / "fixtures" / "cluster.example.toml"


def _repo(tmp_path: Path, *, rank1: bool = True, script: bool = False) -> Path:
    """A deployment repository: the inventory, the compose and .env, and rank 1's own folder (its compose and
    .env), or the `docker run` launcher."""
    files = tmp_path / "deploy"
    files.mkdir(parents=True)
    shutil.copy(COMPOSE, files / "qwen3.8-flash-next-compose.yml")
    (files / ".env").write_text("MODEL_ID=Qwen/Qwen3.8-Flash-Next-FP8\nNODE_RANK=0\nVLLM_HOST_IP=169.254.94.252\n")
    if rank1:  # rank 1's own folder: the same compose, its own .env
        own = files / "thinkstationpgx-32"
        own.mkdir()
        shutil.copy(COMPOSE, own / "qwen3.8-flash-next-compose.yml")
        (own / ".env").write_text("MODEL_ID=Qwen/Qwen3.8-Flash-Next-FP8\nNODE_RANK=1\nVLLM_HOST_IP=169.254.159.206\n")
    shutil.copy(DOCKER_RUN, files / "launch.sh")
    text = EXAMPLE.read_text()
    if script:
        text = text.replace(
            'compose_file = "/home/lenovo/vllm/qwen3.8-flash-next-compose.yml"\nenv_file = "/home/lenovo/vllm/.env"\n',
            'launch = { script = "/home/lenovo/vllm/launch.sh" }\n',
        )
        text = text.replace(
            'user = "lenovo"\n',
            'user = "lenovo"\nlaunch = { script = "/home/lenovo/vllm/launch.sh", args = ["1"] }\n',
            1,
        )
        text = text.replace('transport = "local"\n', 'transport = "local"\nlaunch = { args = ["0"] }\n', 1)
    inventory = tmp_path / "cluster.toml"
    inventory.write_text(text)
    return files


def _run(args: list[str]) -> tuple[int, str]:
    out: list[str] = []
    rc = plan_command.main(args, print_=out.append)
    return rc, "".join(out)


def test_offline_compose_each_rank_with_its_sources_and_no_failure(tmp_path):
    files = _repo(tmp_path)
    rc, out = _run(["--cluster", str(tmp_path / "cluster.toml"), "--offline", "--files", str(files)])
    assert rc == 0, out
    assert "rank 0 on thinkstationpgx-30: compose, read by" in out
    assert "rank 1 on thinkstationpgx-32: compose, read by" in out
    compose = files / "qwen3.8-flash-next-compose.yml"
    assert f"network: host   from {compose}:7 (network_mode)" in out
    assert f"NODE_RANK=1   from {files / 'thinkstationpgx-32' / '.env'}:2 (env_file)" in out
    rank1 = out.split("rank 1 on", 1)[1]
    assert "--node-rank 1" in rank1 and "--headless" in rank1
    assert "FAIL" not in out and out.endswith("gb10check plan: no rule fails\n")


def test_offline_json_has_every_rank_value_and_verdict(tmp_path):
    files = _repo(tmp_path)
    rc, out = _run(["--cluster", str(tmp_path / "cluster.toml"), "--offline", "--files", str(files), "--json"])
    data = json.loads(out)
    assert rc == 0 and data["failed"] is False
    rank0, rank1 = data["ranks"]
    env = rank1["plan"]["environment"]
    assert env["NCCL_SOCKET_IFNAME"]["value"] == "enp1s0f0np0"
    assert env["NCCL_SOCKET_IFNAME"]["source"].endswith("qwen3.8-flash-next-compose.yml:27 (environment)")
    assert rank1["plan"]["container"]["memlock"]["value"] == [-1, -1]
    outcomes = {r["rule"]: r["outcome"] for r in rank0["rules"]}
    assert outcomes["headless"] == "pass" and outcomes["socket-ifname"] == "pass"
    # offline the node's devices are not known: the rules that need them say what stood in
    assert all(r["outcome"] in (*plan_command.JUDGED, "skipped", "decided at start", "unknown") for r in rank0["rules"])


def test_offline_a_follower_without_its_rank_fails_with_where_to_change_it(tmp_path):
    files = _repo(tmp_path, rank1=False)  # the folder's one .env for both: NODE_RANK=0
    rc, out = _run(["--cluster", str(tmp_path / "cluster.toml"), "--offline", "--files", str(files)])
    assert rc == 1
    rank1 = out.split("rank 1 on", 1)[1]
    assert "FAIL      topology" in rank1
    assert "gb10check plan: failed: rank 1 (thinkstationpgx-32)" in out


def test_offline_docker_run_launcher_is_the_same_plan(tmp_path):
    files = _repo(tmp_path, rank1=False, script=True)  # one launch.sh for both: its argument is the rank
    rc, out = _run(["--cluster", str(tmp_path / "cluster.toml"), "--offline", "--files", str(files), "--json"])
    assert rc == 0, out
    by_script = json.loads(out)["ranks"]
    compose_files = _repo(tmp_path / "c")
    _, out = _run(
        ["--cluster", str(tmp_path / "c" / "cluster.toml"), "--offline", "--files", str(compose_files), "--json"]
    )
    by_compose = json.loads(out)["ranks"]
    for a, b in zip(by_script, by_compose, strict=True):
        assert a["plan"]["launcher"] == "docker run" and b["plan"]["launcher"] == "compose"
        assert a["plan"]["command"]["argv"] == b["plan"]["command"]["argv"]
        values = {k: v["value"] for k, v in a["plan"]["container"].items() if k != "mounts"}
        assert values == {k: v["value"] for k, v in b["plan"]["container"].items() if k != "mounts"}
        env_a = {k: v["value"] for k, v in a["plan"]["environment"].items()}
        assert env_a == {k: v["value"] for k, v in b["plan"]["environment"].items()}


def test_usage_errors_say_what_was_wrong(tmp_path):
    files = _repo(tmp_path)
    cluster = str(tmp_path / "cluster.toml")
    assert _run(["--cluster", cluster, "--files", str(files)])[0] == 4  # --files without --offline
    assert _run(["--cluster", cluster, "--offline", "--files", str(tmp_path / "nope")])[0] == 4
    assert _run(["--cluster", cluster, "--offline", "--node", "spark-9"])[0] == 4
    assert _run(["--cluster", str(tmp_path / "missing.toml"), "--offline"])[0] == 4
    assert _run(["--running", "--offline"])[0] == 4


def test_a_missing_file_is_the_rank_s_error_not_a_crash(tmp_path):
    files = _repo(tmp_path)
    (files / "qwen3.8-flash-next-compose.yml").unlink()
    rc, out = _run(["--cluster", str(tmp_path / "cluster.toml"), "--offline", "--files", str(files)])
    assert rc == 1
    assert "the launch plan could not be read (files on this machine)" in out
    assert "qwen3.8-flash-next-compose.yml" in out


def test_secrets_in_the_plan_are_masked(tmp_path):
    files = _repo(tmp_path)
    token = "hf_" + "a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwX"
    (files / ".env").write_text((files / ".env").read_text() + f"HF_TOKEN={token}\n")
    _, out = _run(["--cluster", str(tmp_path / "cluster.toml"), "--offline", "--files", str(files)])
    assert token not in out and "HF_TOKEN=***" in out


# -- the running container, as Docker's inspect and /proc show it -------------------------------------------
def _b64(words: list[str]) -> str:
    return base64.b64encode("".join(f"{w}\0" for w in words).encode()).decode()


# the fields of Docker Engine's ContainerJSON (moby api/types/container) the reader takes
INSPECT = {
    "Id": "4f1c",
    "Name": "/vllm-head",
    "State": {"Status": "running", "Running": True, "Pid": 4242, "StartedAt": "2026-12-01T10:00:00Z"},
    "Config": {
        "Image": "nvcr.io/nvidia/vllm:25.11-py3",
        "Env": ["PATH=/usr/bin", "NCCL_SOCKET_IFNAME=enp1s0f1np1", "VLLM_HOST_IP=192.168.100.10"],
        "Entrypoint": ["/opt/nvidia/nvidia_entrypoint.sh"],
        "Cmd": ["bash", "-c", "vllm serve $MODEL"],
        "Labels": {},
    },
    "HostConfig": {
        "NetworkMode": "host",
        "IpcMode": "host",
        "ShmSize": 67108864,
        "Privileged": True,
        "CapAdd": None,
        "Devices": [],
        "Ulimits": [{"Name": "memlock", "Soft": -1, "Hard": -1}],
        "RestartPolicy": {"Name": "no", "MaximumRetryCount": 0},
        "Memory": 0,
        "DeviceRequests": [{"Driver": "", "Count": -1, "Capabilities": [["gpu"]]}],
        "Runtime": "runc",
    },
    "Mounts": [
        {"Type": "bind", "Source": "/home/u/.cache/huggingface", "Destination": "/root/.cache/huggingface", "RW": True}
    ],
}


def _processes(env: list[str]) -> str:
    argv = ["/usr/bin/python3", "/usr/local/bin/vllm", "serve", "Qwen/Qwen3-8B", "--tensor-parallel-size", "2"]
    first = ["/opt/nvidia/nvidia_entrypoint.sh", "bash", "-c", "vllm serve $MODEL"]
    return f"gb10check-proc 1 {_b64(first)} {_b64(env)}\ngb10check-proc 97 {_b64(argv)} {_b64(env)}\n"


def test_the_running_vllm_process_is_the_plan():
    c = parse_container_inspect(json.dumps([INSPECT]))
    assert c is not None
    env = ["PATH=/usr/bin", "NCCL_SOCKET_IFNAME=enp1s0f1np1", "VLLM_HOST_IP=192.168.100.10", "MODEL=Qwen/Qwen3-8B"]
    plan = running_plan(c, parse_processes(_processes(env)), node="spark-1", rank=0)
    assert plan.launcher == "running container" and "/proc/97" in plan.read_by
    assert plan.vllm.model_name == "Qwen/Qwen3-8B" and plan.vllm.value("--tensor-parallel-size") == "2"
    assert plan.container.network.known() == "host" and plan.container.all_capabilities
    assert plan.container.memlock.known() == (-1, -1) and plan.container.gpus.known() == "all"
    assert plan.env("NCCL_SOCKET_IFNAME") == "enp1s0f1np1"
    assert str(plan.env_source("MODEL")) == "the running process (pid 97 in vllm-head) (/proc/PID/environ)"
    assert str(plan.env_source("VLLM_HOST_IP")) == "docker inspect vllm-head (Config.Env)"


def test_without_processes_the_container_command_is_read():
    c = parse_container_inspect(json.dumps([INSPECT]))
    assert c is not None
    plan = running_plan(c, None, node="spark-1", rank=0)
    assert plan.read_by == "docker inspect vllm-head"
    assert plan.env("NCCL_SOCKET_IFNAME") == "enp1s0f1np1"


def test_an_inspect_without_host_config_is_no_evidence():
    body = {k: v for k, v in INSPECT.items() if k != "HostConfig"}
    c = parse_container_inspect(json.dumps([body]))
    assert c is not None
    with pytest.raises(ParseError, match="no HostConfig"):
        running_plan(c, None, node="spark-1", rank=0)


def test_processes_lines_that_are_not_base64_are_refused_with_the_line():
    with pytest.raises(ParseError, match="not base64"):
        parse_processes("gb10check-proc 1 !!!notbase64 \n")
    assert parse_processes("noise\n") == []


RAY = Path(__file__).resolve().parents[1] / "data" / "launchers" / "ray-docker-run.sh"


def test_a_ray_launcher_is_read_head_and_worker_and_fails_nothing(tmp_path):
    """A Ray launch script (the head's container runs `ray start --head && vllm serve ... --distributed-executor-
    backend ray`, the worker's `ray start --block --address=HEAD:6379`): the head's plan is its vLLM, the
    worker's a Ray worker whose vLLM flags are the head's to judge (skipped, saying so), nothing failed."""
    files = tmp_path / "deploy"
    files.mkdir()
    shutil.copy(RAY, files / "launch.sh")
    text = EXAMPLE.read_text()
    text = text.replace(
        'compose_file = "/home/lenovo/vllm/qwen3.8-flash-next-compose.yml"\nenv_file = "/home/lenovo/vllm/.env"\n',
        'launch = { script = "/home/lenovo/vllm/launch.sh" }\n',
    )
    text = text.replace('transport = "local"\n', 'transport = "local"\nlaunch = { args = ["head"] }\n', 1)
    worker = 'launch = { script = "/home/lenovo/vllm/launch.sh", args = ["worker", "169.254.94.252"] }'
    text = text.replace('user = "lenovo"\n', f'user = "lenovo"\n{worker}\n', 1)
    (tmp_path / "cluster.toml").write_text(text)
    rc, out = _run(["--cluster", str(tmp_path / "cluster.toml"), "--offline", "--files", str(files), "--json"])
    head, follower = json.loads(out)["ranks"]
    assert rc == 0, out
    assert head["plan"]["role"] == "vllm" and "--distributed-executor-backend ray" in head["plan"]["command"]["argv"]
    assert follower["plan"]["role"] == "ray worker"
    assert follower["plan"]["command"]["argv"] == "ray start --block --address=169.254.94.252:6379"
    skipped = {r["rule"]: r["why"] for r in follower["rules"] if r["outcome"] == "skipped"}
    assert "headless" in skipped and "Ray worker" in skipped["headless"]
    assert all(r["outcome"] != "fail" for r in head["rules"] + follower["rules"])
    limit = {r["rule"]: r for r in head["rules"]}["memory-limit"]
    assert limit["outcome"] == "advice" and "MemTotal 0.00" not in limit["expected"]  # offline: no memory known


SIM_RAY = PROJECT / "sim" / "deploy" / "ray.sh"  # the same deployment as a Ray launcher
DISTRIBUTION = ("--nnodes", "--node-rank", "--master-addr", "--master-port", "--distributed-executor-backend")


def test_the_same_deployment_as_a_ray_launch_is_the_same_plan(tmp_path):
    """sim/deploy's deployment written three ways reads as one plan: the Ray launch's containers have the
    compose's settings and environment, its head runs the compose's rank-0 vLLM (Ray placing the ranks in
    place of --nnodes, --node-rank and the master address), its worker is a Ray worker; nothing fails."""
    files = tmp_path / "deploy"
    files.mkdir()
    shutil.copy(SIM_RAY, files / "launch.sh")
    text = EXAMPLE.read_text().replace(
        'compose_file = "/home/lenovo/vllm/qwen3.8-flash-next-compose.yml"\nenv_file = "/home/lenovo/vllm/.env"\n',
        'launch = { script = "/home/lenovo/vllm/launch.sh" }\n',
    )
    text = text.replace('transport = "local"\n', 'transport = "local"\nlaunch = { args = ["head"] }\n', 1)
    worker = 'launch = { script = "/home/lenovo/vllm/launch.sh", args = ["worker", "169.254.94.252"] }'
    (tmp_path / "cluster.toml").write_text(text.replace('user = "lenovo"\n', f'user = "lenovo"\n{worker}\n', 1))
    rc, out = _run(["--cluster", str(tmp_path / "cluster.toml"), "--offline", "--files", str(files), "--json"])
    assert rc == 0, out
    by_ray = json.loads(out)["ranks"]
    compose_files = _repo(tmp_path / "c")
    _, out = _run(
        ["--cluster", str(tmp_path / "c" / "cluster.toml"), "--offline", "--files", str(compose_files), "--json"]
    )
    by_compose = json.loads(out)["ranks"]
    for ray, compose in zip(by_ray, by_compose, strict=True):
        values = {k: v["value"] for k, v in ray["plan"]["container"].items() if k != "mounts"}
        assert values == {k: v["value"] for k, v in compose["plan"]["container"].items() if k != "mounts"}
        env = {k: v["value"] for k, v in ray["plan"]["environment"].items()}
        assert env == {k: v["value"] for k, v in compose["plan"]["environment"].items()}
        assert all(r["outcome"] != "fail" for r in ray["rules"]), ray["rules"]
    head, worker_plan = by_ray[0]["plan"], by_ray[1]["plan"]
    assert head["role"] == "vllm" and worker_plan["role"] == "ray worker"

    def without_distribution(argv: str) -> list[str]:
        words, out, skip = argv.split(), [], False
        for word in words:
            if skip:
                skip = False
            elif word in DISTRIBUTION:
                skip = True
            else:
                out.append(word)
        return out

    assert "--distributed-executor-backend ray" in head["command"]["argv"]
    assert without_distribution(head["command"]["argv"]) == without_distribution(
        by_compose[0]["plan"]["command"]["argv"]
    )
    assert (
        worker_plan["command"]["argv"]
        == "ray start --block --address=169.254.94.252:6379 --node-ip-address=169.254.159.206"
    )
