"""The kernel log (dmesg's mlx5, pciehp and NVRM lines), logind's RemoveIPC, NCCL's config files and
NCCL_IB_HCA as NCCL matches it: on captures, the kernels' and the tools' own formats, and garbage."""

from __future__ import annotations

import pytest

from gb10check.deployment.nccl import ib_hca_selects
from gb10check.errors import ParseError
from gb10check.reading.parsers.framed import FileRead
from gb10check.reading.parsers.kernel_log import parse_kernel_log
from gb10check.reading.parsers.logind import parse_linger, parse_remove_ipc
from gb10check.reading.parsers.nccl_conf import NcclSetting, in_force, parse_conf_lines

BOOT = [
    "[    6.000000] mlx5_core 0000:01:00.0: firmware version: 28.45.1020",
    "[   12.000000] mlx5_core 0000:01:00.0 enp1s0f0np0: Link up",
    "[   12.300000] mlx5_core 0002:01:00.0 enP2p1s0f0np0: Link up",
]


def _log(*lines: str) -> str:
    return f"gb10check: kernel log lines {len(lines) + 900}\n" + "".join(f"{line}\n" for line in lines)


def test_a_boot_with_both_links_up_has_no_event_to_report():
    log = parse_kernel_log(_log(*BOOT))
    assert log.lines == 903
    assert [(e.kind, e.where, e.what, e.seconds) for e in log.events] == [
        ("link", "enp1s0f0np0", "up", 12.0),
        ("link", "enP2p1s0f0np0", "up", 12.3),
    ]
    assert log.flaps("enp1s0f0np0") == [] and log.of("hotplug") == [] and log.of("xid") == []


def test_a_link_down_before_it_first_came_up_is_no_flap_but_after_it_is():
    log = parse_kernel_log(
        _log(
            "[    9.000000] mlx5_core 0000:01:00.0 enp1s0f0np0: Link down",
            *BOOT,
            "[14255.802617] mlx5_core 0000:01:00.0 enp1s0f0np0: Link down",
            "[14257.116043] mlx5_core 0000:01:00.0 enp1s0f0np0: Link up",
        )
    )
    assert [e.seconds for e in log.flaps("enp1s0f0np0")] == [14255.802617]
    assert log.flaps("enP2p1s0f0np0") == []


def test_hotplug_and_xid_lines():
    log = parse_kernel_log(
        _log(
            "[86402.118722] pcieport 0002:00:00.0: pciehp: Slot(0): Link Down",
            "[86417.902211] pcieport 0002:00:00.0: pciehp: Slot(0): Card present",
            "[90211.553018] NVRM: Xid (PCI:000f:01:00): 43, pid=48211, name=python3, Ch 00000008",
        )
    )
    assert [(e.where, e.what) for e in log.of("hotplug")] == [("Slot(0)", "Link Down"), ("Slot(0)", "Card present")]
    assert [(e.where, e.what) for e in log.of("xid")] == [("PCI:000f:01:00", "43")]


def test_other_nvrm_lines_are_not_xid_errors(capture):
    """A real NVRM message (the API mismatch, with its indented continuation lines) is no Xid."""
    log = parse_kernel_log("gb10check: kernel log lines 4\n" + capture("commands/dmesg.nvrm_api_mismatch.txt"))
    assert log.events == ()


def test_dmesg_without_timestamps_still_reads():
    log = parse_kernel_log(_log("mlx5_core 0000:01:00.0 enp1s0f0np0: Link up"))
    assert log.events[0].seconds is None and log.events[0].what == "up"


@pytest.mark.parametrize("text", ["", "dmesg: read kernel buffer failed: Operation not permitted\n", "<html>\n"])
def test_kernel_log_without_its_count_is_a_parse_error(text):
    with pytest.raises(ParseError, match="kernel log lines"):
        parse_kernel_log(text)


def _file(path: str, text: str) -> FileRead:
    return FileRead(path, 0o644, "0", text)


UBUNTU = "[Login]\n#KillUserProcesses=no\n#RemoveIPC=yes\n"


