"""The scenario format as typed models: a scenario is checked as strictly as an inventory.

A typo in a nested key (`docker = { gpuu = "no-runtime" }`) or a netdev that no link has
(`down = ["enP2p1s0f0np00"]`) would otherwise be ignored, and the "broken" cluster would pass.
These models validate the merged scenario (after `base`); sim/ still reads the plain data.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from gb10check import inventory as inv
from sim.stub import TOOLS

__all__ = [
    "API_PORT",
    "DEPLOYMENT_USER",
    "MEMINFO",
    "Collective",
    "Container",
    "Deployment",
    "Docker",
    "Driver",
    "Expect",
    "FakeApi",
    "Gpu",
    "Hf",
    "Host",
    "Image",
    "LongLine",
    "NcclLibrary",
    "Netplan",
    "Node",
    "RdmaPort",
    "Scenario",
    "Stub",
    "Ufw",
    "Wired",
    "rails_from_links",
]

DEPLOYMENT_USER = "lenovo"  # the field report's: what `id -un` prints on a node unless `users` says otherwise
API_PORT = 20001  # the fake vLLM's port unless [service] port says otherwise
# /proc/meminfo of a GB10 before vLLM starts, kB: MemTotal, little page cache (a scenario's meminfo adds to it);
# CmaTotal: the 32 MiB CMA area of Ubuntu's arm64 kernel configuration (CONFIG_CMA_SIZE_MBYTES=32)
MEMINFO = {
    "MemTotal": 124958720,
    "MemFree": 118400000,
    "MemAvailable": 120100000,
    "SwapTotal": 16383996,  # a DGX Spark's 16 GiB swap file
    "SwapFree": 16383996,
    "CmaTotal": 32768,
    "CmaFree": 30720,
}


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Driver(_Spec):
    kernel: str = "580.173.02"  # "" : no module loaded
    userspace: str = "580.173.02"
    cuda: str = "13.0"
    installed: str | None = None  # what modinfo reports (default: userspace)


class Gpu(_Spec):
    """nodes.<name>.gpu: what nvidia-smi's query says of the GPU's state (the idle figures of a GB10's
    `nvidia-smi`: P8, 42 C, 4 W; the clocks are the sim's own); `reasons`: the clock event reasons
    active (a HW thermal or power brake slowdown is a HW slowdown too); reported = false: every reason
    [N/A], as a GPU that does not report them."""

    pstate: str = Field("P8", pattern=r"^P\d{1,2}$")
    sm_mhz: float = Field(208, ge=0)
    max_sm_mhz: float = Field(2418, gt=0)
    power_w: float = Field(4.45, ge=0)
    temperature_c: float = Field(42, ge=0, le=150)
    reasons: list[
        Literal["hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown", "sw_power_cap"]
    ] = []
    reported: bool = True


class Stub(_Spec):
    tool: str  # one of sim/stub.py's TOOLS
    match: str = ""
    stdout: str = ""
    stderr: str = ""
    rc: int = 0
    delay: float = Field(0, ge=0)
    repeat: int = Field(1, ge=0)  # print stdout and stderr this many times; 0: forever (a flooding tool)

    @field_validator("tool")
    @classmethod
    def _known_tool(cls, tool: str) -> str:
        if tool not in TOOLS:
            raise ValueError(f"the sim stubs {', '.join(sorted(TOOLS))}; not {tool!r}")
        return tool


class Image(_Spec):
    tags: list[str]
    id: str
    layers: list[str]
    arch: str = "arm64"


class Container(_Spec):
    name: str
    image: str = ""
    status: Literal["running", "exited", "created", "restarting", "paused", "dead"] = "running"
    args: list[str] = []
    env: list[str] | None = None  # NAME=value, as docker inspect's Config.Env
    exit_code: int = 0  # when not running


class LongLine(_Spec):
    """One line of `chars` characters, `unit` over and over: a container that printed one huge line."""

    unit: str = Field(min_length=1)
    chars: int = Field(gt=0, le=100_000_000)


class NcclLibrary(_Spec):
    """docker.nccl_library: the libnccl the container loads (default: torch's wheel, the deployment's NCCL
    version); its hash is the file's, here a digest of path and version unless given (another path or
    version: another binary)."""

    path: str = Field("/usr/local/lib/python3.12/dist-packages/nvidia/nccl/lib/libnccl.so.2", pattern=r"^/\S+$")
    version: str | None = Field(None, pattern=r"^\d+\.\d+\.\d+\S*$")  # default: [deployment] nccl_version
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")


class Collective(_Spec):
    """docker.collective: NCCL in the deployment's image, as gb10check's collective runs it (sim/collective_rank.py)."""

    ib: bool = True  # the image's RDMA userspace is there: false, NCCL finds no IB device and uses sockets
    busbw_gbs: float = Field(24.0, gt=0)  # the bus bandwidth its largest buffer reaches (smaller ones less)
    wrong_result: bool = False  # this rank's all_reduce comes out wrong
    hang: bool = False  # NCCL's init never returns (until the container is removed)


class Docker(_Spec):
    daemon: Literal["up", "down"] = "up"
    compose_plugin: bool = True  # false: `docker compose` is not a docker command (the fallback reader)
    gpu: Literal["ok", "no-runtime"] = "ok"
    cgroup_driver: Literal["systemd", "cgroupfs"] = "systemd"
    cgroup_version: Literal["1", "2"] = "2"
    images: list[Image] | None = None
    container: Container | None = None
    image_files: dict[str, str] = {}  # path -> text: files of the deployment's image (and its container)
    image_env: list[str] | None = None  # NAME=value: the deployment image's own ENV (docker image inspect's Config.Env)
    log: list[str] | None = None  # the container's log lines instead of a healthy start's (docker logs)
    log_extra: list[str] = []  # lines after the container's log (a healthy start's, or `log`)
    log_long_line: LongLine | None = None  # one line that long after them, stamped (a file cannot hold it)
    nccl_library: NcclLibrary = NcclLibrary()  # the libnccl the container loads (skew across the nodes)
    # whether the image's libmlx5 (rdma-core) exports mlx5dv_reg_dmabuf_mr (NCCL's GPU Direct RDMA needs it)
    mlx5_dmabuf: bool = True
    collective: Collective = Collective()  # NCCL in the image, as gb10check's collective runs it


class Ufw(_Spec):
    enabled: bool = False
    rules: list[str] = []
    enabled_on_boot: bool = True
    unit: Literal["enabled", "disabled"] = "enabled"


class Netplan(_Spec):
    mode: str = Field("600", pattern=r"^[0-7]{3,4}$")
    omit: list[str] = []
    absent: bool = False  # no QSFP netplan file at all (/etc/netplan empty)


class Hf(_Spec):
    checkpoint: Literal["fp8", "bf16"] = "fp8"
    revision: str | None = None
    dereferenced: bool = False
    unreadable: list[str] = []
    missing_files: list[str] = []
    absent: bool = False
    config: dict[str, int] = {}  # config.json values over the checkpoint's (e.g. heads padded for TP=3)
    # the filesystem `stat -f -c %T` names for the HF cache ("nfs4": one shared by the nodes); None: the real one
    filesystem: str | None = Field(None, pattern=r"^[\w./-]+$")


class RdmaPort(_Spec):
    """nodes.<name>.rdma.<netdev>: the link's RDMA port on that node, when not as on a healthy GB10."""

    device: str | None = None  # the node's name for it, when not the link's (a renamed device)
    rate: str = "200 Gb/sec (2X NDR)"  # what sysfs `rate` says the port negotiated
    extra_addresses: list[str] = []  # addresses the netdev got before the link's: they shift its GIDs
    bw_gbps: float = Field(109.0, ge=0)  # what ib_write_bw measures from this end (the field report's 109)
    # what it measures toward a given peer on this rail, when not bw_gbps (node or rank<k> -> Gb/s): a slow
    # pair behind a switch; a run takes the lower of its two ends' figures, as the slower end limits it
    bw_to: dict[str, float] = {}
    # the run fails with completion errors instead, of this status (12, 13, 10, 11 in libibverbs' numbers)
    bw_failure: Literal["retry-exceeded", "rnr-retry-exceeded", "remote-access", "remote-operation"] | None = None


