"""Public multi-node GB10 / DGX Spark vLLM deployments (selftests/corpus/deployments.toml) held against
gb10check's readers and rules.

The list always has to be well-formed. The files themselves are other people's code, never committed:
`python selftests/corpus/fetch.py` (or `--mirror DIR`) writes them to selftests/corpus/files/, and
without them the rest skips, saying so. With them, for each entry and each rank the author's README
describes:
- a script that `bash -n` accepts is read by the shell reader with no parse error (a value only the
  start decides is Deferred, never an error);
- a compose file is read by the real Docker Compose (`docker compose config`) and by the fallback reader,
  which must agree on the service's environment and command;
- where a launch plan can be built (a `docker run` script, a compose file), every rule is applied with a
  Context without node facts (ports, netdevs and MemTotal None: offline) against an inventory of the
  author's cluster, and a working deployment fails none of them;
- what the reader refuses by design (a launcher that starts every node over SSH) is refused saying why.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
import shutil
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from gb10check.deployment.compose import parse_compose_config
from gb10check.deployment.compose_fallback import load_service, parse_dotenv
from gb10check.deployment.launch.docker_run import run_plan
from gb10check.deployment.launch.from_compose import compose_plan
from gb10check.deployment.launch.from_script import read_script, started_by, started_remotely
from gb10check.deployment.launch.plan import LaunchPlan
from gb10check.deployment.launch.process import started
from gb10check.deployment.launch.rules import RULES, Context, NotApplicable
from gb10check.errors import DecidedAtStart, GB10Error, ParseError
from gb10check.inventory import Inventory, parse_inventory

PROJECT = Path(__file__).resolve().parents[2]
CORPUS = PROJECT / "selftests" / "corpus"
LIST = CORPUS / "deployments.toml"
FILES = CORPUS / "files"
COMPOSE = PROJECT / ".venv" / "bin" / "docker-compose"
KINDS = ("compose", "docker-run-script", "ray-script", "compose-script", "other-script")
EXPECT = ("plan", "read", "refused")
SCRIPTS = ("docker-run-script", "ray-script", "compose-script", "other-script")
ROOT = "/deploy"  # where the corpus's files stand as the reader sees them: ROOT/PATH

ENTRIES: list[dict[str, Any]] = tomllib.loads(LIST.read_text())["deployment"]
CASES = [(e, r) for e in ENTRIES for r in e["rank"]]
IDS = [f"{e['id']}-rank{r['rank']}" for e, r in CASES]


def _fetched() -> None:
    if not FILES.is_dir():
        pytest.skip("corpus not fetched: python selftests/corpus/fetch.py")


def _file(entry: dict[str, Any], path: str) -> Path:
    return FILES / entry["repo"].replace("/", "+") / path


def _files(entry: dict[str, Any]) -> dict[str, str]:
    """Every fetched file of the entry, by the path the reader sees it at (ROOT/PATH)."""
    out = {}
    for path in [entry["path"], *entry.get("extra", [])]:
        local = _file(entry, path)
        if local.exists():
            out[f"{ROOT}/{path}"] = local.read_bytes().decode(errors="replace")
    for made, source in entry.get("copies", {}).items():  # what the README has the operator copy
        if f"{ROOT}/{source}" in out:
            out[f"{ROOT}/{made}"] = out[f"{ROOT}/{source}"]
    return out


# -- the list ----------------------------------------------------------------------------------------------
def test_the_list_is_well_formed():
    ids = [e["id"] for e in ENTRIES]
    assert len(set(ids)) == len(ids), "entry ids must be unique"
    assert 10 <= len(ENTRIES) <= 16
    for e in ENTRIES:
        where = e["id"]
        assert re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", e["repo"]), where
        assert re.fullmatch(r"[0-9a-f]{40}", e["commit"]), f"{where}: commit must be 40 hex"
        assert e["path"] and not e["path"].startswith("/"), where
        assert e["kind"] in KINDS, f"{where}: kind {e['kind']!r} not one of {KINDS}"
        assert e["expect"] in EXPECT, f"{where}: expect {e['expect']!r} not one of {EXPECT}"
        assert e["url"].startswith("https://github.com/"), f"{where}: the author's report needs its url"
        assert e["reported"] and e["nodes"] >= 2, f"{where}: what the author reports, on two or more nodes"
        assert e["rank"], f"{where}: at least one rank's args or env"
        if e["expect"] == "plan":
            assert "cluster" in e, f"{where}: a plan is judged against the author's cluster"
            assert all(len(r.get("addresses", [])) == len(e["cluster"]["rails"]) for r in e["rank"]), where
        if e["expect"] == "refused":
            assert e.get("refusal"), f"{where}: what the refusal says"
        if e["kind"] == "compose":
            assert e.get("service"), f"{where}: the compose service the deployment runs"
    assert len({e["repo"] for e in ENTRIES}) >= 7, "from different repositories"


def test_fetch_writes_the_files_from_a_mirror(tmp_path):
    """fetch.py's --mirror path, on a bare repository of our own (no network)."""
    work = tmp_path / "work"
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / "run.sh").write_text("docker run -d img\n")
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "add", "run.sh"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    mirror = tmp_path / "mirror"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(mirror / "me+demo")], check=True)
    listing = tmp_path / "list.toml"
    listing.write_text(f'[[deployment]]\nrepo = "me/demo"\ncommit = "{commit}"\npath = "run.sh"\n')
    import selftests.corpus.fetch as fetch

    old = fetch.FILES
    fetch.FILES = tmp_path / "files"
    try:
        assert fetch.main(["--mirror", str(mirror), "--list", str(listing)]) == 0
        assert (tmp_path / "files" / "me+demo" / "run.sh").read_text() == "docker run -d img\n"
        listing.write_text(f'[[deployment]]\nrepo = "me/demo"\ncommit = "{commit}"\npath = "gone.sh"\n')
        assert fetch.main(["--mirror", str(mirror), "--list", str(listing)]) == 1
        assert fetch.main(["--mirror", str(tmp_path / "none"), "--list", str(listing)]) == 2
    finally:
        fetch.FILES = old


