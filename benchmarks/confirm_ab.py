"""Tuned as searched vs confirmed (docs/tuning.md, "Confirmation"): each model of a
`tune_families.py` folder compiled untuned, with its database, and with a copy of the
database whose best configs were timed again beside the default, timed in one process.

    python benchmarks/confirm_ab.py --tuned DIR [--models resnet50,densenet121] [--rounds 9]

The copies go to DIR/confirmed/ (made once: an existing copy is reused). Each round times
every compilation 5 times, the three in rotating order; the figures are medians, with the
ratios to the untuned time."""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from families_vs_ort import CACHE, ORDER  # noqa: E402

TARGET = "llvm -num-threads=1"


def confirmed_copy(name: str, tuned: Path) -> Path:
    """DIR/confirmed/<name>.db: the model's database with its best configs confirmed."""
    from tensorforge.autotune.confirm import confirm_best
    from tensorforge.autotune.database import Database
    from tensorforge.autotune.tune_tasks import make_measurer
    from tensorforge.compiler.model_tuning import extract_tasks

    out = tuned / "confirmed" / f"{name}.db"
    if out.exists():
        return out
    out.parent.mkdir(exist_ok=True)
    tmp = out.with_suffix(".partial")
    shutil.copy(tuned / f"{name}.db", tmp)
    db, m = Database(tmp), make_measurer(cache_flush=True)
    t0 = time.monotonic()
    try:
        s = confirm_best(extract_tasks(str(CACHE / f"{name}.onnx"), TARGET), db, m)
    finally:
        m.close()
        db.close()
    tmp.rename(out)
    print(f"{name}: {s.line()} in {time.monotonic() - t0:.0f} s", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    import tensorforge

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tuned", required=True, help="folder of <model>.db (tune_families.py)")
    ap.add_argument("--models", default="", help="comma list (default: every database)")
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args(argv)
    tuned = Path(args.tuned)
    names = args.models.split(",") if args.models else [
        n for n in ORDER if (tuned / f"{n}.db").exists()]
    print("| model | untuned ms | tuned / untuned | confirmed / untuned |\n|---|---|---|---|")
    for name in names:
        path = str(CACHE / f"{name}.onnx")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ms = {"untuned": tensorforge.compile(path, TARGET),
                  "tuned": tensorforge.compile(path, TARGET, tuning_db=tuned / f"{name}.db"),
                  "confirmed": tensorforge.compile(path, TARGET,
                                                   tuning_db=confirmed_copy(name, tuned))}
        x = ms["untuned"].random_inputs()
        ref = ms["untuned"].run(x)[0]
        for k, m in ms.items():  # the same model whatever the configs
            err = float(np.abs(m.run(x)[0] - ref).max() / np.abs(ref).max())
            assert err <= 1e-4, f"{name} {k}: max relative error {err:.2g}"
        keys, times = list(ms), {k: [] for k in ms}
        for r in range(args.rounds):
            for k in keys[r % 3:] + keys[:r % 3]:
                for _ in range(5):
                    t0 = time.perf_counter()
                    ms[k].run(x)
                    times[k].append(time.perf_counter() - t0)
        med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        print(f"| {name} | {med['untuned']:.2f} | {med['tuned'] / med['untuned']:.3f} | "
              f"{med['confirmed'] / med['untuned']:.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