class Host(_Spec):
    """nodes.<name>.host: what the node runs and boots from, as tests_preflight/test_skew.py compares it
    across the nodes (the sim's defaults: DGX OS 7's kernel and Ubuntu release; the BIOS strings are the
    sim's own, in SMBIOS's shape; the ConnectX firmware that the boot log's mlx5_core line names)."""

    kernel: str = Field("6.17.0-1014-nvidia", pattern=r"^\S+$")  # /proc/sys/kernel/osrelease (uname -r)
    os_release: str = "Ubuntu 24.04.3 LTS"  # /etc/os-release's PRETTY_NAME (its VERSION follows it)
    bios_version: str = Field("2.1.0", min_length=1)  # /sys/class/dmi/id/bios_version
    bios_date: str = Field("08/14/2025", pattern=r"^\d\d/\d\d/\d{4}$")  # /sys/class/dmi/id/bios_date
    cx_firmware: str = Field("28.45.1020", pattern=r"^\d+\.\d+\.\d+$")  # every RDMA device's fw_ver
    # DGX OS's release, /etc/dgx-release's DGX_OTA_VERSION (installed as 7.2.3); "none": no such file (no DGX OS)
    dgx_os: str = Field("7.4.0", pattern=r"^(none|\d+(\.\d+)+)$")