# -- reading -----------------------------------------------------------------------------------------------
def _inventory(entry: dict[str, Any]) -> Inventory:
    """The author's cluster as an inventory: its nodes, TP size, control plane and rails (no [service]:
    the rules on the served model have nothing to compare with and do not apply)."""
    c = entry["cluster"]
    count = c.get("nodes", entry["nodes"])
    given = {r["rank"]: r for r in entry["rank"]}
    lines = [f'[cluster]\nname = "corpus"\ntensor_parallel_size = {c["tp"]}\n']
    if count > 2:
        lines.append('topology = "switch"\n')
    for rank in range(count):
        lines.append(
            f'[[nodes]]\nname = "n{rank}"\nrank = {rank}\n'
            + ('transport = "local"\n' if rank == 0 else f'transport = "ssh"\nhost = "n{rank}"\nuser = "u"\n')
        )
    lines.append(f'[control]\nnetdev = "{c["control"]}"\n')
    for i, (netdev, device) in enumerate(c["rails"]):
        net = ipaddress.ip_interface(next(iter(given.values()))["addresses"][i]).network
        # a rank the entry does not describe: an address of its own on the rail's subnet
        addresses = ", ".join(
            f'n{rank} = "{given[rank]["addresses"][i] if rank in given else f"{net[200 + rank]}/{net.prefixlen}"}"'
            for rank in range(count)
        )
        lines.append(
            f'[[rails]]\nnetdev = "{netdev}"\nrdma_device = "{device}"\ngid_index = 3\naddresses = {{ {addresses} }}\n'
        )
    return parse_inventory("\n".join(lines), f"{entry['id']} (the author's cluster)")


