"""python -m sim: manage the simulated cluster by hand.

python -m sim up [SCENARIO]   bring it up and wait (Ctrl-C tears it down); prints the inventory path
python -m sim clean [--all]   remove what crashed runs left (--all: every simulated cluster)
python -m sim list            the builtin scenarios
"""

from __future__ import annotations

import argparse
import signal
import sys

from gb10check.errors import SimError
from sim.cluster import SimCluster, clean_stale, why_not_available
from sim.scenario import builtin_names, load_scenario


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sim", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up")
    up.add_argument("scenario", nargs="?", default="healthy")
    clean = sub.add_parser("clean")
    clean.add_argument("--all", action="store_true")
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
                    fails = f"{len(scenario.expect.fails)} check(s): {', '.join(hints)}" if hints else "nothing"
                    print(f"{'':{width}}  ({run}) fails {fails}")
        elif args.cmd == "clean":
            reason = why_not_available()
            if reason:  # namespaces and /run/gb10sim are root's: without root nothing can be removed
                raise SimError(f"cannot clean: {reason}")
            removed = clean_stale(everything=args.all)
            print(f"removed {len(removed)} simulated cluster(s)" + (f": {', '.join(removed)}" if removed else ""))
        else:
            sim = SimCluster(load_scenario(args.scenario))
            path = sim.up()
            print(f"simulated cluster up ({args.scenario}); inventory: {path}; rank 0 namespace: {sim.api_namespace}")
            print(
                f"try: ip netns exec {sim.api_namespace} ssh -i {sim.dir}/client_key"
                f" -o UserKnownHostsFile={sim.dir}/known_hosts root@{sim.nodes[-1].lan_ip} ibdev2netdev"
            )
            signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
            try:
                signal.pause()
            except KeyboardInterrupt:
                pass
            finally:
                sim.down()
    except SimError as exc:
        print(f"sim: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # `python -m sim list | head`
        sys.exit(0)