class Node(_Spec):
    rank: int = Field(ge=0)
    hostname: str | None = None
    lan_address: str | None = None
    ssh_host: str | None = None  # what the inventory reaches it by (default: its LAN address)
    driver: Driver = Driver()
    gpu_uuid: str | None = None
    gpu: Gpu = Gpu()  # the GPU's clocks, power, temperature and clock event reasons (nvidia-smi's query)
    meminfo: dict[str, int] = {}
    down: list[str] = []
    # ports with no carrier, both ends administratively up: the cable is out of this port (a direct
    # cable: dark at both ends), or its switch port is down (only this node's end)
    unplugged: list[str] = []
    mtu: dict[str, int] = {}  # netdev -> MTU on this node (default: the kernel's 1500)
    addresses: dict[str, str] = {}  # netdev -> the address this node really has, when not the link's (renumbered)
    perftest_version: Literal["24.01", "26.04"] = "24.01"  # DGX OS 7 ships 24.01 (MB/sec, numeric status)
    rdma: dict[str, RdmaPort] = {}  # netdev -> how its RDMA port differs from a healthy one
    routes: list[str] = []  # `ip route add` arguments, e.g. "default via 169.254.94.252 dev enp1s0f0np0"
    powered_off: bool = False
    boot_delay: float = Field(0, ge=0, le=300)  # seconds after bring-up before sshd answers (a node still booting)
    blackholed: bool = False  # sshd up, its port silently drops everything
    sshd: bool = True  # false: the node is up, its SSH port refuses connections
    users: list[str] = Field([DEPLOYMENT_USER], min_length=1)
    unprivileged: bool = False
    sudo: bool | None = None
    ssh_key: bool = True
    compose_edits: list[tuple[str, str]] = []
    # [old, new] in this node's compose made after its container started: the file says one thing, the running
    # container another (a restart pending)
    edited_after_start: list[tuple[str, str]] = []
    env: dict[str, str] = {}
    # the language the node is installed in: variables its sshd sets for every session, as pam_env reads
    # /etc/default/locale on Ubuntu (LANG, LANGUAGE, LC_*); its real tools then translate (sim/language.py)
    login_env: dict[str, str] = {}
    docker: Docker = Docker()
    ufw: Ufw = Ufw()
    netplan: Netplan = Netplan()
    hf: Hf = Hf()
    stubs: list[Stub] = []
    kernel_log: list[str] = []  # dmesg lines after the node's boot log ("[  123.456] ..." as dmesg prints them)
    etc_files: dict[str, str] = {}  # path under /etc -> text: files of the node's own /etc (nccl.conf, logind)
    linger: list[str] = []  # users with lingering enabled (/var/lib/systemd/linger)
    nccl_tests: dict[str, float] = {}  # what all_gather_perf measures from this node: busbw_gbs, wrong, ranks
    host: Host = Host()  # kernel, OS release, BIOS, ConnectX firmware (skew across the nodes)
    # netdev pairs that trade places on the wire (the node's ends of two cables, or two switch ports,
    # swapped): each keeps its name and address, the other's cable or bridge plugs into it
    crossed: list[tuple[str, str]] = []
    # the node forwards (net.ipv4.ip_forward = 1), and `iptables` arguments run at boot in its namespace,
    # e.g. "-P FORWARD DROP" (what Docker sets when it starts), "-N DOCKER-USER"
    ip_forward: bool = False
    iptables: list[str] = []

    def placed(self, netdev: str) -> str:
        """The netdev that sits where `netdev`'s cable or switch port is wired (itself unless crossed)."""
        for a, b in self.crossed:
            if netdev in (a, b):
                return b if netdev == a else a
        return netdev

    @field_validator("login_env")
    @classmethod
    def _locale_variables(cls, env: dict[str, str]) -> dict[str, str]:
        wrong = [
            k
            for k, v in env.items()
            if not re.fullmatch(r"LANG|LANGUAGE|LC_[A-Z]+", k) or not re.fullmatch(r"[\w.:@-]*", v)
        ]
        if wrong:
            raise ValueError(f"login_env takes LANG, LANGUAGE and LC_* with locale names, not {wrong}")
        return env

    @field_validator("etc_files")
    @classmethod
    def _under_etc(cls, files: dict[str, str]) -> dict[str, str]:
        strays = [path for path in files if not path.startswith("/etc/") or ".." in path]
        if strays:
            raise ValueError(f"etc_files takes paths under /etc/ only, not {strays}")
        return files

    @property
    def login_user(self) -> str:
        """The node's first name of uid 0 (or, unprivileged, its ordinary account): what `id -un` prints."""
        return self.users[0]

    def lan(self) -> str:
        """Where SSH reaches it on the LAN (address/prefix)."""
        return self.lan_address or f"192.168.40.{30 + 2 * self.rank}/24"

    def meminfo_kb(self) -> dict[str, int]:
        return {**MEMINFO, **self.meminfo}


