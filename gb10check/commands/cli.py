"""`gb10check`: the suite for operators, one stage at a time, from any directory.

It runs pytest with the rootdir fixed to the suite (the clone that `bin/setup` installed from),
so paths may be given with or without `=` and relative to where you are; everything pytest
takes can follow. `pytest -m STAGE` from the clone keeps working the same.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from gb10check import suite
from gb10check.errors import CommandLineError, SuiteFilesError
from gb10check.stages import STAGES

__all__ = ["EXIT_CODES", "PYTEST_PATH_OPTIONS", "SIM", "main", "version"]

EXIT_CODES = """exit status:
  0  every check passed (skips, with their reasons, allowed)
  1  a check failed: the troubleshooting section and reports/summary.md say what to do
  2  interrupted (SIGTERM, Ctrl-C): the reports were still written, marked interrupted
  3  an internal error of the suite (please report it with the output)
  4  usage or set-up error: no or bad inventory, unwritable reports folder, an option without
     its value or with a bad one (also `gb10check sim` not run as root)
  5  no check was selected (a -k or -m that matches nothing)"""
# pytest's own options that take a path: made absolute too, since pytest runs from the suite
PYTEST_PATH_OPTIONS = ("--junitxml", "--junit-xml")
SIM = "--sim"


def _with_stage(args: list[str], marker: str) -> list[str]:
    """The stage's marker and-ed with the user's own `-m EXPR` (pytest keeps only the last -m):
    `gb10check network -m "not performance"` runs `-m "network and (not performance)"`."""
    out, exprs = [], []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-m" and i + 1 < len(args):
            exprs.append(args[i + 1])
            i += 2
            continue
        if arg.startswith("-m") and len(arg) > 2:
            exprs.append(arg[2:].removeprefix("="))
        else:
            out.append(arg)
        i += 1
    return [*out, "-m", " and ".join([marker, *(f"({e})" for e in exprs)])]


def _value(args: list[str], i: int) -> tuple[str | None, int]:
    """The value of the option at args[i]: after its '=', else the next argument unless that is an option
    (as argparse reads it); and the index of the last argument used."""
    _, eq, value = args[i].partition("=")
    if eq:
        return value, i
    if i + 1 < len(args) and not args[i + 1].startswith("-"):
        return args[i + 1], i + 1
    return None, i


def _missing(args: list[str], i: int) -> str:
    """What stood where the value should be, for the message."""
    if "=" in args[i]:
        return " (nothing after '=')"
    return f" (found the option {args[i + 1]})" if i + 1 < len(args) else " (nothing followed it)"


def _normalised(args: list[str], cwd: Path) -> list[str]:
    """The suite's options as pytest must get them: `--cluster x.toml` and `--cluster=x.toml` alike
    become `--cluster=/abs/x.toml` (pytest takes a bare path for a test path), `--sim FILE` too, numbers
    checked. A value that is missing or bad is a CommandLineError, said in the suite's words."""
    from fixtures.settings import NUMBER_OPTIONS, OPTIONS, positive

    paths = {opt.flag for opt in OPTIONS} | set(PYTEST_PATH_OPTIONS)
    numbers = {opt.flag: opt.metavar for opt in NUMBER_OPTIONS}
    out: list[str] = []
    i = 0
    while i < len(args):
        name = args[i].partition("=")[0]
        if name not in paths and name not in numbers and name != SIM:
            out.append(args[i])
            i += 1
            continue
        value, last = _value(args, i)
        if name == SIM:
            if value == "":
                raise CommandLineError(
                    f"{SIM}= needs a scenario: a builtin name or a .toml file ({SIM} alone: healthy)"
                )
            if value is None:
                out.append(SIM)  # the builtin healthy scenario
            else:  # a builtin name or a scenario file, also either side of NAME@BASE
                parts = [
                    str((cwd / Path(p).expanduser()).resolve()) if p.endswith(".toml") or os.sep in p else p
                    for p in value.rsplit("@", 1)
                ]
                out.append(f"{SIM}={'@'.join(parts)}")
        elif name in numbers:
            metavar = numbers[name]
            if not value:
                raise CommandLineError(f"{name} needs {metavar}, a number{_missing(args, i)}: {name} 30 or {name}=30")
            try:
                positive(value)
            except argparse.ArgumentTypeError as exc:
                raise CommandLineError(f"{name} takes {metavar}: {exc}") from None
            out.append(f"{name}={value}")
        else:
            if not value:
                raise CommandLineError(f"{name} needs a path{_missing(args, i)}: {name} PATH or {name}=PATH")
            out.append(f"{name}={(cwd / Path(value).expanduser()).resolve()}")
        i = last + 1
    return out