@dataclass
class Outcome:
    """What the readers made of one rank of one entry."""

    plan: LaunchPlan | None = None
    refused: str = ""
    verdicts: dict[str, str] = field(default_factory=dict)  # rule id -> outcome (skipped, decided at start...)
    found: dict[str, str] = field(default_factory=dict)
    fallback_refused: str = ""  # a compose the fallback reader refuses (the real Compose's reading is used)


def _bash_accepts(path: Path) -> bool:
    return subprocess.run(["bash", "-n", str(path)], capture_output=True, timeout=30).returncode == 0


def _script_plan(entry: dict[str, Any], rank: dict[str, Any]) -> Outcome:
    text = _file(entry, entry["path"]).read_bytes().decode(errors="replace")
    files = _files(entry)
    runs_on = next((r for r in entry["rank"] if r["rank"] == rank["runs_on"]), None) if "runs_on" in rank else None
    invoked = runs_on or rank  # a rank another rank's run of the script starts: that run's args and env
    reading = read_script(
        text, script=f"{ROOT}/{entry['path']}", args=list(invoked.get("args", [])), env=dict(invoked.get("env", {})),
        files=files.get,
    )  # fmt: skip
    if entry["kind"] == "other-script" or entry["expect"] == "read":
        launch = started(reading, f"{ROOT}/{entry['path']}")
        return Outcome(found={"role": launch.role or "none"})
    try:
        if runs_on is not None:
            hosts = [a.split("/")[0] for a in rank["addresses"]]
            start = started_remotely(
                reading, hosts=hosts, container=entry.get("container", ""), image=entry.get("image", "")
            )
        else:
            start = started_by(reading, container=entry.get("container", ""), image=entry.get("image", ""))
    except ParseError as exc:
        return Outcome(refused=str(exc))
    if start.docker_run is None:
        return Outcome(refused="runs docker compose up (judged with its compose entry)")
    ran, run = start.docker_run
    plan = run_plan(run, ran, node=f"n{rank['rank']}", rank=rank["rank"], image=None, host_file=files.get)
    return Outcome(plan=plan)


def _compose_dir(entry: dict[str, Any], rank: dict[str, Any], into: Path) -> tuple[Path, dict[str, str]]:
    """The compose file with its extra files in a folder of its own, and the .env the rank runs with (the
    entry's env_file, then the README's values for the rank)."""
    folder = into / entry["id"]
    for path in [entry["path"], *entry.get("extra", [])]:
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_file(entry, path), target)
    compose_dir = (folder / entry["path"]).parent
    dotenv: dict[str, str] = {}
    if rank.get("env_file"):
        dotenv = parse_dotenv((folder / rank["env_file"]).read_text(), rank["env_file"])
    dotenv = {**dotenv, **rank.get("env", {})}
    dotenv = {k: v.replace("$HOME", rank.get("env", {}).get("HOME", "/home/user")) for k, v in dotenv.items()}
    (compose_dir / ".env").write_text("".join(f"{k}='{v}'\n" for k, v in dotenv.items()))
    return folder / entry["path"], dotenv


