"""The catalogue: complete, well-formed, matched by symptom; tests only name ids it has."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from gb10check.errors import HintCatalogueError
from gb10check.judging.hint_context import fields_in, render_command
from gb10check.judging.hints import HAND_PLACEHOLDER, Catalogue, parse_catalogue

PROJECT = Path(__file__).resolve().parents[2]
REQUIRED = {
    # DOMAIN.md's troubleshooting table
    "gloo-ipv6-timeout",
    "follower-not-headless",
    "cudagraph-mode-hyphen",
    "kv-cache-oom",
    "mamba-cache-capacity",
    "driver-deadlock",
    "memavailable-low",
    "gpu-not-in-container",
    "hf-cache-permissions",
    # the foundation's own
    "driver-version-mismatch",
    "roce-link-down",
    "model-not-registered",
    "node-unreachable",
}
GOOD = '[x-y]\ntitle = "t"\ncause = "c"\nfix = "f"\ncommands = ["ls"]\nsymptoms = ["boom"]\n'


def test_builtin_catalogue_loads_and_is_complete():
    cat = Catalogue.load()
    assert cat.ids >= REQUIRED
    for hint_id in cat.ids:
        hint = cat[hint_id]
        assert hint.title and hint.cause and hint.fix


def _named_hint_ids() -> dict[str, set[str]]:
    """Every id passed to pytest.mark.hints(...) in the acceptance suite, by file."""
    found: dict[str, set[str]] = {}
    for path in sorted(PROJECT.glob("tests_*/**/*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "hints"
                and isinstance(node.func.value, ast.Attribute)
                and node.func.value.attr == "mark"
            ):
                for arg in node.args:
                    if isinstance(arg, ast.Attribute) and arg.attr == "hint":  # a compose rule's (checked below)
                        continue
                    assert isinstance(arg, ast.Constant), f"{path}: hint ids must be string literals"
                    found.setdefault(str(path.relative_to(PROJECT)), set()).add(arg.value)
    return found


def test_every_hint_a_test_names_is_in_the_catalogue():
    named = _named_hint_ids()
    assert named, "the acceptance suite names no hints at all"
    ids = Catalogue.load().ids
    missing = {f: sorted(h - ids) for f, h in named.items() if h - ids}
    assert not missing, f"tests name hint ids the catalogue lacks: {missing}"


def test_every_launch_rule_hint_is_in_the_catalogue():
    from gb10check.deployment.launch.rules import RULES

    ids = Catalogue.load().ids
    assert len({r.id for r in RULES}) == len(RULES)
    assert [r.hint for r in RULES if r.hint not in ids] == []


def test_symptoms_match_real_failure_texts():
    cat = Catalogue.load()
    assert [h.id for h in cat.match("Failed to initialize NVML: Driver/library version mismatch")] == [
        "driver-version-mismatch"
    ]
    assert "follower-not-headless" in [
        h.id for h in cat.match("RuntimeError: collective_rpc should not be called on follower node")
    ]
    assert "gpu-not-in-container" in [
        h.id
        for h in cat.match(
            'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].'
        )
    ]
    assert [h.id for h in cat.match(
        "ValueError: Total number of attention heads (16) must be divisible by tensor parallel size (3)."
    )] == ["tp-heads-indivisible"]  # fmt: skip
    assert cat.match("all good") == []


def test_resolve_puts_named_first_and_rejects_unknown():
    cat = Catalogue.load()
    got = cat.resolve(["roce-link-down"], "Failed to initialize NVML: Driver/library version mismatch")
    assert [h.id for h in got] == ["roce-link-down", "driver-version-mismatch"]
    with pytest.raises(HintCatalogueError, match="unknown hint id 'no-such-hint'"):
        cat.resolve(["no-such-hint"], "")


def test_site_file_adds_and_overrides(tmp_path):
    site = tmp_path / "site.toml"
    site.write_text(GOOD + GOOD.replace("[x-y]", "[node-unreachable]").replace('"t"', '"our bastion is down"'))
    cat = Catalogue.load([site])
    assert "x-y" in cat.ids and cat["node-unreachable"].title == "our bastion is down"
    assert cat["node-unreachable"].source == str(site)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (GOOD.replace("[x-y]", "[X_Y]"), "id must be lowercase words"),
        (GOOD.replace('fix = "f"\n', ""), "missing key 'fix'"),
        (GOOD + 'colour = "red"\n', "unknown key(s) colour"),
        (GOOD.replace('commands = ["ls"]', 'commands = "ls"'), "'commands' must be a non-empty list"),
        (GOOD.replace('title = "t"', 'title = "  "'), "'title' must be a non-empty str"),
        (GOOD.replace('["boom"]', '["(unclosed"]'), "is not a valid regex"),
        (GOOD.replace('["boom"]', '[""]'), "every item of 'symptoms' must be a non-empty string"),
        ("[x-y\n", "not valid TOML"),
        (GOOD.replace('["ls"]', '["ls {no_such_field}"]'), "names unknown field(s) ['no_such_field']"),
        (GOOD.replace('["ls"]', '["ls -l <path>"]'), "has a placeholder to fill by hand"),
    ],
)
def test_malformed_entries_are_rejected(text, message):
    with pytest.raises(HintCatalogueError) as err:
        parse_catalogue(text, "site.toml")
    assert message in str(err.value) and str(err.value).startswith("site.toml")


def test_missing_site_file(tmp_path):
    with pytest.raises(HintCatalogueError, match=r"--hints .*nope\.toml: cannot read"):
        Catalogue.load([tmp_path / "nope.toml"])


# -- every printed command is complete and safe to paste --------------------------------------
def _example_contexts():
    from gb10check.inventory import load_inventory
    from gb10check.judging.hint_context import context_for
    from gb10check.reading.probes import root_reads

    inv = load_inventory(PROJECT / "fixtures" / "cluster.example.toml")
    extra = {
        "command": "nvidia-smi --query-gpu=driver_version --format=csv",
        "path": "/etc/netplan/40-cx7.yaml",
        "workload_user": "1000",
        "history_dir": "/var/lib/gb10check/history",
        "netdev_down": ["enp1s0f0np0"],
        "ufw_port": ["20001"],
        "ping_size": "1472",
        "peer_ip": "169.254.159.206",
        "set_at": "/home/lenovo/vllm/qwen3.8-flash-next-compose.yml:33 (environment)",
        "source_node": "thinkstationpgx-30",
        "target_ip": "169.254.159.206",
    }
    reads = root_reads(["/etc/netplan/40-cx7.yaml"])
    return inv, [context_for(inv, n.name, root_reads=reads, rail="enp1s0f0np0", extra=extra) for n in inv.nodes]


def test_every_command_renders_complete_for_every_node():
    """With the example inventory, a node, its link and the error's fields, no command keeps a placeholder,
    and none names the field report's values unless the inventory says them."""
    from gb10check.judging.hint_context import fields_in, render_command

    _, contexts = _example_contexts()
    cat = Catalogue.load()
    for hint_id in sorted(cat.ids):
        for template in cat[hint_id].commands:
            for ctx in contexts:
                lines = render_command(template, ctx)
                assert lines, f"[{hint_id}] {template!r} left out for {ctx['node']}"
                for line in lines:
                    assert not fields_in(line) and not HAND_PLACEHOLDER.search(line), line


