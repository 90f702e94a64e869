"""`gb10check plan` on the simulated cluster: the launch plan read from the nodes' files (over SSH, with each
node's Docker Compose) is the plan read back from the running containers (docker inspect and the vLLM
process's /proc), for a compose launcher and for a launcher script that sets the rank in its shell; a fault
fails in both."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the simulated cluster needs root")

# what Docker fills in where the launcher says nothing: the same container, whichever way it is read
DOCKER_DEFAULTS: dict[str, tuple[object, ...]] = {
    "restart": ("no",),
    "privileged": (False,),
    "shm_size": (64 * 1024**2,),
    "runtime": ("runc",),
}
IMAGE_ENV = {"PATH", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES"}  # the image's own (not the launcher's)


def _plan(scenario: str, *args: str) -> tuple[int, dict[str, Any]]:
    command = Path(sys.executable).with_name("gb10check")
    env = {k: v for k, v in os.environ.items() if k != "GB10_CLUSTER"}
    done = subprocess.run(
        [str(command), "plan", "--sim", scenario, "--json", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def _values(rank: dict[str, Any]) -> dict[str, Any]:
    plan = rank["plan"]
    assert plan is not None, rank["error"]
    container = {
        k: v["value"]
        for k, v in plan["container"].items()
        if k != "mounts" and v["value"] is not None and v["value"] not in DOCKER_DEFAULTS.get(k, ())
    }
    env = {k: v["value"] for k, v in plan["environment"].items() if k not in IMAGE_ENV}
    return {
        "image": plan["image"]["value"],
        "container": container,
        "mounts": plan["container"]["mounts"],
        "env": env,
        "argv": plan["command"]["argv"],
    }


@pytest.mark.parametrize("scenario", ["healthy", "compose-launcher-shell-rank", "docker-run-launcher"])
def test_the_running_containers_are_the_plan_the_files_make(scenario):
    rc_files, files = _plan(scenario)
    rc_running, running = _plan(scenario, "--running")
    assert (rc_files, rc_running) == (0, 0), (files, running)
    for a, b in zip(files["ranks"], running["ranks"], strict=True):
        assert b["plan"]["launcher"] == "running container"
        assert _values(a) == _values(b)
        assert all(r["outcome"] != "fail" for r in a["rules"] + b["rules"])
    follower = running["ranks"][1]["plan"]
    assert "--headless" in follower["command"]["argv"]
    assert follower["command"]["source"].startswith("the running process (pid 1 in vllm-qwen38)")


def test_a_follower_without_headless_fails_both_ways():
    for args in ((), ("--running",)):
        rc, out = _plan("compose-follower-not-headless", *args)
        assert rc == 1 and out["failed"]
        follower = out["ranks"][1]
        verdicts = {r["rule"]: r for r in follower["rules"]}
        assert verdicts["headless"]["outcome"] == "fail", args
        assert verdicts["headless"]["hint"] == "follower-not-headless"
        assert verdicts["headless"]["where"]
