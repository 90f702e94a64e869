"""A simulated node: its name, rank, namespace, folder, typed spec and sshd process (shared by
sim/cluster.py, which brings nodes up and down, and sim/node_files.py, which writes what they boot from)."""

from __future__ import annotations

import ipaddress
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from sim import spec

__all__ = ["COMPOSE_BINARY", "PROJECT_ROOT", "SSHD", "STUB_PYTHON", "SimNode"]

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SSHD = "/usr/sbin/sshd"
# the stubs are stdlib-only: the system interpreter, which an unprivileged login can run too
STUB_PYTHON = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable


def _compose_binary() -> Path:
    """The real Docker Compose v2 the docker stub's `compose` subcommand runs: the one bin/setup puts in the
    clone's .venv, else the one beside this interpreter (an installed suite's venv), else the first on PATH."""
    candidates = [PROJECT_ROOT / ".venv" / "bin" / "docker-compose", Path(sys.executable).parent / "docker-compose"]
    found = shutil.which("docker-compose")
    candidates += [Path(found)] if found else []
    return next((c for c in candidates if c.is_file()), candidates[0])


COMPOSE_BINARY = _compose_binary()


@dataclass
class SimNode:
    name: str
    rank: int
    ns: str
    dir: Path
    spec: spec.Node
    process: subprocess.Popen[bytes] | None = None

    @property
    def lan_address(self) -> str:
        return self.spec.lan()

    @property
    def lan_ip(self) -> str:
        return str(ipaddress.ip_interface(self.lan_address).ip)

    @property
    def reachable(self) -> bool:
        """sshd runs and answers (not powered off, not blackholed, not refusing)."""
        return not (self.spec.powered_off or self.spec.blackholed or not self.spec.sshd or self.spec.boot_delay)
