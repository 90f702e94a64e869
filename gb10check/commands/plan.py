"""`gb10check plan`: each rank's launch plan, every value with where it is set, and the rules' verdicts.

Three ways to read it, all read-only:
- from the nodes (the default): each node's deployment files as its launcher starts them, read over SSH
  with the node's own Docker Compose and image (what `gb10check preflight` judges);
- `--running`: the running deployment instead, whatever started it: `docker inspect` of each node's
  container and the vLLM process's own /proc/PID/cmdline and environ (gb10check/deployment/launch/running.py);
- `--offline`: the files on this machine, no node asked (the inventory's paths, or `--files DIR` holding
  them by name): a deployment repository lints itself in its own CI. The node's devices and memory are
  not known offline: the rules that need them say so.

Every line passes the suite's masking (gb10check/safe_text/redact.py) and is shown, never obeyed (neutralise).
Exit status: 0 no rule fails, 1 a rule fails or a rank's plan cannot be read, 4 usage or inventory.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import posixpath
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gb10check import inventory as inv
from gb10check.deployment.launch.plan import LaunchPlan, Setting
from gb10check.deployment.launch.rules import RULES, Context, NotApplicable, Rule
from gb10check.deployment.launch.running import running_plan
from gb10check.errors import DecidedAtStart, GB10Error, InventoryError
from gb10check.reading import facts, probes
from gb10check.reading.node import NodeSession, identifiers, make_transport
from gb10check.reading.parallel import map_parallel
from gb10check.reading.snapshot import Read, Snapshot
from gb10check.reading.transport import LocalTransport
from gb10check.safe_text.neutralise import neutralise, neutralise_tree
from gb10check.safe_text.redact import protect, redact, redact_tree
from gb10check.safe_text.secret_shapes import use_site_shapes

__all__ = [
    "CONTAINER_FIELDS",
    "FILE_READS",
    "JUDGED",
    "NODE_READS",
    "RUNNING_READS",
    "RankReport",
    "RuleResult",
    "judge",
    "main",
    "offline_inventory",
    "plans",
    "read_snapshots",
    "render",
    "render_plan",
    "to_json",
]

# what the plan is read from (the deployment's files, the image's ENV) and what the rules ask of the node
FILE_READS: tuple[Read[object], ...] = (
    probes.COMPOSE,
    probes.COMPOSE_CONFIG,
    probes.COMPOSE_OVERRIDES,
    probes.DOTENV,
    probes.LAUNCH_SCRIPT,
    probes.IMAGE,
)
RUNNING_READS: tuple[Read[object], ...] = (probes.CONTAINER, probes.CONTAINER_PROCESSES)
NODE_READS: tuple[Read[object], ...] = (
    probes.MEMINFO,
    probes.RDMA_PORTS,
    probes.IP_ADDR,
    probes.HOSTNAME_ADDRESSES,
)
JUDGED = ("fail", "advisory", "advice", "pass")  # the rules' own outcomes (gb10check/deployment/launch/rules.py)


@dataclass(frozen=True)
class RuleResult:
    rule: str
    what: str
    hint: str
    outcome: str  # fail, advisory, advice, pass; skipped (the rule does not apply), decided at start, unknown
    expected: str = ""
    found: str = ""
    why: str = ""  # what breaks, what it costs, why the suite prefers it; for the others: why not judged
    where: str = ""  # the place to change the value
    source: str = ""  # what the rule judges by


@dataclass
class RankReport:
    node: str
    rank: int
    read: str  # "the nodes", "the running containers", "files on this machine"
    plan: LaunchPlan | None = None
    error: str = ""  # why the plan could not be read
    rules: list[RuleResult] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return bool(self.error) or any(r.outcome == "fail" for r in self.rules)


# -- reading -------------------------------------------------------------------------------------------
def offline_inventory(inventory: inv.Inventory, files: Path | None, node: str) -> inv.Inventory:
    """The inventory as `node` reads its deployment offline: every file it names read from this machine, where
    it says, or with `files`, as the file of that name in `files`/NODE when the node has a folder of its own
    there (each node's compose and .env), else in `files` (one compose.yml, .env, launch.sh for every node)."""
    if files is None:
        return inventory
    folder = files / node if (files / node).is_dir() else files

    def here(path: str | None) -> str | None:
        return None if path is None else str((folder / posixpath.basename(path)).resolve())

    def launch(lx: inv.Launch) -> inv.Launch:  # only what it names: a node's launch adds to the deployment's
        paths = {k: here(getattr(lx, k)) for k in ("env_file", "script") if getattr(lx, k) is not None}
        return lx.model_copy(update=paths)

    d = inventory.deployment
    assert d is not None
    deployment = d.model_copy(
        update={"compose_file": here(d.compose_file), "env_file": here(d.env_file), "launch": launch(d.launch)}
    )
    nodes = [n.model_copy(update={"launch": launch(n.launch)}) if n.launch else n for n in inventory.nodes]
    return inventory.model_copy(update={"deployment": deployment, "nodes": nodes})


def read_snapshots(
    inventories: dict[str, inv.Inventory], reads: tuple[Read[object], ...], offline: bool
) -> dict[str, Snapshot]:
    """One round trip per node, nodes in parallel; offline, the same reads on this machine. `inventories`:
    each node's (offline, its files' paths here)."""
    nodes = []
    for name, inventory in inventories.items():
        spec = inventory.node(name)
        transport = LocalTransport(name) if offline else make_transport(spec, inventory.ssh)
        timeout = inventory.thresholds.command_timeout
        nodes.append(NodeSession(spec, transport, timeout, probes.probes_of(reads, inventory, spec)))
    try:
        snaps = map_parallel(lambda n: n.probe(n.probes), nodes, name="gb10check-plan")
    finally:
        for n in nodes:
            n.transport.close()
    return {s.node: s for s in snaps}


def _fact(read: Read[object], snap: Snapshot) -> object | None:
    if read.name not in snap.results and snap.error is None:
        return None
    try:
        return snap.fact(read)
    except GB10Error:
        return None  # what the rule then lacks, it says


def _running(snap: Snapshot, spec: inv.Node) -> LaunchPlan:
    container = snap.fact(probes.CONTAINER)
    if container is None or not container.running:
        state = "does not exist" if container is None else f"is {container.status}"
        raise GB10Error(f"{snap.node}: the deployment's container {state}: nothing runs to read (drop --running)")
    processes = snap.fact(probes.CONTAINER_PROCESSES) if snap.raw(probes.CONTAINER_PROCESSES).ok else None
    return running_plan(container, processes, node=snap.node, rank=spec.rank)


def judge(plan: LaunchPlan, inventory: inv.Inventory, snap: Snapshot | None) -> list[RuleResult]:
    """Every rule for this cluster's shape and this rank, as tests_preflight/test_launch_rules.py judges it."""
    meminfo = _fact(probes.MEMINFO, snap) if snap else None
    ctx = Context(
        plan=plan,
        inventory=inventory,
        mem_total=getattr(meminfo, "total", None),
        ports=_fact(probes.RDMA_PORTS, snap) if snap else None,  # type: ignore[arg-type]
        netdevs=_fact(probes.IP_ADDR, snap) if snap else None,  # type: ignore[arg-type]
        hostname_addresses=_fact(probes.HOSTNAME_ADDRESSES, snap) if snap else None,  # type: ignore[arg-type]
    )
    out = []
    for rule in _rules_for(inventory, plan.rank):
        out.append(_one(rule, ctx, inventory))
    return out


def _rules_for(inventory: inv.Inventory, rank: int) -> list[Rule]:
    return [
        r for r in RULES if (not r.topologies or inventory.topology in r.topologies) and (rank == 0 or not r.rank0_only)
    ]


def _one(rule: Rule, ctx: Context, inventory: inv.Inventory) -> RuleResult:
    base = RuleResult(rule.id, rule.what, rule.hint, "", source=rule.source)
    try:
        v = rule.check(ctx)
    except NotApplicable as exc:
        return dataclasses.replace(base, outcome="skipped", why=str(exc))
    except DecidedAtStart as exc:
        return dataclasses.replace(base, outcome="decided at start", why=str(exc))
    except GB10Error as exc:
        return dataclasses.replace(base, outcome="unknown", why=str(exc))
    strict = v.outcome == "advisory" and inventory.rules.is_strict(rule.id)
    why = v.why + ("; [rules] strict names this rule" if strict else "")
    return dataclasses.replace(
        base,
        outcome="fail" if strict else v.outcome,
        expected=v.expected,
        found=v.found,
        why=why,
        where=str(v.where) if v.where else "",
    )


def plans(
    inventory: inv.Inventory, *, running: bool, offline: bool, only: list[str], files: Path | None = None
) -> list[RankReport]:
    reads = (*(RUNNING_READS if running else FILE_READS), *(() if offline else NODE_READS))
    specs = [n for n in sorted(inventory.nodes, key=lambda n: n.rank) if not only or n.name in only]
    # and the nodes whose script starts one of these over ssh (launch.runs_on): the script is read there
    script_hosts = {r for n in specs if (r := inventory.launch_of(n.name).runs_on) is not None}
    read_from = [*specs, *(n for n in inventory.nodes if n.name in script_hosts and n not in specs)]
    inventories = {n.name: offline_inventory(inventory, files, n.name) if offline else inventory for n in read_from}
    snaps = read_snapshots(inventories, reads, offline)
    read = "files on this machine" if offline else "the running containers" if running else "the nodes"
    reports = []
    for spec in specs:
        snap, its = snaps[spec.name], inventories[spec.name]
        report = RankReport(spec.name, spec.rank, read)
        try:
            if snap.error is not None:
                raise snap.error
            runs_on = its.launch_of(spec.name).runs_on  # a script another node runs is read on that node
            report.plan = (
                _running(snap, spec)
                if running
                else facts.plan(snap, its, spec.rank, snaps.get(runs_on) if runs_on else None)
            )
        except GB10Error as exc:
            report.error = str(exc)
        if report.plan is not None:
            report.rules = judge(report.plan, its, None if offline else snap)
        reports.append(report)
    return reports


# -- showing -------------------------------------------------------------------------------------------
def _shown(name: str, value: object) -> str:
    if value is None:
        return "not set"
    if name == "memlock" and isinstance(value, tuple):
        soft, hard = ("unlimited" if v == -1 else f"{v} bytes" for v in value)
        return f"soft {soft}, hard {hard}"
    if isinstance(value, tuple):
        return ", ".join(str(v) for v in value)
    if name in ("shm_size", "memory") and isinstance(value, int) and not isinstance(value, bool):
        return f"{value} bytes ({value / 1024**3:.1f} GiB)"
    return str(value)


def _setting(s: Setting[Any], name: str = "") -> str:
    shown = _shown(name, s.value)
    return f"{shown}   from {s.source}" if s.source else shown


CONTAINER_FIELDS = (
    "network", "ipc", "shm_size", "privileged", "cap_add", "devices", "device_cgroup_rules", "memlock",
    "restart", "memory", "user", "gpus", "runtime",
)  # fmt: skip


def _command(plan: LaunchPlan) -> str:
    started = plan.started
    if started.vllm is not None:
        return started.vllm.shown()
    if started.ray is not None:
        return started.ray.shown()
    return started.notes[-1] if started.notes else "no `vllm serve` or Ray node the suite can read"


def render_plan(plan: LaunchPlan) -> list[str]:
    out = [f"  image: {_setting(plan.image)}", f"  container: {_setting(plan.container_name)}"]
    c = plan.container
    out += [
        f"    {name}: {_setting(s, name)}"
        for name in CONTAINER_FIELDS
        if (s := getattr(c, name)).value is not None or name in ("network", "ipc")
    ]
    out += [f"    mount: {m.source} -> {m.target} ({m.kind}{', ro' if m.read_only else ''})" for m in c.mounts]
    env = plan.environment
    missing = "" if plan.env_complete else f"; not read: {plan.env_missing}"
    out.append(f"  environment ({len(env)} variables{missing}):")
    out += [f"    {k}={s.shown()}   from {s.source or 'an unknown source'}" for k, s in sorted(env.items())]
    out.append(f"  runs ({plan.role}): {_command(plan)}   from {plan.command}")
    out += [f"  note: {n}" for n in plan.notes]
    return out


def _rule_line(r: RuleResult) -> list[str]:
    if r.outcome in ("skipped", "decided at start", "unknown"):
        return [f"    {r.outcome:9} {r.rule}: {r.why}"]
    head = f"    {r.outcome.upper() if r.outcome == 'fail' else r.outcome:9} {r.rule}: {r.what} [{r.hint}]"
    lines = [head, f"              expected {r.expected}; found {r.found}"]
    if r.why:
        lines.append(f"              {r.why}")
    if r.where:
        lines.append(f"              change it at {r.where}")
    return lines


def render(reports: list[RankReport]) -> str:
    out: list[str] = []
    for rep in reports:
        plan = rep.plan
        title = f"rank {rep.rank} on {rep.node}"
        if plan is None:
            out += [f"{title}: the launch plan could not be read ({rep.read})", f"  {rep.error}", ""]
            continue
        out.append(f"{title}: {plan.launcher}, read by {plan.read_by}")
        out += render_plan(plan)
        order = {o: i for i, o in enumerate(("fail", "advisory", "advice", "decided at start", "unknown"))}
        shown = sorted(
            (r for r in rep.rules if r.outcome != "pass" and r.outcome != "skipped"), key=lambda r: order[r.outcome]
        )
        passed = [r.rule for r in rep.rules if r.outcome == "pass"]
        skipped = [r for r in rep.rules if r.outcome == "skipped"]
        out.append(f"  rules: {len(rep.rules)} ({_counts(rep.rules)})")
        for r in shown:
            out += _rule_line(r)
        if passed:
            out.append(f"    pass      {', '.join(passed)}")
        if skipped:
            out.append(f"    skipped   {', '.join(f'{r.rule} ({r.why})' for r in skipped)}")
        out.append("")
    failed = [f"rank {r.rank} ({r.node})" for r in reports if r.failed]
    out.append(f"gb10check plan: {'failed: ' + ', '.join(failed) if failed else 'no rule fails'}")
    return neutralise(redact("\n".join(out))) + "\n"


def _counts(rules: list[RuleResult]) -> str:
    names = ("fail", "advisory", "advice", "pass", "decided at start", "unknown", "skipped")
    return ", ".join(f"{n} {k}" for k in names if (n := sum(r.outcome == k for r in rules)))


def to_json(reports: list[RankReport]) -> object:
    out = []
    for rep in reports:
        plan = None
        if rep.plan is not None:
            p = rep.plan
            plan = {
                "launcher": p.launcher,
                "read_by": p.read_by,
                "role": p.role,
                "image": _json_setting(p.image),
                "container_name": _json_setting(p.container_name),
                "container": {n: _json_setting(getattr(p.container, n)) for n in CONTAINER_FIELDS}
                | {"mounts": [asdict(m) for m in p.container.mounts]},
                "environment": {k: _json_setting(s) for k, s in sorted(p.environment.items())},
                "environment_complete": p.env_complete,
                "command": {"argv": _command(p), "source": str(p.command)},
                "notes": list(p.notes),
            }
        out.append(
            {
                "node": rep.node,
                "rank": rep.rank,
                "read": rep.read,
                "plan": plan,
                "error": rep.error or None,
                "rules": [asdict(r) for r in rep.rules],
                "failed": rep.failed,
            }
        )
    return neutralise_tree(redact_tree({"ranks": out, "failed": any(r.failed for r in reports)}))


def _json_setting(s: Setting[Any]) -> dict[str, object]:
    value = s.value
    shown: object = value if isinstance(value, (str, int, bool)) or value is None else str(value)
    if isinstance(value, tuple):
        shown = [v if isinstance(v, (str, int)) else str(v) for v in value]
    return {"value": shown, "deferred": s.deferred, "source": str(s.source) if s.source else None}


# -- the command ---------------------------------------------------------------------------------------
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="gb10check plan",
        description="Each rank's launch plan (image, container settings, the environment as vLLM gets it, the "
        "command), every value with the file and line that sets it, and the launch rules' verdicts. Read-only.",
        epilog="exit status: 0 no rule fails, 1 a rule fails or a rank's plan cannot be read, "
        "4 usage, inventory or --sim set-up error",
    )
    p.add_argument("--cluster", metavar="PATH", help="the inventory (default: $GB10_CLUSTER, else ./cluster.toml)")
    how = p.add_mutually_exclusive_group()
    how.add_argument(
        "--running",
        action="store_true",
        help="read the running containers (docker inspect, the vLLM process's /proc), whatever started them",
    )
    how.add_argument(
        "--offline",
        action="store_true",
        help="read the deployment's files on this machine, no node asked (a deployment repository's own CI)",
    )
    p.add_argument(
        "--files",
        metavar="DIR",
        type=Path,
        help="with --offline: the deployment's files are in DIR by name (compose.yml, .env, launch.sh), a node's "
        "own in DIR/NODE when it has that folder",
    )
    p.add_argument("--node", action="append", default=[], metavar="NAME", help="only this node's rank (repeatable)")
    p.add_argument("--json", action="store_true", help="the plans and verdicts as JSON, for tools")
    p.add_argument("--sim", nargs="?", const="healthy", metavar="SCENARIO", help="against the simulated cluster (root)")
    return p


