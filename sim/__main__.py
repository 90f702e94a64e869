"""python -m sim: manage the simulated cluster by hand.

python -m sim up [SCENARIO]   bring it up and wait (Ctrl-C tears it down); prints the inventory path
python -m sim clean           remove the clusters whose owner is gone (crashed or killed runs'); name
                              those still in use (to remove one, end its owner: kill PID, then clean)
python -m sim list            the builtin scenarios

exit status: 0 done, 4 usage or set-up error (not root, no such scenario, the cluster did not come up)
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import NoReturn

from gb10check.errors import SimError
from sim.cluster import SimCluster, why_not_available
from sim.owners import clean_stale
from sim.scenario import builtin_names, load_scenario

__all__ = ["ALL_REFUSED", "USAGE", "main"]

USAGE = 4  # gb10check's status for a usage or set-up error (argparse's own 2 reads as "interrupted")
ALL_REFUSED = (
    "clean --all is no longer taken: it removed simulated clusters other runs were still using (their checks "
    "failed mid-run). `clean` removes every cluster whose owner is gone and names those in use; to remove one "
    "of those, end its owner (kill PID: it tears its cluster down) and run clean again"
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(USAGE, f"{self.prog}: error: {message}\n")


def main(argv: list[str] | None = None, prog: str = "python -m sim") -> int:
    parser = _Parser(prog=prog, description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up")
    up.add_argument("scenario", nargs="?", default="healthy")
    clean = sub.add_parser("clean")
    clean.add_argument("--all", action="store_true", help=argparse.SUPPRESS)  # refused, saying why
    sub.add_parser("list")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "list":
            names = builtin_names()
            width = max(map(len, names))
            for name in names:
                scenario = load_scenario(name)
                print(f"{name:{width}}  {scenario.data.get('description', '')}")
                if scenario.expect is not None:  # what it must fail, from the file's [expect]
                    hints = sorted({h for ids in scenario.expect.fails.values() for h in ids})
                    run = f"-m {scenario.expect.marker}" if scenario.expect.marker else "every marker"
                    said = len(scenario.expect.fails)
                    patterns = f"{said} check pattern{'s' if said > 1 else ''}"
                    fails = f"{patterns} with {', '.join(hints)}" if hints else "nothing"
                    print(f"{'':{width}}  ({run}) fails {fails}")
        elif args.cmd == "clean":
            if args.all:
                raise SimError(ALL_REFUSED)
            reason = why_not_available()
            if reason:  # namespaces and /run/gb10sim are root's: without root nothing can be removed
                raise SimError(f"cannot clean: {reason}")
            cleaned = clean_stale()
            removed = cleaned.removed
            print(
                f"removed {len(removed)} simulated cluster(s) whose owner is gone"
                + (f": {', '.join(removed)}" if removed else "")
            )
            if cleaned.in_use:
                print(f"left {len(cleaned.in_use)} in use (owner pid: its command; kill PID ends it and its cluster):")
                for owner in cleaned.in_use:
                    print(f"  {owner.describe()}")
        else:
            sim = SimCluster(load_scenario(args.scenario))
            path = sim.up()
            print(f"simulated cluster up ({args.scenario}); inventory: {path}; rank 0 namespace: {sim.api_namespace}")
            print(
                f"try: ip netns exec {sim.api_namespace} ssh -i {sim.dir}/client_key"
                f" -o UserKnownHostsFile={sim.dir}/known_hosts root@{sim.nodes[-1].lan_ip} ibdev2netdev",
                flush=True,  # piped (a script waiting for the line), not held in a buffer while the cluster is up
            )
            signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
            try:
                signal.pause()
            except KeyboardInterrupt:
                pass
            finally:  # a second Ctrl-C or SIGTERM does not cut the (bounded) teardown short
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                sim.down()
    except SimError as exc:
        print(f"sim: {exc}", file=sys.stderr)
        return USAGE
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # `python -m sim list | head`
        sys.exit(0)
