"""The sudo-required fix, run for real: the rule it installs names exactly the node's files (sudoers(5)'s
escaping, checked by the real visudo and matched by the real sudo), and no file another user planted in
a shared folder gets installed. Each test runs in a private mount namespace (its own /tmp and
/etc/sudoers.d over tmpfs): this machine's sudo configuration is never touched."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from gb10check.judging.hint_context import render_command, sudoers_line
from gb10check.judging.hints import Catalogue
from gb10check.reading.probes import root_reads

PROJECT = Path(__file__).resolve().parents[2]
# a path in a folder every user may write, named in advance: whoever creates it first owns it
SHARED_FIXED_PATH = re.compile(r"(?<![\w.~$-])/(?:tmp|var/tmp|dev/shm)/(?![\"'$])")
TOOLS = ("unshare", "setpriv", "sudo", "visudo", "install")
needs_root_and_sudo = pytest.mark.skipif(
    os.geteuid() != 0 or not all(shutil.which(t) for t in TOOLS),
    reason="needs root (a private mount namespace) and sudo, visudo, unshare, setpriv (bin/setup installs sudo)",
)
OPERATOR, ATTACKER = "nobody", "daemon"  # the deployment user running the fix, and another local user
ROOT_FOR_ALL = "ALL ALL=(ALL) NOPASSWD: ALL\n"
# file names a node may report in /etc/netplan: each sudoers or fnmatch special character, a space, a comment
ODD_NAMES = [
    "/etc/netplan/50-cloud-init.yaml",
    "/etc/netplan/a*b.yaml",
    "/etc/netplan/a?b.yaml",
    "/etc/netplan/a[x]b.yaml",
    "/etc/netplan/a,b:c=d.yaml",
    "/etc/netplan/back\\slash.yaml",
    "/etc/netplan/with space.yaml",
    "/etc/netplan/a#b.yaml",
    "/etc/netplan/^caret.yaml",
    '/etc/netplan/quote\'s "and" (parens)!.yaml',
    "/etc/netplan/café.yaml",
]


def test_no_hint_stages_a_file_at_a_fixed_path_in_a_shared_folder():
    cat = Catalogue.load()
    fixed = [(h, c) for h in sorted(cat.ids) for c in cat[h].commands if SHARED_FIXED_PATH.search(c)]
    assert fixed == []


def test_the_rule_escapes_what_sudoers_and_its_wildcards_read():
    line = sudoers_line("lenovo", root_reads(ODD_NAMES))
    assert line.startswith("lenovo ALL=(root) NOPASSWD: /usr/sbin/ufw status verbose, ")
    assert "/usr/bin/cat /etc/netplan/a\\*b.yaml" in line and "/usr/bin/cat /etc/netplan/a\\?b.yaml" in line
    assert "/usr/bin/cat /etc/netplan/a\\[x\\]b.yaml" in line and "a\\,b\\:c\\=d.yaml" in line
    assert "back\\\\\\\\slash.yaml" in line  # two levels: the parser's and fnmatch's
    assert "with\\ space.yaml" in line and "a\\#b.yaml" in line and "\\^caret.yaml" in line
    assert not re.search(r"(?<!\\)[*?\[#]", line)  # no wildcard and no comment left bare


def test_a_file_name_with_a_control_character_is_left_out_of_the_rule():
    line = sudoers_line(
        "lenovo", root_reads(["/etc/netplan/ok.yaml", "/etc/netplan/x\ny.yaml", "/etc/netplan/\x1b.yaml"])
    )
    assert "\n" not in line and "\x1b" not in line and "/etc/netplan/ok.yaml" in line
    assert line.endswith("# 2 read(s) left out: a file name with a control character")


def _in_private_sudo(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`script` as root in its own mount namespace: a fresh /tmp and /etc/sudoers.d (tmpfs)."""
    body = "set -u\nmount -t tmpfs -o mode=1777 gb10check-test /tmp\n"
    body += "mount -t tmpfs -o mode=0755 gb10check-test /etc/sudoers.d\n"
    path = tmp_path / "in-namespace.sh"
    path.write_text(body + script)
    return subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", str(path)], capture_output=True, text=True, timeout=60
    )


