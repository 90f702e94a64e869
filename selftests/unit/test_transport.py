"""Transports for real: a local shell, and SSH (fabric) to the simulated cluster's sshd."""

from __future__ import annotations

import shlex
import subprocess
import time

import pytest

from gb10check.errors import NodeUnreachable
from gb10check.reading.transport import LocalTransport, SshTransport, bounded


def test_bounded_wraps_in_coreutils_timeout():
    assert bounded("echo 'a b'", 7) == "LC_ALL=C LANGUAGE= timeout -k 2 7 sh -c 'echo '\"'\"'a b'\"'\"''"


def test_local_runs_and_reports():
    res = LocalTransport("here").run("echo out; echo err >&2; exit 4", timeout=5)
    assert (res.rc, res.stdout, res.stderr, res.timed_out, res.ok) == (4, "out\n", "err\n", False, False)
    assert res.duration > 0


def test_every_command_runs_in_the_c_locale_whatever_the_nodes(monkeypatch, tmp_path):
    """A node installed in Chinese (LANG, LANGUAGE) or with LC_ALL set: its commands still run under
    LC_ALL=C with LANGUAGE empty (Python's gettext, ufw's, reads LANGUAGE before LC_ALL: a Chinese
    catalogue is found with LC_ALL=C alone)."""
    for name, value in {"LANG": "zh_CN.UTF-8", "LANGUAGE": "zh_CN:zh", "LC_ALL": "de_DE.UTF-8"}.items():
        monkeypatch.setenv(name, value)
    res = LocalTransport("here").run('echo "$LC_ALL|$LANGUAGE|$LANG"', timeout=5)
    assert res.stdout == "C||zh_CN.UTF-8\n", res.stdout
    (tmp_path / "zh_CN" / "LC_MESSAGES").mkdir(parents=True)
    (tmp_path / "zh_CN" / "LC_MESSAGES" / "ufw.mo").touch()  # gettext.find looks for the file only
    probe = shlex.quote(f"import gettext; print(gettext.find('ufw', {str(tmp_path)!r}) or 'C')")
    assert LocalTransport("here").run(f"python3 -c {probe}", timeout=10).stdout == "C\n"
    unfixed = subprocess.run(["sh", "-c", f"LC_ALL=C python3 -c {probe}"], capture_output=True, text=True, timeout=10)
    assert unfixed.stdout.strip().endswith("ufw.mo")  # LC_ALL=C alone: LANGUAGE still picks the catalogue


def test_local_hung_command_is_a_timeout_verdict():
    res = LocalTransport("here").run("sleep 30", timeout=0.5)
    assert res.timed_out and res.rc == 124 and res.duration < 10


def test_local_never_reads_stdin():
    res = LocalTransport("here").run("cat", timeout=5)
    assert res.ok and res.stdout == ""


def _ssh(sim, node_index=1, **kw):
    node = sim.nodes[node_index]
    args = dict(
        user="root",
        port=22,
        key=str(sim.dir / "client_key"),
        connect_timeout=3,
        known_hosts=str(sim.dir / "known_hosts"),
        use_ssh_config=False,
    )
    args.update(kw)
    return SshTransport(node.name, args.pop("host", node.lan_ip), **args)


@pytest.mark.sim
def test_ssh_runs_on_the_node_and_reuses_one_connection(in_rank0):
    t = _ssh(in_rank0)
    try:
        first = t.run("hostname; echo err >&2; exit 3", timeout=5)
        second = t.run("cat /sys/module/nvidia/version", timeout=5)
    finally:
        t.close()
    assert (first.rc, first.stdout, first.stderr) == (3, "thinkstationpgx-32\n", "err\n")
    assert second.stdout == "580.173.02\n"
    assert (t.stats.connections, t.stats.commands) == (1, 2)


@pytest.mark.sim
def test_ssh_hung_command_is_bounded_on_both_ends(in_rank0):
    t = _ssh(in_rank0)
    try:
        res = t.run("sleep 299.5", timeout=1)
        assert res.timed_out and res.duration < 8
        time.sleep(0.5)
        left = t.run("pgrep -f '^sleep 299[.]5$' || true", timeout=5)  # the regex does not match itself
    finally:
        t.close()
    assert left.stdout == "", f"the hung command outlived its bound on the node: {left.stdout}"


@pytest.mark.sim
def test_ssh_refused_is_unreachable(in_rank0):
    t = _ssh(in_rank0, port=2200)
    refused = r"thinkstationpgx-32 \(root@192.168.40.32:2200\): the port refuses the connection"
    with pytest.raises(NodeUnreachable, match=refused):
        t.run("true", timeout=5)


@pytest.mark.sim
def test_ssh_silent_drop_fails_within_the_connect_timeout(in_rank0):
    ns = in_rank0.nodes[1].ns
    rule = ["INPUT", "-p", "tcp", "--dport", "2201", "-j", "DROP"]
    subprocess.run(["ip", "netns", "exec", ns, "iptables", "-A", *rule], check=True, timeout=10)
    try:
        t = _ssh(in_rank0, port=2201, connect_timeout=1)
        start = time.monotonic()
        with pytest.raises(NodeUnreachable, match="cannot connect within 1 s"):
            t.run("true", timeout=5)
        assert time.monotonic() - start < 4
    finally:
        subprocess.run(["ip", "netns", "exec", ns, "iptables", "-D", *rule], check=True, timeout=10)