def _parser() -> argparse.ArgumentParser:
    stages = "\n".join(f"  {name:10} {about}" for name, (_, about) in STAGES.items())
    return argparse.ArgumentParser(
        prog="gb10check",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Acceptance and diagnostics for GB10 clusters serving vLLM across nodes.",
        usage="gb10check STAGE [--cluster PATH] [--sim [SCENARIO]] [--reports-dir DIR] [PYTEST ARGS...]\n"
        "       gb10check init [[USER@]HOST ...] [--check] [--output PATH]\n"
        "       gb10check plan [--cluster PATH] [--running | --offline [--files DIR]] [--node NAME] [--json]\n"
        "       gb10check explain [FILE|-] [--json]\n"
        "       gb10check known-issues [--known-issues FILE] [-v] [--json]\n"
        "       gb10check sim up [SCENARIO] | list | clean\n"
        "       gb10check completion bash|zsh\n"
        "       gb10check --version | STAGE --help | STAGE --pytest-help",
        epilog=f"""stages:
  init       first: on rank 0, discover the cluster read-only (the other nodes found on the fabric, or
             named: `gb10check init spark-02 spark-03`) and write ./cluster.toml, every value with where
             it came from and TODO lines for what it could not find; with an inventory there, print how
             the cluster differs
{stages}
  plan       each rank's launch plan: image, container settings, the environment as vLLM gets it and the
             command, every value with the file and line that sets it, and the launch rules' verdicts;
             from the nodes' files (default), the running containers (--running) or files on this
             machine (--offline [--files DIR]: a deployment repository's own CI); --json for tools
  explain    read a vLLM log (a file, or - for stdin: `docker logs` piped in, pasted text), offline: the
             troubleshooting rows it matches, each with its line and what to do (--json for tools)
  known-issues
             the versions and combinations the field reported broken that preflight checks every node
             against, each with its fix and public sources (-v: what happens; --json for tools)
  sim        the simulated cluster by hand (needs root): up [SCENARIO], list, clean (removes the
             clusters whose owner is gone, names those in use)
  completion the shell's completion: eval "$(gb10check completion bash)" in ~/.bashrc (zsh: ~/.zshrc)

options (also `pytest --help`, group gb10check):
  --cluster PATH       the inventory (default: $GB10_CLUSTER, else ./cluster.toml)
  --sim [SCENARIO]     run against the bundled simulated cluster instead (root): a builtin name
                       (gb10check sim list) or a scenario file; alone: healthy
  --hints FILE         your site's own hints, added to the builtin catalogue
  --known-issues FILE  your site's own known issues (gb10check known-issues -v shows the format's facts)
  --reports-dir DIR    where junit.xml, summary.md, summary.json and report.html go (default ./reports)
  --history DIR        keep each run there; regressions, recoveries and trend checks against it
  --prometheus FILE    the run as a node_exporter textfile (atomic)
  --after-boot         wait for every node to answer SSH (ssh.boot_timeout), then for the service
  --wait-ready SECONDS wait for the service first, watching every node's MemAvailable
  --stop-on-low-memory with a wait: docker stop the containers when MemAvailable falls too low
  --bandwidth          run ib_write_bw even while the deployment's containers run
  --soak MINUTES       a steady load that fails when tokens stop advancing
  anything else        passed to pytest as it is (-k EXPR, -x, -n 2, --junitxml=PATH, -q ...)

{EXIT_CODES}

examples:
  gb10check preflight --cluster /etc/gb10/cluster.toml
  gb10check smoke --after-boot
  gb10check nightly --history /var/lib/gb10check/history --prometheus /var/lib/node_exporter/gb10check.prom
  gb10check network --sim link-down""",
    )


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except BrokenPipeError:  # `gb10check sim list | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("gb10check")
    except PackageNotFoundError:  # run from a clone without bin/setup
        return "unknown (not installed: run bin/setup)"


def _version_lines() -> str:
    """`gb10check --version`: the suite's version, where its checks are, the Python and pytest that run
    them, and the inventory a stage would read from here (as a bug report wants them)."""
    import platform

    import pytest

    try:
        where = f"{suite.root()} ({'installed' if suite.installed() else 'a clone'})"
    except SuiteFilesError as exc:
        where = str(exc)
    if os.environ.get("GB10_CLUSTER"):
        path, origin = Path(os.environ["GB10_CLUSTER"]).expanduser(), "$GB10_CLUSTER"
    else:
        path, origin = Path.cwd() / "cluster.toml", "the default, ./cluster.toml"
    found = "found" if path.is_file() else "not there: gb10check init writes one"
    return (
        f"gb10check {version()}\n"
        f"  suite      {where}\n"
        f"  python     {platform.python_version()} ({sys.executable})\n"
        f"  pytest     {pytest.__version__}\n"
        f"  inventory  {path} ({origin}; {found})"
    )


