"""Root-only reads as a user that is not root, in a real shell: refusals say so, with their hint."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from gb10check.errors import PrivilegeRequired, ToolMissing
from gb10check.inventory import Inventory
from gb10check.reading import probes
from gb10check.reading.parsers.framed import framed_files_command, parse_framed_files
from gb10check.reading.probes import as_root_reader
from gb10check.reading.snapshot import Probe, Read, Snapshot, Where, build_script, new_boundary, split_output

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to the unprivileged user")


def _probe(read: Read[object], sudo: bool) -> Probe:
    """The declared read's probe, for a node with that sudo setting."""
    inventory = Inventory.model_validate(
        {
            "nodes": [
                {"name": "a", "rank": 0, "transport": "local"},
                {"name": "node-b", "rank": 1, "host": "b", "sudo": sudo},
            ],
            "rails": [
                {"netdev": "e0", "rdma_device": "r0", "addresses": {"a": "10.0.0.1/24", "node-b": "10.0.0.2/24"}}
            ],
        }
    )
    command = read.command(Where(inventory, inventory.nodes[1]))
    assert command is not None
    return Probe(read.name, command)


def _snapshot_as_nobody(probed: tuple[Probe, ...]) -> Snapshot:
    boundary = new_boundary()
    script = build_script(probed, boundary, 5.0)
    proc = subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "sh", "-c", script],
        env={"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},  # as an SSH login has
        capture_output=True,
        text=True,
        timeout=30,
        cwd="/",
    )
    return Snapshot("node-b", split_output(proc.stdout, probed, boundary, 0.1))


def test_a_forbidden_root_read_is_privilege_required_with_its_hint():
    snap = _snapshot_as_nobody((_probe(probes.UFW_STATUS, sudo=False),))
    with pytest.raises(PrivilegeRequired) as info:
        snap.fact(probes.UFW_STATUS)
    assert "node-b" in str(info.value) and "sudo = false" in str(info.value)
    assert info.value.hint_ids == ("sudo-required",)


def test_a_root_only_file_is_refused_not_read_as_empty():
    # a folder the unprivileged user can list (pytest's tmp_path is not), holding a mode-600 file
    with tempfile.TemporaryDirectory(dir="/tmp") as folder:
        os.chmod(folder, 0o755)
        secret = Path(folder) / "40-cx7.yaml"
        secret.write_text("network: {}\n")
        secret.chmod(0o600)
        command = framed_files_command(f"{folder}/*.yaml", as_root_reader(sudo=False))
        snap = _snapshot_as_nobody((Probe("netplan", command),))
    with pytest.raises(PrivilegeRequired):
        snap.fact(probes.NETPLAN, lambda t: parse_framed_files(t, "netplan"))


def test_sudo_allowed_without_a_nopasswd_rule_is_refused_not_prompted():
    """sudo = true on the node, but no NOPASSWD rule for the user: `sudo -n` refuses at once, and the
    check says sudo-required (without sudo installed at all: tool-missing, naming sudo)."""
    snap = _snapshot_as_nobody((_probe(probes.UFW_STATUS, sudo=True),))
    if subprocess.run(["sh", "-c", "command -v sudo"], capture_output=True).returncode != 0:
        with pytest.raises(ToolMissing, match="`sudo` is not installed"):
            snap.fact(probes.UFW_STATUS)
        return
    with pytest.raises(PrivilegeRequired, match="a password is required"):
        snap.fact(probes.UFW_STATUS)
