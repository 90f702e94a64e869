"""Known issues: each node's versions against the catalogue of what the field reported broken
(gb10check/judging/known_issues.toml and the site's --known-issues files)."""

import pytest

from fixtures.hints import KNOWN_ISSUES
from gb10check.judging.known_issue_facts import node_facts
from gb10check.judging.known_issues import judge
from gb10check.reading import probes

pytestmark = pytest.mark.preflight


@pytest.fixture(scope="session")
def known_issues(request):
    """The catalogue's entries, as the plugin read them at configure."""
    return request.config.stash[KNOWN_ISSUES]


def _plan(cluster, inventory, name):
    """The rank's launch plan, for whether vLLM captures CUDA graphs; a Ray worker's vLLM is its head's."""

    def read():
        plan = cluster.plan(name)
        if plan.role == "ray worker":
            return cluster.plan(inventory.api_node.name)
        return plan

    return read


def _sources(entry) -> str:
    return "; ".join(s.shown for s in entry.sources)


def test_no_known_issue(node, cluster, inventory, known_issues, evidence, request):
    """No version or combination the field reported broken.

    The node's driver, kernel, OS and DGX OS release (`/etc/dgx-release`), ConnectX firmware, the container's NCCL
    (its version, and whether it is torch's pip wheel or the system's) and libmlx5 (whether it exports
    `mlx5dv_reg_dmabuf_mr`, GPU Direct RDMA's), the image's CUDA_DRIVER_VERSION against the node's driver, and
    whether vLLM captures CUDA graphs, against every entry of the known-issues catalogue
    (`gb10check/judging/known_issues.toml` and the site's `--known-issues` files): an entry whose outcome is
    failure fails with its fix and its sources; one that costs speed is an advisory, a risk the node cannot
    confirm is advice; an entry (other than advice) that a missing fact leaves unjudged skips the check, naming it."""
    snap = node.snapshot()
    snap.raw(probes.KERNEL_RELEASE)  # a node that could not be asked fails with its own error (node-unreachable)
    deployed = inventory.deployment is not None
    libraries = request.getfixturevalue("container_libraries")[node.name] if deployed else None
    facts = node_facts(
        snap,
        deployed=deployed,
        libraries=libraries,
        plan=_plan(cluster, inventory, node.name) if deployed else None,
    )
    evidence.fact("versions", facts.shown())
    judged = judge(known_issues, facts.values, facts.missing)
    for entry, matched in judged.matched:
        if entry.outcome != "failure":
            evidence.advise(
                entry.outcome,
                what=entry.title,
                expected=f"not {entry.conditions}",
                found=matched,
                why=f"{entry.title}. {entry.fix} (known issue {entry.id}: `gb10check known-issues`; {_sources(entry)})",
            )
    failures = [(e, m) for e, m in judged.matched if e.outcome == "failure"]
    evidence.expect(
        not failures,
        what="versions the field reported broken (known issues)",
        expected="no entry of the known-issues catalogue matching",
        found="; ".join(f"{e.id} ({m})" for e, m in failures) or "none matching",  # the sources: in each hint
        hints=tuple(e.id for e, _ in failures),
    )
    unjudged = [(e, why) for e, why in judged.unjudged if e.outcome != "advice"]
    if unjudged:
        pytest.skip(
            f"{len(unjudged)} known issue(s) not judged on {node.name}: "
            + "; ".join(f"{e.id} ({why})" for e, why in unjudged)
        )
