"""What the skew checks compare across the nodes: the kernel release, /etc/os-release, the BIOS's DMI
strings and the ConnectX firmware, on captures and garbage (each a ParseError quoting the output)."""

from __future__ import annotations

import pytest

from gb10check.errors import ParseError
from gb10check.judging.compare import odd_ones_out, shown
from gb10check.reading.parsers.host_release import (
    firmware_shown,
    parse_bios,
    parse_fw_versions,
    parse_kernel_release,
    parse_os_release,
)
from gb10check.reading.parsers.nccl_library import SCRIPT, parse_nccl_library


def test_kernel_release_is_one_word(capture):
    assert parse_kernel_release(capture("commands/proc_sys_kernel_osrelease.local_sandbox.txt")) == "6.18.44-fc-v1252"
    assert parse_kernel_release("6.17.0-1014-nvidia\n") == "6.17.0-1014-nvidia"
    with pytest.raises(ParseError, match="osrelease"):
        parse_kernel_release("")


def test_os_release_of_dgx_os_and_debian(capture):
    ubuntu = parse_os_release(capture("commands/os_release.ubuntu_24.04.3.reconstructed.txt"))
    assert ubuntu.shown == "Ubuntu 24.04.3 LTS"
    assert (ubuntu.fields["VERSION_ID"], ubuntu.fields["VERSION_CODENAME"]) == ("24.04", "noble")
    debian = parse_os_release(capture("commands/os_release.debian12.local_sandbox.txt"))
    assert debian.shown == "Debian GNU/Linux 12 (bookworm)"


def test_os_release_without_pretty_name_falls_back_to_name_and_version():
    assert parse_os_release('# a comment\n\nNAME="Ubuntu"\nVERSION_ID=24.04\n').shown == "Ubuntu 24.04"
    assert parse_os_release("ID=ubuntu\n").shown == "ubuntu"


@pytest.mark.parametrize(
    "text",
    ["", "Segmentation fault\n", 'PRETTY_NAME="Ubuntu 24.04\n', "VERSION_ID=24.04\n"],
)
def test_os_release_garbage_is_a_parse_error(text):
    with pytest.raises(ParseError, match="/etc/os-release"):
        parse_os_release(text)


def test_bios_version_keeps_the_vendor_string_inside(capture):
    bios = parse_bios(capture("commands/dmi_id.bios_version_date.thinkpad_t520.reconstructed.txt"))
    assert (bios.version, bios.date) == ("8AET46WW (1.26 )", "05/18/2011")
    assert bios.shown == "8AET46WW (1.26 ) (05/18/2011)"


@pytest.mark.parametrize("text", ["", "2.1.0\n", "2.1.0\n\n", "a\nb\nc\n"])
def test_bios_needs_its_two_lines(text):
    with pytest.raises(ParseError, match="bios_version and bios_date"):
        parse_bios(text)


def test_connectx_firmware_per_device(capture):
    versions = parse_fw_versions(capture("commands/sysfs_infiniband.fw_ver.dgx_spark.grep_H.reconstructed.txt"))
    assert versions == {
        "roceP2p1s0f0": "28.45.4028",
        "roceP2p1s0f1": "28.45.4028",
        "rocep1s0f0": "28.45.4028",
        "rocep1s0f1": "28.45.4028",
    }
    assert firmware_shown(versions) == "28.45.4028"
    # two boards in one node that disagree: each device named
    assert firmware_shown({"rocep1s0f0": "28.45.4028", "mlx5_4": "28.39.1002"}) == (
        "mlx5_4 28.39.1002, rocep1s0f0 28.45.4028"
    )


@pytest.mark.parametrize("text", ["", "28.45.4028\n", "grep: /sys/class/infiniband/*/fw_ver: No such file\n"])
def test_connectx_firmware_garbage_is_a_parse_error(text):
    with pytest.raises(ParseError, match="fw_ver"):
        parse_fw_versions(text)


def test_the_odd_node_is_named_in_the_table():
    """A 4-node cluster with one BIOS behind: the table of values per node names it."""
    values = {f"n{k}": "2.1.0 (08/14/2025)" for k in range(4)} | {"n2": "1.9.2 (05/02/2025)"}
    odd = odd_ones_out(values, ["n0"])
    assert odd == ["n2"]
    assert shown(values, odd).endswith("n2: 1.9.2 (05/02/2025), n3: 2.1.0 (08/14/2025) (the odd one out: n2)")


def test_nccl_library_found_where_torch_looks(capture):
    lib = parse_nccl_library(capture("commands/nccl_library.torch_wheel.generated.txt"))
    assert lib is not None
    assert (lib.how, lib.version) == ("torch", "2.28.9+cuda13.0")
    assert lib.path == "/usr/local/lib/python3.12/dist-packages/nvidia/nccl/lib/libnccl.so.2"
    assert lib.compared == "2.28.9+cuda13.0, sha256 255132248ccb929c"
    assert lib.shown.endswith(f"{lib.path} (torch's wheel)")


def test_one_nccl_version_two_builds_compare_apart(capture):
    """vLLM #42354: a pip-bundled and a system NCCL both say 2.28.9; the hash tells them apart."""
    wheel = parse_nccl_library(capture("commands/nccl_library.torch_wheel.generated.txt"))
    loaded = parse_nccl_library(capture("commands/nccl_library.loaded_other_build.generated.txt"))
    assert wheel is not None and loaded is not None
    assert loaded.how == "loaded" and loaded.version == wheel.version
    assert loaded.compared != wheel.compared


def test_no_nccl_in_the_container_is_none_and_garbage_is_an_error(capture):
    assert parse_nccl_library(capture("commands/nccl_library.none.generated.txt")) is None
    head = "gb10check-nccl torch /x/libnccl.so.2\n"
    digest = "0" * 64
    assert parse_nccl_library(f"{head}{digest}  /x/libnccl.so.2\n").version is None  # no version string in it
    for text in (
        "",
        "sh: 1: grep: not found\n",
        f"{head}{digest}  /other/libnccl.so.2\n",  # sha256sum of another file
        f"{head}{digest}  /x/libnccl.so.2\nNCCL INFO something\n",
        f"{head}sha256sum: /x/libnccl.so.2: Permission denied\n",
    ):
        with pytest.raises(ParseError, match="NCCL library"):
            parse_nccl_library(text)


def test_the_script_is_plain_sh_reading_only():
    """What runs in the container: no write, no redirection into a file, bounded by docker_run_timeout."""
    assert ">" not in SCRIPT.replace("2>/dev/null", "")
    for word in ("rm ", "mv ", "cp ", "tee ", "chmod", "touch", "dd "):
        assert word not in SCRIPT