Wired = tuple[tuple[str, str], tuple[str, str]]  # a cable's two real ends, each [node name, netdev]


def rails_from_links(links: object, where: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The older `[links.<name>]` tables as the inventory's rails, and their `wired` as the scenario's
    [wired] table: `rdma_device` and `addresses` (every node on the netdev <name>) is the rail of that
    netdev, `members` the rail <name>, a link with neither changes the base's rail <name> (`mtu = 9000`);
    a link's `wired` (over its base's) is that fault."""
    if not isinstance(links, dict):
        raise ValueError(f"{where}: [links] must be tables [links.<name>]")
    rails: list[dict[str, Any]] = []
    wired: dict[str, Any] = {}
    for name, link in links.items():
        if not isinstance(link, dict):
            raise ValueError(f"{where}: links.{name} must be a table")
        link = dict(link)
        if "wired" in link:
            wired[name] = link.pop("wired")
        if not link:
            continue
        short = "rdma_device" in link or "addresses" in link
        rails.append({"netdev": name, **link} if short else {"name": name, **link})  # no members: a change
    return rails, wired


class FakeApi(_Spec):
    """[service]: what the fake vLLM on rank 0 serves (sim/fake_vllm.py)."""

    # loading: the port refuses connections, as while vLLM loads weights; down: nothing serves (vLLM exited)
    state: Literal["ready", "loading", "down"] = "ready"
    served_model_name: str | None = None
    model: str | None = None
    max_model_len: int | None = None
    port: int = Field(API_PORT, ge=1, le=65535)
    vllm_version: str = "0.12.0"
    api_key: str | None = None
    shapes: Literal["0.11", "0.12", "0.33"] = "0.33"  # which vLLM's field names the answers use
    reasoning_parser: bool = True  # false: the raw <think> block lands in the content
    tool_parser: bool = True  # false: a tool call with tool_choice auto gets vLLM's 400
    decode_tokens_per_s: float = Field(500.0, gt=0)  # real time per generated token
    ttft_s: float = Field(0.05, ge=0)
    failure: (
        Literal["5xx", "garbage", "stall", "stuck", "wrong-answers", "tool-args-truncated", "endless-reasoning"] | None
    ) = None
    startup_seconds: float = Field(0, ge=0)  # weights loading before the API listens (memory falls, the log grows)
    startup_min_available_kb: int | None = (
        None  # MemAvailable at the end of loading (default: what a healthy start leaves)
    )
    # the first start after a topology change: this many of the log's seconds compiling and tuning kernels
    # after the weights (sim/vllm_logs.py retuning_lines), scaled with the rest into startup_seconds
    retune_seconds: float = Field(0, ge=0)


class Deployment(_Spec):
    # how the nodes start vLLM: the compose (sim/deploy/compose.yml); the same deployment as a `docker run`
    # launch script (sim/deploy/docker-run.sh); or the compose started by a script that sets the rank in the
    # launcher's shell (sim/deploy/compose-up.sh). A script is `launch = { script, args = [RANK] }` in the inventory
    launcher: Literal["compose", "docker-run", "compose-script"] = "compose"
    compose_edits: list[tuple[str, str]] = []
    launcher_edits: list[tuple[str, str]] = []  # [old, new] in the launch script ("docker-run", "compose-script")
    hf: Hf = Hf()
    running: bool = True  # the containers run on every node (after `docker compose up`); false: before start
    nccl_transport: Literal["IB", "Socket"] = "IB"  # what NCCL logged it uses
    eager: bool = False  # vLLM runs without CUDA graphs (the log's config dump says enforce_eager=True)
    nccl_version: str = Field("2.29.7", pattern=r"^\d+\.\d+\.\d+$")  # what every rank logs: vLLM is using nccl==


class Expect(_Spec):
    """What a run against the scenario must give: the self-tests read it (selftests/e2e/test_scenarios.py)."""

    marker: Literal["preflight", "network", "service", "smoke"] | None = None  # None: every marker
    args: list[str] = []  # the run's own options (`--wait-ready=30`)
    # test id (or a pattern with `*`: every test it matches) -> the hint ids its failure carries
    fails: dict[str, list[str]] = {}
    skips: dict[str, str] = {}  # test id -> a phrase of the skip's reason
    # test id (or a `*` pattern) -> a phrase of what it costs: exactly these checks record an advisory
    advisories: dict[str, str] = {}
    advice: dict[str, str] = {}  # test id (or pattern) -> a phrase of the advice it records (others may too)


class Scenario(_Spec):
    description: str = ""
    expect: Expect | None = None  # the file's own: never inherited through `base`
    topology: Literal["pair", "ring", "switch"] | None = None  # None: the nodes and rails the file lists
    size: int | None = Field(None, ge=2, le=8)
    nodes: dict[str, Node] = Field(min_length=1)
    # the fabric in the inventory's words ([[rails]], gb10check/inventory.py Rail: one validator), and
    # its one fault of the cabling itself: a rail's cable wired between other ends than its members
    rails: list[inv.Rail] = []
    wired: dict[str, Wired] = {}
    unused_ports: dict[str, str] = {}  # rdma device -> netdev
    service: FakeApi = FakeApi()
    deployment: Deployment = Deployment()
    inventory: dict[str, object] = {}  # checked against the inventory model on its own

    def switched(self, rail: inv.Rail) -> bool:
        """Does the sim wire the rail as a switch's (a bridge every end plugs into), not a cable (a veth
        pair between its two ends)."""
        return self.topology == "switch" or len(rail.members) > 2

    def ends_of(self, node: str) -> list[tuple[inv.Rail, inv.Member]]:
        """The node's ends of the fabric: each rail it is on, with its member there."""
        return [(rail, m) for rail in self.rails for m in rail.members if m.node == node]

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        names = [rail.name for rail in self.rails]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"rails {twice} named twice: each rail once")
        for rail in self.rails:
            unknown = sorted(set(rail.nodes) - set(self.nodes))
            if unknown:
                raise ValueError(f"rail {rail.name} names {unknown}, which are not nodes of the scenario")
        by_name = {rail.name: rail for rail in self.rails}
        for name, ends in self.wired.items():
            if name not in by_name:
                raise ValueError(f"wired.{name}: no rail is named {name} ({', '.join(names)})")
            if self.switched(by_name[name]):
                raise ValueError(f"wired.{name}: rail {name} is a switch's, not a cable")
            strays = [f"{n} {d}" for n, d in ends if n not in self.nodes]
            if strays:
                raise ValueError(f"wired.{name} names {strays}: not nodes of the scenario")
        unused = set(self.unused_ports.values())
        for name, node in self.nodes.items():
            mine = {e.netdev: (rail, e) for rail, e in self.ends_of(name)}
            unknown = sorted(set(node.down) - set(mine) - unused)
            if unknown:
                raise ValueError(
                    f"nodes.{name}.down names {unknown}, which no rail or unused port of {name} has: "
                    f"{sorted(set(mine) | unused)}"
                )
            for key in ("unplugged", "mtu", "addresses", "rdma"):
                strays = sorted(set(getattr(node, key)) - set(mine))
                if strays:
                    raise ValueError(f"nodes.{name}.{key} names {strays}, which no rail of {name} has: {sorted(mine)}")
            crossed = [netdev for pair in node.crossed for netdev in pair]
            strays = sorted(set(crossed) - set(mine) - unused)
            twice = sorted({n for n in crossed if crossed.count(n) > 1})
            if strays or twice:
                raise ValueError(
                    f"nodes.{name}.crossed names {strays or twice}, which no rail or unused port of {name} has "
                    f"or another pair already crosses: each pair two of {sorted(set(mine) | unused)}"
                )
            omitted = sorted(set(node.netplan.omit) - set(mine))
            if omitted:
                raise ValueError(
                    f"nodes.{name}.netplan.omit names {omitted}, which no rail of {name} has: {sorted(mine)}"
                )
            for netdev, port in node.rdma.items():
                rail = mine[netdev][0]
                peers = [n for n in rail.nodes if n != name]
                strangers = sorted(set(port.bw_to) - set(peers))
                if strangers:
                    raise ValueError(
                        f"nodes.{name}.rdma.{netdev}.bw_to names {strangers}, which are not {name}'s peers on "
                        f"{rail.name}: {peers}"
                    )
        return self
