"""What RDMA over the fabric needs from the host beyond the links: contiguous memory the kernel
can hand out (CmaTotal), and shared memory that outlives a logout (logind's RemoveIPC): both are
field faults that break a TP=2 run, the second hours after it started."""

import pytest

from gb10check.reading import probes
from gb10check.reading.parsers.logind import parse_remove_ipc

pytestmark = pytest.mark.network


@pytest.mark.hints("cma-zero")
def test_cma_reserved(node, evidence):
    """Contiguous memory (CMA) reserved at boot.

    CmaTotal in /proc/meminfo above 0: a contiguous memory area the kernel reserved at boot."""
    fields = node.snapshot().fact(probes.MEMINFO).fields
    cma = fields.get("CmaTotal")
    evidence.expect(
        bool(cma),
        what="CmaTotal (/proc/meminfo)",
        expected="more than 0 kB (a contiguous memory area the kernel reserved at boot)",
        found=f"{cma // 1024} kB" if cma is not None else "no CmaTotal line (a kernel without CMA)",
    )


def _workload_user(plan):
    """Who vLLM's processes run as: the container's `user`, else root (docker's default)."""
    user = str(plan.container.user.known() or "").split(":")[0]
    return user if user not in ("", "0", "root") else None


@pytest.mark.hints("removeipc-yes")
def test_ipc_survives_logout(node, cluster, deployment, evidence):
    """vLLM's shared memory survives a logout.

    vLLM's shared memory and semaphores survive a logout: vLLM runs as root (docker's default, where the compose
    sets no `user:`; logind never removes root's IPC), or logind has RemoveIPC=no, or its user lingers
    (`loginctl enable-linger`)."""
    snap = node.snapshot()
    user = _workload_user(cluster.plan(node.name))
    setting = parse_remove_ipc(snap.fact(probes.LOGIND))
    if user is None:
        evidence.expect(
            True,
            what="owner of vLLM's shared memory and semaphores",
            expected="root, or an ordinary user whose IPC logind keeps",
            found=f"root in the container (docker's default; the compose sets no user): logind never removes root's "
            f"IPC ({setting.source})",
        )
        return
    lingering = snap.fact(probes.LINGER)
    evidence.expect(
        not setting.enabled or user in lingering,
        what=f"IPC of {user}, who runs vLLM (compose `user:`), at logout",
        expected="kept: RemoveIPC=no in logind.conf, or lingering for that user (loginctl enable-linger)",
        found=f"RemoveIPC={'yes' if setting.enabled else 'no'} ({setting.source}); lingering: "
        + (", ".join(lingering) or "nobody"),
        context={"workload_user": user},
    )
