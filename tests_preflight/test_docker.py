"""Docker's memory accounting: cgroup v2 with the systemd driver, so a memory limit kills the
container and not the machine."""

import pytest

from gb10check.reading import probes

pytestmark = pytest.mark.preflight


@pytest.mark.hints("docker-cgroup-accounting")
def test_docker_memory_accounting(node, evidence):
    """Docker accounts memory with cgroup v2 and systemd."""
    info = node.snapshot().fact(probes.DOCKER_INFO)
    evidence.expect(
        (info.cgroup_version, info.cgroup_driver) == ("2", "systemd"),
        what="Docker cgroup version and driver",
        expected="cgroup v2, driver systemd",
        found=f"cgroup {'v' + info.cgroup_version if info.cgroup_version else 'version not reported'}, "
        f"driver {info.cgroup_driver or 'not reported'}",
    )