@pytest.mark.sim
def test_ssh_unknown_host_key_is_rejected_by_default(in_rank0, tmp_path):
    t = _ssh(in_rank0, known_hosts=str(tmp_path / "empty_known_hosts"))
    (tmp_path / "empty_known_hosts").write_text("")
    with pytest.raises(NodeUnreachable, match=r"not found in known_hosts.*accept-new"):
        t.run("true", timeout=5)


@pytest.mark.sim
def test_ssh_accept_new_records_the_key_and_then_rejects_a_changed_one(in_rank0, tmp_path):
    kh = tmp_path / "known_hosts"
    t = _ssh(in_rank0, known_hosts=str(kh), host_key_policy="accept-new")
    assert t.run("true", timeout=5).ok
    t.close()
    assert kh.read_text().startswith("192.168.40.32 ssh-ed25519 ")
    # the same address now answering with another host (rank 0's key): a changed key is refused
    rank0_key = (in_rank0.nodes[0].dir / "host_key.pub").read_text().split()[:2]
    kh.write_text(f"192.168.40.32 {' '.join(rank0_key)}\n")
    t2 = _ssh(in_rank0, known_hosts=str(kh), host_key_policy="accept-new")
    with pytest.raises(NodeUnreachable, match="host key does not match"):
        t2.run("true", timeout=5)


@pytest.mark.sim
@pytest.mark.parametrize(
    ("passphrase", "message"),
    [("", "SSH failed: Authentication failed"), ("secret", "SSH failed")],
    ids=["key-not-authorised", "key-with-passphrase"],
)
def test_ssh_bad_key_fails_without_prompting(in_rank0, tmp_path, passphrase, message):
    key = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-f", str(key)], check=True, timeout=10)
    t = _ssh(in_rank0, key=str(key))
    with pytest.raises(NodeUnreachable, match=message):
        t.run("true", timeout=5)


@pytest.mark.sim
def test_ssh_reads_the_system_known_hosts_file_as_openssh_does(in_rank0, tmp_path):
    """The key recorded only in /etc/ssh/ssh_known_hosts (a site-wide file) is trusted too."""
    system = tmp_path / "ssh_known_hosts"
    system.write_text((in_rank0.dir / "known_hosts").read_text())
    t = _ssh(in_rank0, known_hosts=str(tmp_path / "empty"), system_known_hosts=str(system))
    (tmp_path / "empty").write_text("")
    try:
        assert t.run("true", timeout=5).ok
    finally:
        t.close()
    assert (tmp_path / "empty").read_text() == "", "a key from the system file is not copied into the user's"


@pytest.mark.sim
def test_host_key_failures_name_their_own_hints(in_rank0, tmp_path):
    (tmp_path / "empty").write_text("")
    with pytest.raises(NodeUnreachable) as unknown:
        _ssh(in_rank0, known_hosts=str(tmp_path / "empty"), system_known_hosts="/nonexistent").run("true", timeout=5)
    assert unknown.value.hint_ids == ("host-key-unknown",)
    other = (in_rank0.nodes[0].dir / "host_key.pub").read_text().split()[:2]
    (tmp_path / "changed").write_text(f"192.168.40.32 {' '.join(other)}\n")
    with pytest.raises(NodeUnreachable) as changed:
        _ssh(in_rank0, known_hosts=str(tmp_path / "changed"), system_known_hosts="/nonexistent").run("true", 5)
    assert changed.value.hint_ids == ("host-key-changed",)


def test_a_banner_that_never_comes_is_bounded_by_the_connect_timeout():
    """paramiko bounds TCP, banner and auth each on its own: the suite bounds their sum."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)  # accepts (the kernel does), never speaks
    t = SshTransport("mute", "127.0.0.1", port=listener.getsockname()[1], connect_timeout=1, use_ssh_config=False)
    try:  # the connect bound fired (its words), not the command's 60 s: no wall-clock bound, which load would break
        with pytest.raises(NodeUnreachable, match="cannot connect within 1 s"):
            t.run("true", timeout=60)
    finally:
        listener.close()


def test_a_name_that_does_not_resolve_and_a_port_that_refuses_are_said_as_such():
    """ "Name or service not known" and "connection refused" are no timeouts: the message says what happened
    (the real resolver and a real closed port, through fabric)."""
    import socket

    unresolvable = SshTransport("spark-9", "no-such-host.invalid", connect_timeout=2, use_ssh_config=False)
    said = r"the name does not resolve \(.*\), which no wait fixes: check how the host is spelled \(ssh_host"
    with pytest.raises(NodeUnreachable, match=said) as bad:
        unresolvable.run("true", timeout=5)
    assert "within" not in str(bad.value)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there now: the kernel refuses
    refused = SshTransport("spark-8", "127.0.0.1", port=port, connect_timeout=2, use_ssh_config=False)
    with pytest.raises(NodeUnreachable, match="the port refuses the connection: nothing accepts SSH there"):
        refused.run("true", timeout=5)


@pytest.mark.sim
def test_an_interrupt_during_a_remote_command_is_not_held_by_invoke(in_rank0):
    """invoke forwards Ctrl-C to the remote side and keeps waiting; the suite must not."""
    import signal
    import threading

    t = _ssh(in_rank0)
    try:
        t.run("true", timeout=5)  # connected
        timer = threading.Timer(0.5, lambda: signal.pthread_kill(threading.main_thread().ident, signal.SIGINT))
        timer.start()
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            t.run("sleep 299.25", timeout=30)
        assert time.monotonic() - start < 10  # not held for the command (299 s) nor its timeout (30 s)
    finally:
        t.close()