def test_commands_follow_the_inventory_not_the_field_report(tmp_path):
    from gb10check.inventory import parse_inventory
    from gb10check.judging.hint_context import context_for

    text = (PROJECT / "fixtures" / "cluster.example.toml").read_text()
    text = text.replace("vllm-qwen38", "llm-prod").replace("/home/lenovo/vllm", "/srv/llm")
    text = text.replace("169.254.94.252/16", "10.77.0.1/24").replace("169.254.159.206/16", "10.77.0.2/24")
    inv = parse_inventory(text, "site.toml")
    cat = Catalogue.load()
    failure = context_for(inv, "thinkstationpgx-32", rail="enp1s0f0np0")
    rendered = "\n".join(cat[h].render([failure]) for h in sorted(cat.ids))
    assert "docker stop llm-prod" in rendered and "sudo ufw allow from 10.77.0.0/24" in rendered
    for literal in ("vllm-qwen38", "/home/lenovo", "169.254.0.0/16", "169.254.159.206"):
        assert literal not in rendered, literal


def test_the_sudoers_rule_names_exact_files_and_passes_visudo(tmp_path):
    import shutil
    import subprocess

    from gb10check.judging.hint_context import render_command

    _, contexts = _example_contexts()
    rank1 = contexts[1]
    line = str(rank1["sudoers_line"])
    assert line == (
        "lenovo ALL=(root) NOPASSWD: /usr/sbin/ufw status verbose, /usr/bin/cat /etc/ufw/user.rules, "
        "/usr/bin/dmesg, /usr/sbin/iptables -S FORWARD, /usr/sbin/iptables -S DOCKER-USER, "
        "/usr/bin/cat /etc/netplan/40-cx7.yaml"
    )
    assert "*" not in line  # a sudoers wildcard matches / and spaces: cat /etc/netplan/../shadow
    first = render_command(Catalogue.load()["sudo-required"].commands[0], rank1)[0]
    assert first.index("visudo -cf") < first.index("/etc/sudoers.d"), "the rule is checked before it is installed"
    if shutil.which("visudo") is None:
        pytest.skip("visudo (sudo) is not installed; bin/setup installs it as root")
    sudoers = tmp_path / "gb10check.sudoers"
    staged = first.split(" && sudo visudo", 1)[0].replace("f=$(mktemp)", f"f={sudoers}")  # the rule, as it is staged
    subprocess.run(["sh", "-c", staged], check=True, timeout=10)
    checked = subprocess.run(["visudo", "-cf", str(sudoers)], capture_output=True, text=True, timeout=10)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_docker_cgroup_fix_merges_daemon_json_and_keeps_the_nvidia_runtime(tmp_path):
    """The fix for one fault must not cause another: daemon.json on DGX OS holds the nvidia runtime."""
    import json
    import subprocess

    merge = next(c for c in Catalogue.load()["docker-cgroup-accounting"].commands if "python3 -c" in c)
    assert any("cp -a /etc/docker/daemon.json" in c for c in Catalogue.load()["docker-cgroup-accounting"].commands)
    daemon = tmp_path / "daemon.json"
    daemon.write_text(
        json.dumps(
            {
                "runtimes": {"nvidia": {"path": "nvidia-container-runtime"}},
                "exec-opts": ["native.cgroupdriver=cgroupfs"],
            }
        )
    )
    command = merge.removeprefix("sudo ").replace("/etc/docker/daemon.json", str(daemon))
    subprocess.run(["sh", "-c", command], check=True, timeout=10)
    merged = json.loads(daemon.read_text())
    assert merged == {
        "runtimes": {"nvidia": {"path": "nvidia-container-runtime"}},
        "exec-opts": ["native.cgroupdriver=systemd"],
    }


