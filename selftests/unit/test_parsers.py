"""Parsers against real captures, and against the garbage a node can return."""

from __future__ import annotations

import pytest

from gb10check.errors import ParseError
from gb10check.reading.parsers.ibdev2netdev import parse_ibdev2netdev
from gb10check.reading.parsers.meminfo import GIB, parse_meminfo
from gb10check.reading.parsers.nvidia import (
    NoDriver,
    NvidiaSmiQuery,
    NvmlMismatch,
    parse_module_version,
    parse_nvidia_smi_query,
    parse_proc_driver_version,
)
from gb10check.reading.parsers.vllm_api import parse_models


def test_proc_driver_version_aarch64_open(capture):
    mod = parse_proc_driver_version(
        capture("commands/proc_driver_nvidia_version.aarch64_open.full_two_lines.fixture.txt")
    )
    assert (mod.version, mod.open_source, mod.arch) == ("550.144.03", True, "aarch64")


def test_proc_driver_version_x86_proprietary_from_mismatch_capture(capture):
    text = capture("commands/nvidia-smi.error.driver_library_mismatch.580.txt")
    line = next(x for x in text.splitlines() if x.startswith("NVRM"))
    mod = parse_proc_driver_version(line)
    assert (mod.version, mod.open_source, mod.arch) == ("580.173.02", False, "x86_64")


def test_proc_driver_version_spacing_does_not_matter():
    text = "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64 580.173.02 Release Build (x@y) Tue Jun 23 2026"
    assert parse_proc_driver_version(text).version == "580.173.02"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n",
        "cat: /proc/driver/nvidia/version: No such file or directory\n",
        "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  ",
    ],
)
def test_proc_driver_version_garbage(text):
    with pytest.raises(ParseError, match="cannot parse /proc/driver/nvidia/version") as err:
        parse_proc_driver_version(text)
    assert repr(text)[:20] in str(err.value)


def test_module_version(capture):
    assert parse_module_version(capture("commands/sys_module_nvidia_version.reconstructed.txt")) == "580.95.05"
    with pytest.raises(ParseError, match="bare driver version"):
        parse_module_version("580.95.05 extra")


def test_nvidia_smi_query_gb10(capture):
    res = parse_nvidia_smi_query(capture("commands/nvidia-smi.query.driver_version_name.csv_noheader.gb10.txt"))
    assert isinstance(res, NvidiaSmiQuery)
    assert (res.driver_version, res.gpus[0].name) == ("580.173.02", "NVIDIA GB10")


def test_nvidia_smi_mismatch_gives_nvml_library_version(capture):
    res = parse_nvidia_smi_query(capture("commands/nvidia-smi.error.driver_library_mismatch.580.txt"))
    assert res == NvmlMismatch(library_version="580.178")


def test_nvidia_smi_mismatch_without_version_line():
    assert parse_nvidia_smi_query("Failed to initialize NVML: Driver/library version mismatch\n") == NvmlMismatch(None)


def test_nvidia_smi_no_driver(capture):
    res = parse_nvidia_smi_query(capture("commands/nvidia-smi.error.no_driver.reconstructed.txt"))
    assert isinstance(res, NoDriver) and "couldn't communicate" in res.message


@pytest.mark.parametrize(
    "text",
    [
        "",
        "580.173.02\n",
        "580.173.02, NVIDIA GB10, extra\n",
        "N/A, NVIDIA GB10\n",
        "Segmentation fault\n",
        "580.173.02, NVIDIA GB10\ngarbage\n",
    ],
)
def test_nvidia_smi_garbage(text):
    with pytest.raises(ParseError, match="nvidia-smi"):
        parse_nvidia_smi_query(text)


def test_ibdev2netdev_all_up(capture):
    ports = parse_ibdev2netdev(capture("commands/ibdev2netdev.dgx_spark.all_up_two_cables.txt"))
    assert [(p.rdma_device, p.netdev, p.up) for p in ports] == [
        ("rocep1s0f0", "enp1s0f0np0", True),
        ("rocep1s0f1", "enp1s0f1np1", True),
        ("roceP2p1s0f0", "enP2p1s0f0np0", True),
        ("roceP2p1s0f1", "enP2p1s0f1np1", True),
    ]


def test_ibdev2netdev_one_cable_and_any_order(capture):
    ports = {
        p.rdma_device: p for p in parse_ibdev2netdev(capture("commands/ibdev2netdev.dgx_spark.one_cable_port0.txt"))
    }
    assert ports["rocep1s0f0"].up and not ports["rocep1s0f1"].up and ports["rocep1s0f1"].state == "Down"
    # the playbook capture lists the devices in another order, after the shell prompt
    lines = capture("commands/ibdev2netdev.with_prompt.nvidia_playbook.txt").splitlines()
    assert lines[0].endswith("$ ibdev2netdev")
    other = {p.rdma_device: p.state for p in parse_ibdev2netdev("\n".join(lines[1:]))}
    assert other == {"roceP2p1s0f0": "Down", "roceP2p1s0f1": "Up", "rocep1s0f0": "Down", "rocep1s0f1": "Up"}


def test_ibdev2netdev_verbose_form():
    line = (
        "0000:01:00.0 rocep1s0f0 (MT4129 - MCX75310AAS-NEAT) NVIDIA ConnectX-7 fw 28.45.1020 port 1 (ACTIVE)"
        " ==> enp1s0f0np0 (Up)"
    )
    (port,) = parse_ibdev2netdev(line)
    assert (port.rdma_device, port.port, port.netdev, port.up) == ("rocep1s0f0", 1, "enp1s0f0np0", True)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n",
        "bash: ibdev2netdev: command not found\n",
        "nvidia@dxg-spark-1:~$ ibdev2netdev\n",
        "rocep1s0f0 port 1 ==> enp1s0f0np0\n",
    ],
)
def test_ibdev2netdev_garbage(text):
    with pytest.raises(ParseError, match="ibdev2netdev"):
        parse_ibdev2netdev(text)


def test_meminfo_gb10(capture):
    mem = parse_meminfo(capture("commands/proc_meminfo.gb10.reconstructed.txt"))
    assert mem.total == 124958720 * 1024
    assert round(mem.available / GIB, 1) == 90.3
    assert mem.fields["HugePages_Total"] == 0  # a count, not kB
    assert mem.page_cache == (77000000 + 123456) * 1024


def test_meminfo_truncated_and_garbage(capture):
    text = capture("commands/proc_meminfo.gb10.reconstructed.txt")
    with pytest.raises(ParseError, match="missing MemFree, MemAvailable"):
        parse_meminfo(text.splitlines()[0] + "\n")
    with pytest.raises(ParseError, match="unexpected line"):
        parse_meminfo(text + "MemAvailable: lots\n")


def test_models_v0_12(capture):
    import json

    body = json.dumps(json.loads(capture("vllm_api/01_GET_v1_models.v0.12.0.json"))["body"])
    (card,) = parse_models(body)
    assert (card.id, card.root, card.max_model_len, card.parent) == ("qwen3", "Qwen/Qwen3-8B", 40960, None)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "<html>502 Bad Gateway</html>",
        '{"error": "Unauthorized"}',
        '{"data": [{"object": "model"}]}',
        '{"data": [{"id": "x", "max_model_len": "big"}]}',
    ],
)
def test_models_garbage(text):
    with pytest.raises(ParseError, match="GET /v1/models"):
        parse_models(text)