def test_remove_ipc_defaults_to_yes_when_every_line_is_a_comment():
    setting = parse_remove_ipc([_file("/etc/systemd/logind.conf", UBUNTU)])
    assert setting.enabled and setting.source == "systemd's default (RemoveIPC=yes)"
    assert parse_remove_ipc([]).enabled


def test_drop_ins_override_the_main_file_in_name_order_and_etc_masks_usr_lib():
    files = [
        _file("/etc/systemd/logind.conf", "[Login]\nRemoveIPC=no\n"),
        _file("/usr/lib/systemd/logind.conf.d/50-vendor.conf", "[Login]\nRemoveIPC=yes\n"),
        _file("/etc/systemd/logind.conf.d/50-vendor.conf", "# masks the vendor's file\n"),
        _file("/run/systemd/logind.conf.d/20-x.conf", "[Login]\nRemoveIPC=on\n"),
        _file("/etc/systemd/logind.conf.d/90-keep.conf", "[Login]\n RemoveIPC = no \n"),
    ]
    setting = parse_remove_ipc(files)
    assert not setting.enabled
    assert setting.source == "/etc/systemd/logind.conf.d/90-keep.conf:2 (RemoveIPC=no)"
    # without the last drop-in, /run's 20-x.conf (on) wins over the main file
    assert parse_remove_ipc(files[:4]).enabled


def test_remove_ipc_outside_the_login_section_does_not_count():
    assert parse_remove_ipc([_file("/etc/systemd/logind.conf", "[Other]\nRemoveIPC=no\n")]).enabled


def test_remove_ipc_that_is_not_a_boolean_is_a_parse_error():
    with pytest.raises(ParseError, match="not a boolean"):
        parse_remove_ipc([_file("/etc/systemd/logind.conf", "[Login]\nRemoveIPC=maybe\n")])


def test_linger():
    assert parse_linger("lenovo\nsvc-vllm\n") == ["lenovo", "svc-vllm"]
    assert parse_linger("") == []
    with pytest.raises(ParseError, match="not a user name"):
        parse_linger("ls: cannot access '/x': Permission denied\n")


def test_nccl_conf_as_nccl_applies_it():
    text = "/root/.nccl.conf:NCCL_NET=Socket\n/etc/nccl.conf:NCCL_NET=IB\n/etc/nccl.conf:NCCL_IB_DISABLE=1\n"
    text += "/etc/nccl.conf:# NCCL_DEBUG=INFO\n"
    settings = parse_conf_lines(text, "grep")
    assert settings[0] == NcclSetting("/root/.nccl.conf", "NCCL_NET", "Socket")
    # the environment wins, then the first file that names the variable; a comment sets nothing NCCL reads
    assert [(s.path, s.name, s.value) for s in in_force(settings, {"NCCL_IB_DISABLE": "0"})] == [
        ("/root/.nccl.conf", "NCCL_NET", "Socket"),
    ]
    assert parse_conf_lines("", "grep") == []


def test_nccl_conf_garbage_is_a_parse_error():
    with pytest.raises(ParseError, match="PATH:LINE"):
        parse_conf_lines("OCI runtime exec failed\n", "docker exec")


DEVICES = ["rocep1s0f0", "rocep1s0f1", "roceP2p1s0f0", "roceP2p1s0f1"]


@pytest.mark.parametrize(
    ("value", "selected"),
    [
        (None, sorted(DEVICES)),
        ("=rocep1s0f0,roceP2p1s0f0", ["roceP2p1s0f0", "rocep1s0f0"]),
        ("=rocep1s0f0", ["rocep1s0f0"]),
        ("rocep1s0f", ["rocep1s0f0", "rocep1s0f1"]),  # a prefix selects both ports of that NIC
        ("=rocep1s0f0:1,roceP2p1s0f0:1", ["roceP2p1s0f0", "rocep1s0f0"]),
        ("^rocep1s0f1,roceP2p1s0f1", ["roceP2p1s0f0", "rocep1s0f0"]),
        ("=mlx5_0", []),
    ],
)
def test_ib_hca_as_nccl_matches_it(value, selected):
    assert ib_hca_selects(value, DEVICES) == selected