def _compose_config(path: Path, service: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(path.parent)}  # no variable of this machine leaks in
    version = subprocess.run([str(COMPOSE), "version", "--short"], capture_output=True, text=True, env=env, timeout=30)
    run = subprocess.run(
        [str(COMPOSE), "-f", path.name, "config", "--format", "json", service],
        cwd=path.parent, capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    return subprocess.CompletedProcess(run.args, run.returncode, version.stdout + run.stdout, run.stderr)


def _compose_plan(entry: dict[str, Any], rank: dict[str, Any], tmp: Path) -> Outcome:
    path, dotenv = _compose_dir(entry, rank, tmp)
    text = path.read_text()
    real = _compose_config(path, entry["service"])
    assert real.returncode == 0, f"{entry['id']}: docker compose config refuses it: {real.stderr[-600:]}"
    service = parse_compose_config(real.stdout, container=None, what=str(path), service=entry["service"])
    try:
        fallback = load_service(
            text, dotenv, container=None, what=str(path), compose_dir=str(path.parent),
            env_files={str(path.parent / ".env"): dotenv}, service=entry["service"],
        )  # fmt: skip
    except ParseError as exc:  # the fallback may refuse a form it does not follow (said so), never misread it
        assert "does not follow" in str(exc), f"{entry['id']}: the fallback reader fails otherwise: {exc}"
        fallback_refused = str(exc)
    else:
        fallback_refused = ""
        assert fallback.environment == service.environment, f"{entry['id']}: the two readers' environments differ"
        for key in ("command", "entrypoint"):
            assert _words(fallback.raw.get(key)) == _words(service.raw.get(key)), f"{entry['id']}: {key} differs"
    files = _files(entry)

    def host_file(p: str) -> str | None:  # a mounted file of the entry, as the compose's folder has it
        local = Path(p)
        return local.read_text() if local.is_file() and tmp in local.parents else files.get(p)

    plan = compose_plan(
        service, node=f"n{rank['rank']}", rank=rank["rank"], compose_file=str(path), compose_text=text,
        env_files={str(path.parent / ".env"): (path.parent / ".env").read_text()}, image=None, image_ref=None,
        host_file=host_file,
    )  # fmt: skip
    return Outcome(plan=plan, fallback_refused=fallback_refused)


def _words(value: object) -> list[str] | None:
    if value is None:
        return None
    return [str(v) for v in value] if isinstance(value, list) else shlex.split(str(value))


def _judge(outcome: Outcome, entry: dict[str, Any]) -> None:
    assert outcome.plan is not None
    inventory = _inventory(entry)
    ctx = Context(plan=outcome.plan, inventory=inventory, mem_total=None, ports=None, netdevs=None)
    for rule in RULES:
        if (rule.rank0_only and outcome.plan.rank != 0) or (
            rule.topologies and inventory.topology not in rule.topologies
        ):
            continue
        try:
            v = rule.check(ctx)
        except NotApplicable:
            outcome.verdicts[rule.id] = "skipped"
            continue
        except DecidedAtStart:
            outcome.verdicts[rule.id] = "decided at start"
            continue
        except GB10Error as exc:
            outcome.verdicts[rule.id] = f"error: {exc}"
            continue
        outcome.verdicts[rule.id] = v.outcome
        outcome.found[rule.id] = v.found


def read_rank(entry: dict[str, Any], rank: dict[str, Any], tmp: Path) -> Outcome:
    """What gb10check makes of one rank of one entry (also for a look at the whole corpus by hand)."""
    outcome = _compose_plan(entry, rank, tmp) if entry["kind"] == "compose" else _script_plan(entry, rank)
    if outcome.plan is not None:
        _judge(outcome, entry)
    return outcome


@pytest.mark.parametrize(("entry", "rank"), CASES, ids=IDS)
def test_a_working_deployment_is_read_and_fails_no_rule(entry, rank, tmp_path):
    _fetched()
    local = _file(entry, entry["path"])
    if entry.get("xfail"):
        pytest.xfail(entry["xfail"])
    if entry["kind"] in SCRIPTS:
        assert _bash_accepts(local), f"{entry['id']}: bash -n refuses it (the reader must too; not a corpus case)"
    try:
        outcome = read_rank(entry, rank, tmp_path)
    except ParseError as exc:
        pytest.fail(f"{entry['id']} rank {rank['rank']}: the reader refuses what bash accepts: {exc}")
    if entry["expect"] == "refused":
        assert entry["refusal"] in outcome.refused, outcome.refused or "not refused"
        return
    assert not outcome.refused, f"{entry['id']} rank {rank['rank']}: refused: {outcome.refused}"
    if entry["expect"] == "read":
        if rank.get("role"):
            assert outcome.found["role"] == rank["role"]
        return
    fails = {k: outcome.found.get(k, "") for k, v in outcome.verdicts.items() if v == "fail"}
    assert not fails, f"{entry['id']} rank {rank['rank']} works for its author, yet the rules fail: {fails}"
    errors = {k: v for k, v in outcome.verdicts.items() if v.startswith("error")}
    assert not errors, errors