def _stage_help(stage: str) -> str:
    """`gb10check STAGE --help`: what the stage runs and the options, not pytest's 500 lines."""
    marker, about = STAGES[stage]
    selects = f"the checks marked {marker} (pytest -m {marker})" if marker else "every check"
    return (
        f"usage: gb10check {stage} [--cluster PATH] [--sim [SCENARIO]] [--reports-dir DIR] [PYTEST ARGS...]\n\n"
        f"{stage}: {about}.\nRuns {selects}; everything pytest takes can follow (-k EXPR, -x, -n 2, -q).\n\n"
        + _parser().format_help().split("options (also", 1)[1].split("\n", 1)[1].split("\nexamples:", 1)[0]
        + f"\npytest's own options: gb10check {stage} --pytest-help\n"
    )


def _main(args: list[str]) -> int:
    if not args or args[0] in ("-h", "--help", "help"):
        _parser().print_help()  # bare `gb10check` too: what to type, not an error
        return 0
    if args[0] in ("-V", "--version"):
        print(_version_lines())
        return 0
    stage, rest = args[0], args[1:]
    if stage in STAGES and any(a in ("-h", "--help") for a in rest):
        print(_stage_help(stage), end="")
        return 0
    rest = ["--help" if a == "--pytest-help" else a for a in rest]
    if stage == "explain":  # offline: no suite, no inventory
        from gb10check.commands.explain import main as explain_main

        return explain_main(rest)
    if stage == "known-issues":  # offline: the catalogue only
        from gb10check.commands.known_issues import main as known_issues_main

        return known_issues_main(rest)
    if stage == "init":  # discovers the cluster and writes its inventory: no pytest, no inventory
        from gb10check.commands.init import main as init_main

        return init_main(rest)
    if stage == "plan":  # reads the nodes (or files) itself: no pytest
        from gb10check.commands.plan import main as plan_main

        return plan_main(rest)
    try:
        root = suite.root()
    except SuiteFilesError as exc:
        print(exc, file=sys.stderr)
        return 4
    sys.path.insert(0, str(root))  # the sim, and the settings (fixtures/settings.py) naming what each option takes
    if stage == "completion":  # the shell's completion script, from the commands' own parsers
        from gb10check.commands.completion import main as completion_main

        return completion_main(rest)
    if stage == "sim":
        from sim.__main__ import main as sim_main

        return sim_main(rest, prog="gb10check sim")
    if stage not in STAGES:
        _parser().print_usage(sys.stderr)
        known = ["init", *STAGES, "plan", "explain", "known-issues", "sim", "completion"]
        print(
            f"gb10check: unknown stage {stage!r}; one of {', '.join(known)}",
            file=sys.stderr,
        )
        return 4
    cwd = Path.cwd()
    try:
        options = _normalised(rest, cwd)
    except CommandLineError as exc:
        _parser().print_usage(sys.stderr)
        print(f"gb10check: {exc}\nSee gb10check --help.", file=sys.stderr)
        return 4
    pytest_args = [f"--rootdir={root}", "-c", str(root / "pytest.ini"), *options]
    marker = STAGES[stage][0]
    if marker:
        pytest_args = _with_stage(pytest_args, marker)
    if not any(a.partition("=")[0] == "--reports-dir" for a in pytest_args) and not os.environ.get("GB10_REPORTS"):
        pytest_args.append(f"--reports-dir={cwd / 'reports'}")  # where the operator is, not inside the clone
    if not any(a.partition("=")[0] == "--cluster" for a in pytest_args) and not os.environ.get("GB10_CLUSTER"):
        default = cwd / "cluster.toml"  # ./cluster.toml means the operator's directory, not the suite's
        if default.is_file():
            pytest_args.append(f"--cluster={default}")
    import pytest

    if suite.installed():  # the package's folder is no place for pytest's cache
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gb10check" / "pytest"
        pytest_args[:0] = ["-o", f"cache_dir={cache}"]
    os.chdir(root)  # testpaths, the plugin and the default reports/ are the suite's
    return int(pytest.main(pytest_args))


if __name__ == "__main__":
    sys.exit(main())
