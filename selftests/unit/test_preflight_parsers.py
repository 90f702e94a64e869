"""Preflight parsers and pure logic: captures of the real tools, and bad input that must never pass."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from gb10check.deployment.compose import parse_size
from gb10check.deployment.compose_fallback import Interpolation, load_service, parse_dotenv
from gb10check.errors import ParseError
from gb10check.inventory import Inventory
from gb10check.judging.firewall import needs_for, verdict
from gb10check.judging.fit import GIB, Fit, parse_model_config
from gb10check.reading.parsers.docker import (
    ContainerGpuFailure,
    ContainerGpus,
    parse_container_gpus,
    parse_container_inspect,
    parse_docker_info,
    parse_image_inspect,
    parse_image_list,
)
from gb10check.reading.parsers.framed import FileRead, parse_framed_files
from gb10check.reading.parsers.hfcache import (
    Entry,
    parse_index_total_size,
    parse_listing,
    parse_revision,
    readable_by,
    snapshot_files,
)
from gb10check.reading.parsers.meminfo import parse_meminfo
from gb10check.reading.parsers.netplan import configured_netdevs
from gb10check.reading.parsers.nvidia import parse_modinfo_version, parse_nvidia_smi_query
from gb10check.reading.parsers.ufw import parse_default_input_policy, parse_ufw_conf, parse_ufw_status, parse_user_rules
from gb10check.reading.snapshot import Snapshot
from gb10check.reading.transport import CommandResult
from selftests.conftest import DATA

COMPOSE = (Path(__file__).resolve().parents[2] / "sim" / "deploy" / "compose.yml").read_text()
ENV0 = {"MODEL_ID": "Qwen/Qwen3.8-Flash-Next-FP8", "NODE_RANK": "0", "VLLM_HOST_IP": "169.254.94.252"}


# -- compose -----------------------------------------------------------------------------------
def test_dotenv_quotes_comments_export():
    env = parse_dotenv("# c\nexport A=1\nB = 'x y' # k\nC=\"q\"\nD=v # comment\n\nE=\n")
    assert env == {"A": "1", "B": "x y", "C": "q", "D": "v", "E": ""}


@pytest.mark.parametrize("text", ["NOEQUALS\n", "A='open\n"])
def test_dotenv_garbage_names_the_line(text):
    with pytest.raises(ParseError, match="line 1"):
        parse_dotenv(text)


def test_interpolation_follows_compose():
    interp = Interpolation({"SET": "v", "EMPTY": ""})
    assert interp("$SET ${SET} $$SET ${EMPTY:-d} ${EMPTY-d} ${UNSET-d} ${SET:+alt} ${UNSET:+alt}") == (
        "v v $SET d  d alt "
    )
    assert interp("${UNSET}") == ""
    with pytest.raises(ParseError, match="required variable NEED"):
        interp("${NEED:?set it in .env}")


@pytest.mark.parametrize(("text", "size"), [("105G", 105 * GIB), ("105gb", 105 * GIB), ("512m", 512 * 2**20), (7, 7)])
def test_sizes_are_binary_as_docker_reads_them(text, size):
    assert parse_size(text, "x") == size


def test_bare_no_restart_reads_as_compose_does():
    svc = load_service("services:\n  a:\n    restart: no\n    image: x\n", {}, container=None, what="c")
    assert svc.restart == "no"


def test_compose_garbage_is_a_parse_error():
    with pytest.raises(ParseError, match="not valid YAML"):
        load_service("services: [\n", {}, container=None, what="c.yml")
    with pytest.raises(ParseError, match="no 'services:'"):
        load_service("version: 3\n", {}, container=None, what="c.yml")
    with pytest.raises(ParseError, match="no service whose container is 'z' among a, b"):
        load_service("services:\n  a: {}\n  b: {}\n", {}, container="z", what="c.yml")


def test_the_service_is_the_one_that_names_the_container_never_a_guess():
    named = "services:\n  api:\n    image: x\n    container_name: vllm-qwen\n"
    assert load_service(named, {}, container="vllm-qwen", what="c.yml").name == "api"
    # the only service, but its container is another: refused (it was taken before)
    with pytest.raises(ParseError, match="no service whose container is 'vllm' among api"):
        load_service(named, {}, container="vllm", what="c.yml")
    # without container_name, Compose names the container <project>-<service>-<n> (v1: with `_`)
    generated = "services:\n  vllm:\n    image: x\n  web:\n    image: y\n"
    for container in ("spark-vllm-1", "spark_vllm_1", "vllm"):
        assert load_service(generated, {}, container=container, what="c.yml").name == "vllm"
    with pytest.raises(ParseError, match="no service whose container is 'spark-vllm'"):
        load_service(generated, {}, container="spark-vllm", what="c.yml")


# -- ufw ---------------------------------------------------------------------------------------
def test_ufw_status_captures(capture):
    assert parse_ufw_status(capture("commands/ufw.status.inactive.dgx_spark.txt")).active is False
    status = parse_ufw_status(capture("commands/ufw.status.verbose.generated_by_ufw0.36.2_code.txt"))
    assert (status.active, status.default_incoming) == (True, "deny")
    with pytest.raises(ParseError):
        parse_ufw_status("ERROR: You need to be root to run this script\n")


def test_ufw_rules_and_first_match(capture):
    rules = parse_user_rules(capture("commands/ufw.user.rules.generated_by_ufw0.36.2_code.txt"))
    assert len(rules) == 7 and rules[3].interface == "enp1s0f1np1"
    inventory = Inventory.model_validate(
        {
            "nodes": [{"name": "a", "rank": 0, "transport": "local"}, {"name": "b", "rank": 1, "host": "b"}],
            "rails": [
                {
                    "netdev": "enp1s0f0np0",
                    "rdma_device": "r0",
                    "addresses": {"a": "169.254.94.252/16", "b": "169.254.159.206/16"},
                },
                {
                    "netdev": "enP2p1s0f0np0",
                    "rdma_device": "r1",
                    "addresses": {"a": "192.168.101.10/24", "b": "192.168.101.11/24"},
                },
            ],
        }
    )
    needs = needs_for(inventory, "a", 20001)
    verdicts = [verdict(n, rules, "deny")[0] for n in needs]
    assert verdicts == [True, False, True]  # 169.254/16 allowed, 192.168.101/24 not, 20001/tcp allowed
    assert needs[1].allow_line == "sudo ufw allow from 192.168.101.0/24"
    # a deny before an allow wins, as in ufw
    deny = parse_user_rules("*filter\n### tuple ### deny any any 0.0.0.0/0 any 169.254.0.0/16 in\n### END RULES ###\n")
    assert verdict(needs[0], deny + rules, "deny") == (False, "rule `deny any any 0.0.0.0/0 any 169.254.0.0/16 in`")


def test_ufw_conf_and_garbage():
    assert parse_ufw_conf("# c\nENABLED=yes\nLOGLEVEL=low\n") is True
    assert parse_ufw_conf("ENABLED=no\n") is False
    with pytest.raises(ParseError):
        parse_ufw_conf("")
    with pytest.raises(ParseError):
        parse_user_rules("cat: /etc/ufw/user.rules: Permission denied\n")


# -- docker ------------------------------------------------------------------------------------
def test_container_gpu_failures_from_real_texts(capture):
    for name in (
        "docker.error.could_not_select_device_driver.txt",
        "docker.error.nvml_driver_library_mismatch.runc.txt",
    ):
        assert isinstance(parse_container_gpus(capture(f"commands/{name}")), ContainerGpuFailure)
    seen = parse_container_gpus(capture("commands/nvidia-smi.L.gb10.txt"))
    assert isinstance(seen, ContainerGpus) and seen.gpus[0].startswith("GPU 0: NVIDIA GB10")
    with pytest.raises(ParseError):
        parse_container_gpus("")


def test_docker_inspect_absent_present_garbage():
    assert parse_image_inspect("[]\n") is None and parse_container_inspect("[]\n") is None
    image = parse_image_inspect('[{"Id": "sha256:1", "RepoTags": ["a:b"], "RootFS": {"Layers": ["l1"]}}]')
    assert image is not None and image.layers == ("l1",)
    with pytest.raises(ParseError, match="docker group"):
        parse_docker_info("permission denied while trying to connect to the Docker daemon socket at unix:///x")
    with pytest.raises(ParseError, match="not JSON"):
        parse_container_inspect('[{"State": ')


# -- HF cache, fit -----------------------------------------------------------------------------
LISTING = (
    "d\t755\tlenovo\tlenovo\t4096\t\t\n"
    "f\t644\tlenovo\tlenovo\t40\trefs/main\t\n"
    "f\t600\troot\troot\t100\tblobs/b1\t\n"
    "l\t777\tlenovo\tlenovo\t14\tsnapshots/r/model.safetensors\t../../blobs/b1\n"
    "f\t644\tlenovo\tlenovo\t7\tsnapshots/r/config.json\t\n"
)


def test_hf_listing_links_sizes_and_permissions():
    entries = parse_listing(LISTING)
    files = snapshot_files(entries, "r")
    assert files["model.safetensors"].linked and files["model.safetensors"].size == 100
    assert not files["config.json"].linked  # a dereferenced copy
    assert not readable_by(entries["blobs/b1"], "lenovo", frozenset({"lenovo"}))
    assert readable_by(entries["blobs/b1"], "root", frozenset())
    assert readable_by(Entry("f", 0o640, "root", "docker", 1, "x", ""), "lenovo", frozenset({"docker"}))
    with pytest.raises(ParseError):
        parse_listing("find: '/x': No such file or directory\n")
    with pytest.raises(ParseError):
        parse_index_total_size('{"weight_map": {')


def _fit(total_gib, quant):
    cfg = (
        '{"num_hidden_layers": 48, "full_attention_interval": 4, "num_attention_heads": 16, "num_key_value_heads": 2,'
        ' "head_dim": 256, "linear_num_value_heads": 48, "linear_key_head_dim": 128, "linear_value_head_dim": 128,'
        ' "torch_dtype": "bfloat16"' + (', "quantization_config": {"quant_method": "fp8"}' if quant else "") + "}"
    )
    return Fit(parse_model_config(cfg), int(total_gib * GIB), 2, 262144, 8, 2, 2, 124958720 * 1024, 0.80, 105 * GIB)


def test_fit_arithmetic_matches_the_field_report():
    fp8 = _fit(172.78, True)
    assert fp8.kv_per_token == 12 * 1024  # 12 KiB/token/node at TP=2
    assert fp8.kv_per_sequence == 3 * GIB  # one 262144-token sequence
    assert fp8.state_per_sequence == 27 * 2**20 and fp8.state_per_sequence * 8 == 216 * 2**20
    assert fp8.fits and round(fp8.weights_per_node / GIB, 2) == 86.39
    bf16 = _fit(335.28, False)
    assert not bf16.weights_fit and bf16.dims.unquantized_16bit and round(bf16.weights_per_node / GIB, 1) == 167.6
    assert any("167.64 GiB per node" in line for line in bf16.lines())
    assert fp8.dims.max_position_embeddings is None
    assert (
        parse_model_config(
            '{"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 512, "max_position_embeddings": 262144}'
        ).max_position_embeddings
        == 262144
    )


# -- small ones --------------------------------------------------------------------------------
def test_modinfo_and_framed_files():
    assert parse_modinfo_version("580.173.02\n") == "580.173.02"
    with pytest.raises(ParseError):
        parse_modinfo_version("modinfo: ERROR: Module nvidia not found.\n")
    files = parse_framed_files(
        "=== 600 0 /etc/netplan/a.yaml\nnetwork: {}\n\n=== 644 1000 /etc/netplan/b.yaml\n\n", "np"
    )
    assert [(f.path, f.mode, f.owner) for f in files] == [
        ("/etc/netplan/a.yaml", 0o600, "0"),
        ("/etc/netplan/b.yaml", 0o644, "1000"),
    ]
    with pytest.raises(ParseError):
        parse_framed_files("garbage before\n=== 600 0 /x\n", "np")


def test_netplan_netdevs_from_the_playbook_file_and_bad_yaml(capture):
    text = capture("commands/netplan.40-cx7.link_local_ipv4.nvidia_playbook_2025-10.yaml")
    playbook = FileRead("/etc/netplan/40-cx7.yaml", 0o600, "0", text)
    assert set(configured_netdevs([playbook])) == {"enp1s0f0np0", "enp1s0f1np1"}
    assert configured_netdevs([FileRead("/etc/netplan/e.yaml", 0o600, "0", "")]) == {}
    for garbage, why in (
        ("network: [\n", "not valid YAML"),
        ("- a\n", "no 'network:'"),
        ("network:\n  ethernets: 3\n", "not a mapping"),
    ):
        with pytest.raises(ParseError, match=why) as info:
            configured_netdevs([FileRead("/etc/netplan/x.yaml", 0o600, "0", garbage)])
        assert "/etc/netplan/x.yaml" in str(info.value)


# -- bad input, every parser -------------------------------------------------------------------
STRICT_PARSERS = {
    # name: (parser, a real-looking output cut short)
    "ufw status": (parse_ufw_status, "Status: active\nLogging: on (low)\nDefault: deny (inc"),
    "user.rules": (parse_user_rules, "*filter\n:ufw-user-input - [0:0]\n### tuple ### allow any any 0.0.0.0/0"),
    "ufw.conf": (parse_ufw_conf, "# /etc/ufw/ufw.conf\n#\nENABL"),
    "default ufw": (parse_default_input_policy, "IPV6=yes\nDEFAULT_INPUT_POL"),
    "docker info": (parse_docker_info, '{"ID":"x","Containers":0,"CgroupDriver":"sys'),
    "image inspect": (parse_image_inspect, '[{"Id": "sha256:abc", "RepoTags": ["vllm/vllm-openai:q'),
    "container inspect": (parse_container_inspect, '[{"Id": "abc", "State": {"Running": tr'),
    "hf listing": (parse_listing, "d 755 0 0 4096 \t"),
    "hf revision": (parse_revision, "c84cfe23"),
    "index.json": (parse_index_total_size, '{"metadata": {"total_si'),
    "config.json": (parse_model_config, '{"num_hidden_layers": 48, "num_attention_'),
    "modinfo": (parse_modinfo_version, None),  # a cut version still looks like a version
    "meminfo": (parse_meminfo, "MemTotal:       124958720 kB\nMemFr"),
    "nvidia-smi query": (parse_nvidia_smi_query, None),  # nor does a cut GPU name
}
BAD = ["", "\n", "Segmentation fault\n", "<html><body>502 Bad Gateway</body></html>", "cut"]


@pytest.mark.parametrize(
    ("name", "bad"),
    [(name, bad) for name, (_, cut) in STRICT_PARSERS.items() for bad in BAD if bad != "cut" or cut is not None],
)
def test_empty_garbage_or_truncated_output_is_a_parse_error_with_the_excerpt(name, bad):
    parser, truncated = STRICT_PARSERS[name]
    text = truncated if bad == "cut" else bad
    with pytest.raises(ParseError) as info:
        parser(text)
    if text.strip():  # the offending output is quoted
        assert text.strip().splitlines()[0][:15] in str(info.value), str(info.value)


@pytest.mark.parametrize(
    ("stderr", "hint"),
    [
        (
            "permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock: "
            'Head "http://%2Fvar%2Frun%2Fdocker.sock/_ping": '
            "dial unix /var/run/docker.sock: connect: permission denied",
            "docker-permission-denied",
        ),
        (
            "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
            "docker-daemon-down",
        ),
    ],
)
def test_docker_client_errors_name_their_hint(stderr, hint):
    for parser in (parse_docker_info, parse_image_inspect, parse_container_inspect, parse_image_list):
        with pytest.raises(ParseError) as info:
            parser(stderr + "\n")
        assert info.value.hint_ids == (hint,)


DAEMON_DOWN = tomllib.loads((DATA / "commands/docker.daemon_down.28.2.2.generated.toml").read_text())
DOCKER_29_DOWN = (  # docker 29's wording (public reports of `docker info`, `docker build` with the daemon stopped)
    "failed to connect to the docker API at unix:///var/run/docker.sock; check if the path is correct and if the "
    "daemon is running: dial unix /var/run/docker.sock: connect: no such file or directory"
)


def _snapshot_of(read, stdout, stderr, rc):
    return Snapshot("n1", {read.name: CommandResult(read.name, rc, stdout, stderr, 0.1, False)})


@pytest.mark.parametrize(
    ("read", "name"),
    [
        ("DOCKER_INFO", "info"),
        ("IMAGE", "image_inspect"),
        ("CONTAINER", "container_inspect"),
        ("DOCKER_IMAGES", "image_ls"),
    ],
)
@pytest.mark.parametrize("wording", ["28", "29"])
def test_docker_with_its_daemon_down_is_daemon_down_not_an_empty_answer(read, name, wording):
    """docker 28.2.2 with no daemon (a real run): `image inspect` prints `[]` as for a missing image and
    `info` a JSON of empty server fields; stderr says why. Each read names docker-daemon-down."""
    from gb10check.reading import probes

    out = DAEMON_DOWN[name]
    stderr = out["stderr"] if wording == "28" else DOCKER_29_DOWN + "\n"
    snap = _snapshot_of(getattr(probes, read), out["stdout"], stderr, out["rc"])
    with pytest.raises(ParseError) as info:
        snap.fact(getattr(probes, read))
    assert info.value.hint_ids == ("docker-daemon-down",)


def test_docker_info_without_a_server_is_daemon_down_even_without_stderr():
    with pytest.raises(ParseError) as info:
        parse_docker_info(DAEMON_DOWN["info"]["stdout"])
    assert info.value.hint_ids == ("docker-daemon-down",)


# -- the heads over TP (issue 19, the launch plan) ---------------------------------------------------
@pytest.mark.parametrize(
    ("heads", "kv", "tp", "problems"),
    [
        (16, 2, 2, []),
        (16, 2, 4, []),  # 2 KV heads replicated twice
        (16, 2, 8, []),
        (16, 2, 3, ["16 attention heads do not divide by TP 3", "TP 3 is not a multiple of the 2 KV heads"]),
        (18, 3, 3, []),  # padded for TP=3
        (16, 3, 2, ["3 KV heads do not divide by TP 2"]),
        (64, 8, 3, ["64 attention heads", "8 KV heads do not divide by TP 3"]),  # the field report: 64 heads at TP=3
    ],
)
def test_tp_must_split_the_attention_and_kv_heads(heads, kv, tp, problems):
    from gb10check.judging.fit import tp_split_problems

    dims = parse_model_config(
        f'{{"num_hidden_layers": 48, "num_attention_heads": {heads}, "num_key_value_heads": {kv}, "head_dim": 256}}'
    )
    assert dims.attention_heads == heads and dims.kv_heads == kv
    found = tp_split_problems(dims, tp)
    assert len(found) == len(problems) and all(p in f for p, f in zip(problems, found, strict=True)), found


def test_pipeline_stages_hold_their_own_layers():
    """TP 2 x PP 2 on four nodes: a quarter of the weights per node, the fullest stage's layers for the
    KV cache and the recurrent state (48 layers: 12 full-attention and 36 linear, 6 and 18 per stage)."""
    one = _fit(172.78, True)
    two = Fit(*(getattr(one, f) for f in ("dims", "weights_total", "tp", "max_model_len", "max_num_seqs")),
              2, 2, one.mem_total, 0.80, 105 * GIB, pp=2)  # fmt: skip
    assert two.weights_per_node == one.weights_total // 4
    assert (two.full_layers_per_stage, two.linear_layers_per_stage) == (6, 18)
    assert two.kv_per_token * 2 == one.kv_per_token and two.state_per_sequence * 2 == one.state_per_sequence
    assert "/ TP 2 x PP 2 =" in two.lines()[0] and "6 full-attention layers per stage" in two.lines()[1]
    odd = Fit(one.dims, one.weights_total, 1, 262144, 8, 2, 2, one.mem_total, 0.80, None, pp=5)
    assert (odd.full_layers_per_stage, odd.linear_layers_per_stage) == (3, 8)  # 12/5 and 36/5, rounded up
    assert one.lines() == _fit(172.78, True).lines() and "PP" not in " ".join(one.lines())