def test_host_key_advice_never_trusts_whatever_answers():
    cat = Catalogue.load()
    for hint_id in cat.ids:
        for command in cat[hint_id].commands:
            assert ">> ~/.ssh/known_hosts" not in command and ">>~/.ssh/known_hosts" not in command, (hint_id, command)
    assert "out of band" in cat["host-key-unknown"].fix
    assert "do not append" in cat["host-key-changed"].fix.lower()


def test_every_hint_id_the_library_names_is_builtin():
    """Errors, parsers and transports name hint ids (the plugin checks tests and itself at run time;
    the library's are held here, to the builtin catalogue a site file can override but not shrink)."""
    from gb10check.judging.hints import hint_ids_in_source

    cat = Catalogue.load()
    named = {
        (str(path.relative_to(PROJECT)), line, hint_id)
        for path in sorted((PROJECT / "gb10check").rglob("*.py"))
        for hint_id, line in hint_ids_in_source(path.read_text())
    }
    assert len(named) > 10
    assert [n for n in named if n[2] not in cat] == []


# -- a hint's commands are those of the failures it explains, for their nodes and items only ------------
def _commands(text):
    return [line.strip() for line in text.splitlines() if line.strip().startswith("$ ")]


def test_firewall_advice_is_what_the_failure_found_missing():
    """firewall-blocks: the failure says `sudo ufw allow 20001/tcp && sudo ufw allow from 192.168.101.0/24`;
    the hint says the same, not the link-local subnet that is allowed, and not without the API port."""
    from gb10check.inventory import load_inventory
    from gb10check.judging.hint_context import context_for

    inv = load_inventory(PROJECT / "fixtures" / "cluster.example.toml")
    missing = {"qsfp_subnet": ["192.168.101.0/24"], "ufw_port": ["20001"]}
    text = Catalogue.load()["ufw-blocks-cluster"].render([context_for(inv, "thinkstationpgx-30", extra=missing)])
    assert _commands(text) == [
        "$ sudo ufw allow from 192.168.101.0/24   # on thinkstationpgx-30",
        "$ sudo ufw allow 20001/tcp   # on thinkstationpgx-30",
        "$ sudo ufw status verbose   # on thinkstationpgx-30",
    ]