@contextmanager
def _inventory_path(opts: argparse.Namespace) -> Iterator[tuple[Path, str]]:
    if opts.sim is None:
        if opts.cluster:
            yield Path(opts.cluster).expanduser(), "--cluster"
        else:
            yield inv.default_path()
        return
    if opts.cluster:
        raise InventoryError(f"--sim and --cluster={opts.cluster} both name the cluster: give one of them")
    from gb10check import suite

    sys.path.insert(0, str(suite.root()))  # the simulated cluster is the suite's, beside or inside the package
    from sim import netns
    from sim.cluster import SimCluster
    from sim.scenario import load_scenario

    sim = SimCluster(load_scenario(opts.sim))
    path = sim.up()
    previous = netns.enter(sim.api_namespace)  # read from rank 0, as the suite does
    try:
        yield path, f"--sim {opts.sim}"
    finally:
        netns.leave(previous)
        sim.down()


def main(args: list[str], print_: Callable[[str], object] = sys.stdout.write) -> int:
    parser = _parser()
    try:
        opts = parser.parse_args(args)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 4
    if opts.files is not None and not opts.offline:
        print("gb10check plan: --files goes with --offline (the nodes' files are on the nodes)", file=sys.stderr)
        return 4
    if opts.files is not None and not opts.files.is_dir():
        print(f"gb10check plan: --files {opts.files}: not a folder", file=sys.stderr)
        return 4
    try:
        with _inventory_path(opts) as (path, origin):
            inventory = inv.load_inventory(path, origin)
            unknown = [n for n in opts.node if n not in {s.name for s in inventory.nodes}]
            if unknown:
                names = ", ".join(s.name for s in inventory.nodes)
                print(f"gb10check plan: --node {unknown[0]}: not in {path} (its nodes: {names})", file=sys.stderr)
                return 4
            if inventory.deployment is None:
                print(f"gb10check plan: {path} has no [deployment]: nothing to read", file=sys.stderr)
                return 4
            protect(identifiers(inventory))
            use_site_shapes((s.id, s.regex, s.prefix) for s in inventory.secret_shapes)
            reports = plans(inventory, running=opts.running, offline=opts.offline, only=opts.node, files=opts.files)
    except GB10Error as exc:
        print(f"gb10check plan: {exc}", file=sys.stderr)
        return 4
    if opts.json:
        print_(json.dumps(to_json(reports), indent=2) + "\n")
    else:
        print_(render(reports))
    return 1 if any(r.failed for r in reports) else 0
