"""What a hint's commands are filled with: the inventory's names, the failing node's, the error's.

A command in the catalogue names fields in braces (`docker logs {container}`); rendering fills
them from the inventory, the node the failure names and what the error carries, each value
shell-quoted, so that every printed command is complete and safe to paste. A list-valued field
(`sudo ufw allow from {qsfp_subnet}`) gives one line per value, and holds the items the failure is
about only (the failing link's, or what the failing check passed): never every link of the cluster.
A command whose field has no value here (the error did not say which file, the check did not say
which netdev is down) is left out rather than printed half-filled or for the wrong item.
"""

from __future__ import annotations

import getpass
import re
import shlex
from collections.abc import Iterable, Mapping

from gb10check import inventory as inv

__all__ = [
    "FIELDS",
    "GLOB_FIELDS",
    "Context",
    "context_for",
    "fields_in",
    "quote_glob",
    "render_command",
    "sudoers_line",
]

Context = dict[str, str | list[str]]

# field -> what it holds (the catalogue may name these and no others)
FIELDS = {
    "node": "the node's name in the inventory",
    "host": "the address or ssh_config alias the suite reaches the node by",
    "ssh_port": "the node's SSH port",
    "ssh_target": "user@host as the suite logs in",
    "login_user": "the account the suite logs in as on the node (the deployment user)",
    "connect_timeout": "the inventory's SSH connect timeout, whole seconds",
    "known_hosts": "the known_hosts file the suite checks host keys against",
    "container": "the deployment's container name",
    "compose_file": "the deployment's compose file",
    "compose_dir": "the folder of the compose file (docker compose runs there)",
    "env_file": "the deployment's .env",
    "image": "the deployment's image",
    "image_repo": "the image without its tag",
    "hf_cache": "the HF cache folder on the host",
    "hub_folder": "the model's hub folder in the HF cache",
    "model": "the model the service serves",
    "api_url": "the API's base URL",
    "qsfp_subnet": "the subnets the failure is about (a list: the failing rail's, or the check's)",
    "netdev": "the fabric netdevs the failure is about (a list: the node's on the failing rail, or the check's)",
    "netdev_down": "the fabric netdevs the failure found administratively down (a list, from the check)",
    "control_netdev": "the control plane's netdev ([control], else a pair's first rail)",
    "rdma_devices": "the node's RDMA devices on its rails, comma-separated (as NCCL_IB_HCA takes them)",
    "node_qsfp_ip": "the node's address on a rail it shares with rank 0 (else its control-plane address)",
    "node_qsfp_ips": "the node's addresses the failure is about (a list: on the failing rail, or the check's)",
    "rank0": "rank 0's node name (where the API and the suite run)",
    "peer_ip": "the other node's address on the failing rail (from the check: the one it pinged or measured)",
    "rank0_qsfp_ip": "rank 0's address on a rail it shares with the node (else its control-plane address)",
    "gid_index": "the GID index of the node's rails",
    "reasoning_parser": "the --reasoning-parser the inventory's [service] asks for",
    "tool_call_parser": "the --tool-call-parser the inventory's [service] asks for",
    "sudoers_line": "a sudoers rule naming exactly the root-only reads the suite makes on the node",
    "history_dir": "the --history folder of the run",
    "ufw_port": "the TCP ports the failure found UFW dropping (a list, from the check)",
    "ping_size": "the payload of the ping that failed, the netdev's MTU minus 28 (from the check)",
    "workload_user": "the user vLLM's processes run as (the compose's `user:`, from the failure)",
    "command": "the command the failure ran (from the error)",
    "path": "the file the failure could not read (from the error)",
    "set_at": "where the launch plan sets the value the failure is about: a file and its line (from the check)",
    "source_node": "a node that has what the failing node lacks, to copy it from (from the check: rank 0 first)",
    "target_ip": "the failing node's address on a rail it shares with source_node (else its control-plane address)",
}
_FIELD = re.compile(r"(?<![%{$])\{([a-z][a-z0-9_]*)\}(?!\})")


def fields_in(command: str) -> list[str]:
    return _FIELD.findall(command)


# sudoers(5) reads a command's arguments at two levels: its parser takes `\,` `\:` `\=` `\#` and `\ ` (a bare `#`
# starts a comment: the rest of the line, the other commands too, would be lost), then fnmatch(3) takes `\*`
# `\?` `\[` `\]` (a bare one is a wildcard, which matches `/` and spaces) and `\^` (leading, a regular
# expression); a literal backslash passes both, so it takes four
_SUDOERS_SPECIAL = re.compile(r"([,:=# *?\[\]^])")
# a name with a control character cannot stand in a sudoers line (a line feed ends the rule)
_UNWRITABLE = re.compile(r"[\x00-\x1f\x7f]")
# a user name: the characters sudoers(5) gives a meaning in a word
_SUDOERS_WORD = re.compile(r"([!=:,()\\# ])")


def _sudoers_escape(word: str) -> str:
    return _SUDOERS_SPECIAL.sub(r"\\\1", word.replace("\\", "\\" * 4))


