"""Run the fuzzer from the command line and print the counts.

    python tests/fuzz/run.py onnx --cases 10000          # cases with seeds 0..9999
    python tests/fuzz/run.py onnx --seed 1234            # one case again (from a report)
    python tests/fuzz/run.py onnx --first 50000 --cases 500 --time-budget 120

Exit status 1 if any case failed (crash, hang, internal error, mismatch, accepted invalid)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Runner, ensure_importable, worker_env  # noqa: E402
from kinds import KINDS  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("kind", choices=sorted(KINDS))
    p.add_argument("--seed", type=int, action="append", help="run only these case seeds")
    p.add_argument("--first", type=int, default=0, help="seed of the first case")
    p.add_argument("--cases", type=int, default=400)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per case")
    p.add_argument("--time-budget", type=float, default=None, help="seconds in all")
    p.add_argument("--show", type=int, default=20, help="failures printed in full")
    args = p.parse_args(argv)
    ensure_importable()
    seeds = args.seed or range(args.first, args.first + args.cases)
    runner = Runner(args.kind, args.workers, args.timeout, worker_env())

    def progress(rep):
        print(f"\r{rep.summary()}", end="", file=sys.stderr, flush=True)

    report = runner.run(seeds, time_budget=args.time_budget, progress=progress)
    print(file=sys.stderr)
    print(report.summary())
    shown = [o for o in report.outcomes if args.seed or o.category == "known"]
    failures = report.failures()
    shown += [o for o in failures[: args.show] if o not in shown]
    for o in shown:
        print(report.describe(o))
    if len(failures) > args.show:
        print(f"... and {len(failures) - args.show} more failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