def test_link_down_advice_is_the_down_netdev_on_its_node_once():
    """link-down (enP2p1s0f0np0 down on rank 1): the failures on both ends, on the bandwidth run and the
    ssh mesh give one `ip link set` line, for the netdev that is down, on the node that has it down;
    never the healthy netdev, never the other end (which is up), never a line without its node."""
    from gb10check.inventory import load_inventory
    from gb10check.judging.hint_context import context_for

    inv = load_inventory(PROJECT / "fixtures" / "cluster.example.toml")
    r0, r1, down = "thinkstationpgx-30", "thinkstationpgx-32", "enP2p1s0f0np0"
    contexts = [
        context_for(inv, r1, rail=down, extra={"netdev_down": [down]}),  # admin DOWN here
        context_for(inv, r1, rail=down, extra={"node": r1, "netdev_down": [down]}),  # rank 0's end: no carrier
        context_for(inv, r0, rail=down),  # rank 0's RDMA port DOWN (its netdev is up)
        context_for(inv, None, rail=down),  # the bandwidth run: port 1 is Down
        context_for(inv, r1),  # the ssh mesh: no route to host
    ]
    ip_link = [c for c in _commands(Catalogue.load()["roce-link-down"].render(contexts)) if "ip link set" in c]
    assert ip_link == [f"$ sudo ip link set dev {down} up   # on {r1}"]


def test_a_failure_about_no_link_gets_no_list_of_every_link():
    """Without the failing check naming its items, a list field is empty: the command is left out."""
    from gb10check.inventory import load_inventory
    from gb10check.judging.hint_context import context_for

    inv = load_inventory(PROJECT / "fixtures" / "cluster.example.toml")
    ctx = context_for(inv, "thinkstationpgx-32")
    assert not {"netdev", "qsfp_subnet", "node_qsfp_ips", "netdev_down"} & set(ctx)
    one = context_for(inv, "thinkstationpgx-32", rail="enP2p1s0f0np0")
    assert (one["netdev"], one["qsfp_subnet"], one["node_qsfp_ips"]) == (
        ["enP2p1s0f0np0"],
        ["192.168.101.0/24"],
        ["192.168.101.11"],
    )
    cat = Catalogue.load()
    for hint_id in cat.ids:  # no command with a list field prints for a failure that named no items
        for template in cat[hint_id].commands:
            if {"netdev", "qsfp_subnet", "node_qsfp_ips", "netdev_down", "ufw_port"} & set(fields_in(template)):
                assert render_command(template, ctx) == [], (hint_id, template)


