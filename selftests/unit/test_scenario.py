"""Scenario files are checked as strictly as inventories: a typo is an error, never a silent pass."""

from __future__ import annotations

import pytest

from gb10check.errors import SimError
from sim.scenario import builtin_names, load_scenario


@pytest.mark.parametrize("name", builtin_names())
def test_every_builtin_scenario_is_valid(name):
    assert load_scenario(name).nodes


R1 = "[nodes.thinkstationpgx-32]"
TYPOS = {
    "nested docker key": (f'{R1}\ndocker = {{ gpuu = "no-runtime" }}\n', "nodes.thinkstationpgx-32.docker.gpuu"),
    "docker value": (f'{R1}\ndocker = {{ gpu = "none" }}\n', "nodes.thinkstationpgx-32.docker.gpu"),
    "ufw key": (f"{R1}\nufw = {{ enable = true }}\n", "nodes.thinkstationpgx-32.ufw.enable"),
    "hf key": (f'{R1}\nhf = {{ missing = ["x"] }}\n', "nodes.thinkstationpgx-32.hf.missing"),
    "stub key": ('[[nodes.thinkstationpgx-32.stubs]]\ntool = "nvidia-smi"\nstdot = "x"\n', "stubs[0].stdot"),
    "stub tool": ('[[nodes.thinkstationpgx-32.stubs]]\ntool = "nvidia_smi"\n', "stubs[0].tool"),
    "service key": ('[service]\nservd_model_name = "x"\n', "service.servd_model_name"),
    "misspelt netdev in down": (f'{R1}\ndown = ["enP2p1s0f0np00"]\n', "down names ['enP2p1s0f0np00']"),
    "misspelt netdev in netplan": (f'{R1}\nnetplan = {{ omit = ["enp1s0"] }}\n', "netplan.omit names ['enp1s0']"),
    "inventory override": ("[inventory.thresholds]\nnvidia_smi_timout = 2\n", "inventory.thresholds.nvidia_smi_timout"),
    "node key": (f"{R1}\npowerd_off = true\n", "nodes.thinkstationpgx-32.powerd_off"),
}


@pytest.mark.parametrize("case", list(TYPOS))
def test_a_typo_names_the_file_and_the_key(tmp_path, case):
    body, key = TYPOS[case]
    path = tmp_path / "mine.toml"
    path.write_text('base = "healthy"\n' + body)
    with pytest.raises(SimError) as err:
        load_scenario(str(path))
    assert str(err.value).startswith(str(path)) and key in str(err.value), str(err.value)


def test_a_scenario_in_another_encoding_is_named(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_bytes(b'# caf\xe9\nbase = "healthy"\n')
    with pytest.raises(Exception, match=r"not UTF-8 at byte 5"):
        load_scenario(str(path))


def test_an_unprivileged_login_runs_a_compose_outside_the_checkout(tmp_path):
    # a checkout under a root-only folder (a `mktemp -d` clone is 0700) must not fail every compose
    # rule of the node the suite logs in to as an ordinary account (scenario no-sudo)
    from sim import spec
    from sim.node import COMPOSE_BINARY, SimNode
    from sim.node_files import _compose_binary

    if not COMPOSE_BINARY.is_file():
        pytest.skip("no sim Compose: bin/setup installs it")
    root, plain = (
        SimNode(f"n{rank}", rank, f"ns{rank}", tmp_path / f"n{rank}", spec.Node(rank=rank, unprivileged=bool(rank)))
        for rank in (0, 1)
    )
    assert _compose_binary(root) == COMPOSE_BINARY
    copy = _compose_binary(plain)
    assert copy == tmp_path / "docker-compose" and copy.stat().st_mode & 0o777 == 0o755
    assert copy.stat().st_size == COMPOSE_BINARY.stat().st_size
    assert _compose_binary(plain) == copy  # made once per cluster
