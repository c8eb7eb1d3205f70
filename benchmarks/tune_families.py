"""Tune each torchvision family model (issue 15) with `tforge tune` into its own database,
for `families_vs_ort.py --tuned DIR`.

    python benchmarks/tune_families.py --budget 10m --out benchmarks/.models/tuned
    python benchmarks/families_vs_ort.py --threads 1 --rounds 11 --fifo \\
        --tuned benchmarks/.models/tuned

Each model runs `tforge tune MODEL --target T --time-budget B --db OUT/<model>.db` in its own
process (what a user runs), one after another; a database that exists is resumed, as the CLI
does. The wall time of each run (extracting the tasks included) and the CLI's closing line
(trials, estimated kernel latency default -> tuned; the tasks confirmed) go to OUT/summary.md."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from families_vs_ort import CACHE, ORDER  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="", help="comma list (default: every exported model)")
    ap.add_argument("--budget", default="10m", help="--time-budget per model (default 10m)")
    ap.add_argument("--target", default="llvm -num-threads=1")
    ap.add_argument("--out", default=str(CACHE / "tuned"), help="folder of the databases")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = args.models.split(",") if args.models else ORDER
    lines = [f"`tforge tune --target {args.target!r} --time-budget {args.budget}` per model",
             "", "| model | wall s | closing line |", "|---|---|---|"]
    for name in names:
        model = CACHE / f"{name}.onnx"
        if not model.exists():
            print(f"skip {name}: no {model} (benchmarks/export_torchvision.py)", flush=True)
            continue
        cmd = [sys.executable, "-m", "tensorforge.cli", "tune", str(model), "--target",
               args.target, "--time-budget", args.budget, "--db", str(out / f"{name}.db"),
               "--progress", "plain", "--no-plot"]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        (out / f"{name}.log").write_text(proc.stdout + proc.stderr)
        closing = [ln for ln in proc.stdout.splitlines() if ln.startswith(("stopped",
                                                                             "confirmed"))]
        last = "; ".join(closing) if closing else \
            f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}"
        lines.append(f"| {name} | {wall:.0f} | {last} |")
        print(lines[-1], flush=True)
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