def test_a_command_that_says_where_it_runs_gets_no_node_label():
    """`ssh ... {ssh_target}` runs where gb10check runs, not on the node it cannot reach."""
    from gb10check.inventory import load_inventory
    from gb10check.judging.hint_context import context_for

    inv = load_inventory(PROJECT / "fixtures" / "cluster.example.toml")
    text = Catalogue.load()["node-unreachable"].render([context_for(inv, "thinkstationpgx-32")])
    assert _commands(text) == [
        "$ ssh -o BatchMode=yes -o ConnectTimeout=5 -p 22 lenovo@thinkstationpgx-32 true   # where gb10check runs"
    ]


def test_a_missing_file_read_by_a_glob_is_listed_by_that_glob_on_its_node():
    """`ls -l '/sys/class/infiniband/*/fw_ver'` looks for a file named `*`: the glob stays a glob, the
    rest is quoted, and the line says which node to run it on (the snapshot puts it in the context)."""
    import subprocess

    from gb10check.errors import MissingFile
    from gb10check.reading.snapshot import _NO_SUCH_FILE

    stderr = "grep: /sys/class/infiniband/*/fw_ver: No such file or directory\n"
    path = _NO_SUCH_FILE.search(stderr)["path"]  # type: ignore[index]
    error = MissingFile("spark-2: ...", context={"node": "spark-2", "path": path})
    text = Catalogue.load()["file-missing"].render([error.context])
    assert "    $ ls -l /sys/class/infiniband/*/fw_ver   # on spark-2" in text, text
    for hostile in ("/home/my models/*.safetensors", "/x/$(touch /tmp/owned)/*"):
        (line,) = render_command("ls -d {path}", {"path": hostile})
        words = subprocess.run(["bash", "-c", f"set -f; for w in {line[6:]}; do echo \"$w\"; done"],
                               capture_output=True, text=True, timeout=10).stdout.split("\n")[:-1]  # fmt: skip
        assert words == [hostile], (line, words)  # one word, nothing run; only the glob left to expand


def _bash_syntax_errors(commands: list[str]) -> list[tuple[str, str]]:
    """`bash -n` on each command: all in one script (each as a function's body) and, only when that one
    fails, each alone to name the bad ones."""
    import subprocess

    def check(script: str) -> str:
        run = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True, timeout=60)
        return run.stderr if run.returncode else ""

    if not check("".join(f"f_{i}() {{\n{c}\n}}\n" for i, c in enumerate(commands))):
        return []
    return [(c, err) for c in commands if (err := check(c + "\n"))]


def test_every_printed_command_is_valid_bash_with_no_quoted_path_glob():
    """What an operator pastes parses as bash for every node of the example, and no quoted word is a path
    holding a glob (`'/sys/class/infiniband/*/fw_ver'` names a file called `*`)."""
    from gb10check.judging.hint_context import render_command

    _, contexts = _example_contexts()
    cat = Catalogue.load()
    lines = sorted(
        {line for h in cat.ids for t in cat[h].commands for ctx in contexts for line in render_command(t, ctx)}
    )
    assert len(lines) > 200
    errors = _bash_syntax_errors([line for line in lines if not line.startswith("#")])
    assert not errors, "\n".join(f"{c!r}: {e}" for c, e in errors)
    # a single-quoted word with no space in it that is a path holding a glob character
    quoted_path_glob = re.compile(r"'(?:/|~/)[^' ]*[*?\[][^' ]*'")
    quoted_globs = [line for line in lines if quoted_path_glob.search(line)]
    assert not quoted_globs, quoted_globs
    assert quoted_path_glob.search("ls -l '/sys/class/infiniband/*/fw_ver'")
