"""gb10check/reading/collective.py: the throwaway container's command from a rank's launch plan, and a rank's output
read into what it proved (the sim's lines and a real DGX Spark's NCCL lines)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from gb10check.reading.collective import (
    MARK,
    PROGRAM,
    container_name,
    docker_run_argv,
    parse_rank_output,
    remove_command,
)
from selftests.unit.test_launch_script import _compose

DATA = Path(__file__).resolve().parents[1] / "data"


def test_the_container_is_the_ranks_own_with_its_nccl_settings_and_nothing_more():
    plan = _compose(1)
    argv = docker_run_argv(
        plan, image="vllm/vllm-openai:qwen38-flash-next", name=container_name("7-42", 1), world=2,
        master="169.254.94.252", port=29501, join_seconds=60, sizes=[8 << 20, 64 << 20],
    )  # fmt: skip
    assert argv[:9] == ["docker", "run", "--rm", "--pull", "never", "--name", f"{MARK}-7-42-r1", "--label", f"{MARK}=1"]
    assert argv[-5:] == ["--entrypoint", "python3", "vllm/vllm-openai:qwen38-flash-next", "-c", PROGRAM]
    flags = argv[9:-5]
    assert flags[flags.index("--network") : flags.index("--network") + 2] == ["--network", "host"]
    assert "--device" in flags and "/dev/infiniband" in " ".join(flags)
    env = dict(flags[i + 1].split("=", 1) for i, f in enumerate(flags) if f == "-e")
    assert env["NCCL_IB_HCA"] == plan.known_env()["NCCL_IB_HCA"] and env["NCCL_DEBUG"] == "INFO"
    assert env["GB10CHECK_RANK"] == "1" and env["GB10CHECK_MASTER"] == "169.254.94.252"
    assert env["GB10CHECK_SIZES"] == f"{8 << 20},{64 << 20}"
    assert "MODEL_ID" not in env  # only what NCCL, Gloo, vLLM and torch read
    assert remove_command(container_name("7-42", 1)) == f"docker rm -f {MARK}-7-42-r1"
    compile(PROGRAM, "PROGRAM", "exec")  # the program the image's python3 runs is Python


def _own(kind: str, **what: object) -> str:
    return f"{MARK} {kind} {json.dumps(what)}"


def test_a_rank_that_ran_says_what_it_proved():
    text = "\n".join(
        [
            _own("started", rank=1, nccl="2.28.9", torch="2.9.0"),
            "spark:137:137 [0] NCCL INFO NET/IB : Using [0]rocep1s0f0:1/RoCE [1]roceP2p1s0f0:1/RoCE [RO]; "
            "OOB enp1s0f0np0:169.254.159.206<0>",
            "spark:137:137 [0] NCCL INFO Using network IB",
            "spark:137:137 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [send] via NET/IB/0/GDRDMA",
            _own("joined", rank=1, seconds=1.5),
            _own(
                "result",
                rank=1,
                allreduce_ok=True,
                allgather_ok=False,
                figures=[{"op": "all_gather", "bytes": 8 << 20, "busbw_gbs": 20.5}],
            ),
        ]
    )
    o = parse_rank_output(1, text, 0)
    assert o.joined and o.join_seconds == 1.5 and o.done
    assert o.allreduce_ok is True and o.allgather_ok is False
    assert o.version == "2.28.9" and o.channels is not None and not o.channels.sockets
    assert [(f.op, f.busbw_gbs) for f in o.figures] == [("all_gather", 20.5)]


def test_a_rank_that_could_not_connect_says_why():
    text = "\n".join(
        [
            _own("started", rank=0, nccl="2.29.7"),
            "n0:137:137 [0] NCCL WARN socketStartConnect: Connect to 169.254.159.206<41234> failed : "
            "Connection timed out",
            _own("error", rank=0, type="DistNetworkError", message="failed to connect"),
        ]
    )
    o = parse_rank_output(0, text, 3)
    assert not o.joined and not o.done and o.rc == 3
    assert o.said.startswith("NCCL WARN socketStartConnect: Connect to 169.254.159.206<41234>")
    assert o.error == "DistNetworkError: failed to connect"
    assert o.tail().startswith("DistNetworkError: failed to connect | n0:137:137 [0] NCCL WARN")


def test_a_dgx_sparks_own_nccl_lines_read_as_gdr_off():
    """A DGX Spark's verbatim NCCL 2.30.7 lines (selftests/data/commands, wrapped by its author): GPU Direct
    RDMA Disabled on both HCAs, the NET/IB devices."""
    text = (DATA / "commands" / "nccl.dgx_spark.info_net_ib_lines.verbatim.txt").read_text()
    o = parse_rank_output(0, text, None)
    assert o.gdr is not None and not o.gdr.on and set(o.gdr.hcas) == {"rocep1s0f1", "roceP2p1s0f1"}
    assert not o.joined and o.rc is None  # no line of the program: it did not end within the bound


def test_garbage_lines_of_the_programs_kind_are_not_believed():
    text = f"{MARK} result not-json\n{MARK} joined [1, 2]\n{MARK} other {{}}\n"
    o = parse_rank_output(0, text, 0)
    assert not o.joined and not o.done and o.figures == ()


def test_the_command_is_one_shell_word_list():
    argv = docker_run_argv(
        _compose(0), image="img:1", name="n", world=2, master="10.0.0.1", port=1, join_seconds=1, sizes=[1]
    )
    assert shlex.split(shlex.join(argv)) == argv