def _as(user: str, command: str) -> str:
    group = "nogroup" if user == "nobody" else user
    return f"setpriv --reuid {user} --regid {group} --clear-groups sh -c {shlex.quote(command)}"


@needs_root_and_sudo
def test_the_fix_installs_its_own_rule_whatever_another_user_planted(tmp_path):
    """Another local user creates /tmp/gb10check.sudoers first (a valid rule giving everyone root): the fix,
    pasted line by line as the hint prints it by the deployment user, installs the suite's rule."""
    from gb10check.inventory import load_inventory
    from gb10check.judging.hint_context import context_for

    inv = load_inventory(PROJECT / "fixtures" / "cluster.example.toml")
    ctx = context_for(inv, inv.nodes[1].name, root_reads=root_reads(["/etc/netplan/40-cx7.yaml"]))
    lines = [line for c in Catalogue.load()["sudo-required"].commands for line in render_command(c, ctx)]
    assert lines, "the sudo-required fix renders no command"
    plant = f"printf {shlex.quote(ROOT_FOR_ALL)} >/tmp/gb10check.sudoers; chmod 0644 /tmp/gb10check.sudoers"
    script = (
        f"echo '{OPERATOR} ALL=(root) NOPASSWD: /usr/sbin/visudo, /usr/bin/install' >/etc/sudoers.d/operator\n"
        "chmod 0440 /etc/sudoers.d/operator\n"
        f"{_as(ATTACKER, plant)}\n"
        + "".join(f"{_as(OPERATOR, line)}\n" for line in lines)  # each line, whatever the one before did
        + "echo '--- installed'; cat /etc/sudoers.d/gb10check; echo '--- visudo'; visudo -c\n"
        + "echo '--- left'; ls -A /tmp\n"
    )
    proc = _in_private_sudo(script, tmp_path)
    installed = proc.stdout.split("--- installed\n", 1)[1].split("--- visudo\n", 1)[0]
    assert installed == str(ctx["sudoers_line"]) + "\n", proc.stdout + proc.stderr
    assert "/etc/sudoers.d/gb10check: parsed OK" in proc.stdout, proc.stdout + proc.stderr
    assert proc.stdout.split("--- left\n", 1)[1].split() == ["gb10check.sudoers"]  # the fix's own file removed


@needs_root_and_sudo
def test_the_rule_allows_exactly_the_reported_files(tmp_path):
    """The real visudo accepts the rule; the real sudo lets the user cat each reported file and nothing a
    wildcard would have matched (another file, /etc/shadow after a space)."""
    line = sudoers_line(OPERATOR, root_reads(ODD_NAMES))
    asks = [(name, True) for name in ODD_NAMES]
    asks += [
        ("/etc/netplan/aXb.yaml", False),  # a*b and a?b
        ("/etc/netplan/axb.yaml", False),  # a[x]b
        ("/etc/netplan/a*b.yaml /etc/shadow", False),
        ("/etc/netplan/with", False),
        ("/etc/netplan/a", False),  # what a bare # would have left of a#b.yaml
        ("/etc/shadow", False),
    ]
    checks = "".join(
        f"if sudo -l -U {OPERATOR} /usr/bin/cat {shlex.quote(ask)} >/dev/null 2>&1; "
        f"then echo {shlex.quote('allowed ' + ask)}; else echo {shlex.quote('denied ' + ask)}; fi\n"
        for ask, _ in asks
    )
    script = f"printf '%s\\n' {shlex.quote(line)} >/etc/sudoers.d/gb10check\nchmod 0440 /etc/sudoers.d/gb10check\n"
    proc = _in_private_sudo(script + "visudo -c\n" + checks, tmp_path)
    assert "/etc/sudoers.d/gb10check: parsed OK" in proc.stdout, proc.stdout + proc.stderr
    said = proc.stdout.splitlines()
    assert [a for a, ok in asks if f"{'allowed' if ok else 'denied'} {a}" not in said] == [], proc.stdout