def sudoers_line(user: str, root_reads: Iterable[str]) -> str:
    """`user ALL=(root) NOPASSWD: cmd args, ...`: each command with its exact arguments, every character
    sudoers or its wildcards read escaped (a node's file names are its own: `a*.yaml` would allow
    `cat a.yaml /etc/shadow`, `a#b.yaml` would end the rule); a read of a file whose name holds a control
    character is left out, and the rule says so in a comment."""
    reads = list(root_reads)
    kept = [c for c in reads if not _UNWRITABLE.search(c)]
    commands = [" ".join(_sudoers_escape(w) for w in shlex.split(c)) for c in kept]
    who = _SUDOERS_WORD.sub(r"\\\1", user)
    line = f"{who} ALL=(root) NOPASSWD: " + ", ".join(commands)
    left_out = len(reads) - len(kept)
    return line + (f"  # {left_out} read(s) left out: a file name with a control character" if left_out else "")


def context_for(
    inventory: inv.Inventory,
    node: str | None,
    *,
    root_reads: Iterable[str] = (),
    rail: str | None = None,
    extra: Mapping[str, str | list[str]] | None = None,
) -> Context:
    """The fields known for a failure on `node` (None: a check across the cluster) about the rail
    named `rail` (None: about no one rail; the list fields are then only what `extra` gives)."""
    ctx: Context = {
        "connect_timeout": str(max(1, round(inventory.ssh.connect_timeout))),
        "known_hosts": inventory.ssh.known_hosts or "~/.ssh/known_hosts",
    }
    rank0 = inventory.api_node.name
    ctx["rank0"] = rank0
    mine = inventory.members_of(node) if node is not None else []
    failing = next((r for r in inventory.rails if r.name == rail), None)
    if failing is not None:  # the failure's own rail: its items only, never every rail's
        ctx["qsfp_subnet"] = [str(failing.subnet)]
        member = failing.member(node) if node is not None else None
        ctx["netdev"] = [member.netdev] if member else list(dict.fromkeys(m.netdev for m in failing.members))
    rails = [r for r, _ in mine] or list(inventory.rails)
    if rails:
        ctx["gid_index"] = str(min(r.gid_index for r in rails))
    if mine:
        ctx["rdma_devices"] = ",".join(m.rdma_device for _, m in mine)
    control = inventory.control_netdev(node or rank0)
    if control is not None:
        ctx["control_netdev"] = control
    d = inventory.deployment
    if d is not None:
        env_file = inventory.env_file_of(node) if node is not None else d.dotenv
        if d.compose_file and d.compose_dir:
            ctx |= {"compose_file": d.compose_file, "compose_dir": d.compose_dir}
        ctx |= {"env_file": env_file} if env_file else {}
        ctx |= {
            "container": d.container,
            "image": d.image,
            "image_repo": d.image.rsplit(":", 1)[0] if ":" in d.image.rsplit("/", 1)[-1] else d.image,
            "hf_cache": d.hf_cache,
        }
    s = inventory.service
    if s is not None:
        ctx |= {"model": s.model, "api_url": s.base_url.rstrip("/")}
        parsers = {"reasoning_parser": s.reasoning_parser, "tool_call_parser": s.tool_call_parser}
        ctx |= {k: v for k, v in parsers.items() if v}
        if d is not None:
            ctx["hub_folder"] = f"{d.hf_cache.rstrip('/')}/hub/models--{s.model.replace('/', '--')}"
    spec = next((n for n in inventory.nodes if n.name == node), None)
    if spec is not None:
        user = spec.user or getpass.getuser()
        host = spec.host or "localhost"
        ctx |= {
            "node": spec.name,
            "host": host,
            "ssh_port": str(spec.port or 22),
            "ssh_target": f"{spec.user}@{host}" if spec.user else host,
            "login_user": user,
        }
        shared = inventory.rails_between(spec.name, rank0) if spec.name != rank0 else []
        near = shared[0].ip(spec.name) if shared else inventory.control_address(spec.name)
        if near is not None:
            ctx["node_qsfp_ip"] = near
        far = shared[0].ip(rank0) if shared else inventory.control_address(rank0)
        if far is not None:
            ctx["rank0_qsfp_ip"] = far
        if failing is not None and failing.member(spec.name) is not None:
            ctx["node_qsfp_ips"] = [failing.ip(spec.name)]
        reads = list(root_reads)
        if reads:
            ctx["sudoers_line"] = sudoers_line(user, reads)
    ctx |= dict(extra or {})
    return ctx


GLOB_FIELDS = frozenset({"path"})  # a path the suite read with a glob (/sys/class/infiniband/*/fw_ver)
_GLOB = re.compile(r"([*?])")


def quote_glob(path: str) -> str:
    """A path for the shell with its `*` and `?` left to expand and everything else quoted:
    `'/sys/class/infiniband/*/fw_ver'` would look for a file named `*`."""
    return "".join(part if _GLOB.fullmatch(part) else shlex.quote(part) for part in _GLOB.split(path) if part)


def render_command(template: str, ctx: Context) -> list[str]:
    """The command's lines with every field filled and quoted; [] when a field has no value here."""
    names = fields_in(template)
    if any(name not in ctx for name in names):
        return []
    lists = [n for n in dict.fromkeys(names) if isinstance(ctx[n], list)]
    if len(lists) > 1:
        raise ValueError(f"{template!r}: at most one list field per command ({lists})")
    values = ctx[lists[0]] if lists else [None]
    lines = []
    for value in values:

        def fill(match: re.Match[str], item: str | None = value) -> str:
            field = ctx[match[1]]
            text = item if isinstance(field, list) and item is not None else str(field)
            return quote_glob(text) if match[1] in GLOB_FIELDS else shlex.quote(text)

        lines.append(_FIELD.sub(fill, template))
    return lines
