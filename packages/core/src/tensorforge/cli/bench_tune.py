"""``tforge bench`` (the benchmark suite, ``tensorforge.bench``) and ``tforge tune`` (a model's
kernels into a records database)."""

from __future__ import annotations

import argparse
import sys

from tensorforge.cli.common import _shapes
from tensorforge.errors import TensorforgeError
from tensorforge.text import plural


# -- tforge bench -------------------------------------------------------------------------------
def add_bench(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="benchmark operators and models against ONNX Runtime, "
                       "PyTorch, TensorFlow, TF-XLA and the FMA peak",
                       description="Run the benchmark suite (tensorforge.bench): every distinct "
                       "conv2d/depthwise/dense shape of ResNet-18 and MobileNetV2 (GFLOP/s, % of "
                       "the FMA peak) and whole models at batch 1, each against ONNX Runtime, "
                       "PyTorch, TensorFlow and TF-XLA when installed, interleaved in this "
                       "process. Writes Markdown, JSON and a PNG chart to the results folder and "
                       "flags ratios that fell by more than 10% from the baseline JSON (default: "
                       "the previous latest.json).")
    p.add_argument("--quick", action="store_true",
                   help="one workload per op kind and the DQN, 1 thread, 5 rounds")
    p.add_argument("--models", help="comma list of models (default: all six; 'none': no models)")
    p.add_argument("--families", action="store_true",
                   help="add the torchvision model families exported to the model cache "
                   "($TENSORFORGE_MODEL_CACHE or benchmarks/.models; see "
                   "benchmarks/export_torchvision.py)")
    p.add_argument("--transformers", action="store_true",
                   help="add the zoo's BERT-like, GPT-2-like and ViT-B/16 at full size (also "
                   "benchmarks/transformers_vs_ort.py: sequence lengths, torch exports)")
    p.add_argument("--threads", help="comma list of thread counts (default 1,2)")
    p.add_argument("--rounds", type=int, help="interleaved rounds per case (default 15)")
    p.add_argument("--no-ops", action="store_true", help="skip the operator level")
    p.add_argument("--ops-filter", metavar="TEXT", help="only workloads whose name contains TEXT")
    p.add_argument("--baselines", default="ort,torch,tf,tf-xla",
                   help="comma list among ort,torch,tf,tf-xla (default all; missing ones are "
                   "skipped; TensorFlow runs at the first thread count only: its thread pool "
                   "is fixed once it starts)")
    p.add_argument("--output", metavar="DIR", help="results folder (default "
                   "benchmarks/results in the repository, else ./tforge-bench-results)")
    p.add_argument("--bench-baseline", metavar="JSON",
                   help="compare with this JSON instead of the previous latest.json")
    p.add_argument("--fail-on-regression", action="store_true",
                   help="exit 3 when a ratio regressed (default: report only)")
    p.set_defaults(func=run_bench)


def run_bench(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tensorforge.bench import ALL_MODELS, TRANSFORMER_MODELS, BenchConfig, run
    from tensorforge.bench import families as fam

    def items(text: str | None) -> list[str]:
        return [t.strip() for t in (text or "").split(",") if t.strip()]

    models = items(args.models)
    if args.transformers:
        models = [m for m in (models or list(ALL_MODELS)) if m != "none"] + [
            m for m in TRANSFORMER_MODELS if m not in models]
    if args.families:
        if not fam.available():
            raise TensorforgeError(f"--families: no model is exported to {fam.cache_dir()}; "
                                   "run benchmarks/export_torchvision.py (needs torch)")
        models = [m for m in (models or list(ALL_MODELS)) if m != "none"] + list(
            fam.available())
    unknown = [m for m in models if m not in ALL_MODELS + TRANSFORMER_MODELS and m != "none"
               and fam.family_path(m) is None]
    bases = items(args.baselines)
    from tensorforge.bench.baselines import BASELINES

    if unknown or not set(bases) <= set(BASELINES):
        raise TensorforgeError(f"unknown model(s) {unknown} (known: "
                               f"{', '.join(ALL_MODELS + TRANSFORMER_MODELS)})"
                               if unknown else f"--baselines {args.baselines!r}: use "
                               f"{', '.join(BASELINES)}")
    try:
        threads = tuple(int(t) for t in items(args.threads)) or None
    except ValueError:
        raise TensorforgeError(f"--threads {args.threads!r}: write counts like 1,2") from None
    cfg = BenchConfig(models=tuple(m for m in models if m != "none") or None,
                      e2e=models != ["none"], threads=threads, rounds=args.rounds,
                      ops=not args.no_ops, quick=args.quick, op_filter=args.ops_filter,
                      baselines=tuple(bases), baseline_json=args.bench_baseline,
                      command="tforge " + " ".join(sys.argv[1:]))
    if args.output:
        cfg.results = Path(args.output)
    out = run(cfg, log=lambda line: print(line, flush=True))
    return 3 if out["regressions"] and args.fail_on_regression else 0


# -- tforge tune --------------------------------------------------------------------------------
def add_tune(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tune", help="tune a model's kernels into a records database",
                       description="Extract the tuning tasks of MODEL (one per distinct fused "
                       "kernel, weighted by how often it runs), measure configs of each on this "
                       "machine and record them in --db; a task scheduler spends the budget "
                       "where the estimated end-to-end latency gains most. Every record is "
                       "committed at once: run again to resume. Then `tforge compile MODEL "
                       "--tuning-db DB` (or tensorforge.compile(..., tuning_db=DB)).")
    p.add_argument("model", help="model file (its suffix picks the frontend)")
    p.add_argument("--target", default="llvm", help="target string or tag (default: llvm)")
    p.add_argument("--trials", type=int, default=None,
                   help="new trials over all tasks; records of earlier runs are used, not "
                   "repeated, and reported apart (default: until the time budget or every "
                   "space is measured)")
    p.add_argument("--db", default="tuning.db", help="records database (default tuning.db)")
    p.add_argument("--tuner", default="xgb", help="xgb, ga, random, grid, ridge or a "
                   "plugin's tuner (default xgb)")
    p.add_argument("--time-budget", metavar="DURATION", help="stop after e.g. 600, 20s, 10m, 1h")
    p.add_argument("--executor", default="local", metavar="local|ray|ray://ADDRESS",
                   help="where candidates are built and run (default local processes)")
    p.add_argument("--early-stopping", type=int, metavar="N",
                   help="drop a task after N trials without improvement")
    p.add_argument("--batch-size", type=int, default=8, help="trials per round (default 8)")
    p.add_argument("--input-shape", action="append", metavar="NAME=D0,D1,...",
                   help="fix the shape of an input (repeatable)")
    p.add_argument("--progress", choices=["auto", "rich", "plain", "none"], default="auto",
                   help="live display (default: rich on a terminal, else a line per round)")
    p.add_argument("--plot", metavar="PNG", help="tuning curves here (default <db>-curves.png)")
    p.add_argument("--no-plot", action="store_true", help="do not write the tuning curves")
    p.add_argument("--no-cache-flush", action="store_true",
                   help="time CPU candidates back to back with warm caches (default: every "
                   "timed call starts with the caches swept, as inside a model)")
    p.add_argument("--no-confirm", action="store_true",
                   help="use each task's best record as timed in the search (default: the "
                   "best configs are timed again beside the default first; docs/tuning.md)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=run_tune)


def run_tune(args: argparse.Namespace) -> int:
    import math

    from tensorforge.autotune.report import summary_lines
    from tensorforge.autotune.tune_tasks import parse_duration
    from tensorforge.compiler.model_tuning import tune_model

    try:
        budget = parse_duration(args.time_budget)
    except ValueError as exc:
        raise TensorforgeError(f"--time-budget: {exc}") from None
    if args.trials is None and budget is None:
        print("tforge tune: no --trials or --time-budget: tuning until every config of every "
              "task is measured (Ctrl-C stops; the records are kept)", file=sys.stderr)
    if not (args.executor in ("local", "ray") or args.executor.startswith("ray://")):
        raise TensorforgeError(f"--executor {args.executor!r}: use local, ray or ray://ADDRESS")
    res = tune_model(args.model, args.target, db=args.db, n_trials=args.trials,
                     tuner=args.tuner, time_budget=budget, early_stopping=args.early_stopping,
                     executor=args.executor, batch_size=args.batch_size,
                     input_shapes=_shapes(args.input_shape),
                     progress="none" if args.quiet else args.progress,
                     plot=False if args.no_plot else (args.plot or True), seed=args.seed,
                     cache_flush=not args.no_cache_flush, confirm=not args.no_confirm,
                     log=(lambda line: None) if args.quiet else
                     (lambda line: print(line, flush=True)))
    if not args.quiet:
        print("\n".join(summary_lines(res.states)))
    errs = ", ".join(f"{k} {n}" for k, n in sorted(res.errors.items()))
    extra = [errs] if errs else []
    if res.duplicates:
        extra.append(f"{res.duplicates} measured twice, kept once")
    detail = f" ({'; '.join(extra)})" if extra else ""
    earlier = f", {plural(res.earlier, 'earlier record')} used" if res.earlier else ""
    measured = sum(math.isfinite(st.default_cost) for st in res.states)
    part = (f" ({measured} of {plural(len(res.states), 'task')} measured)"
            if measured < len(res.states) else "")
    print(f"stopped ({res.stopped}) after {res.elapsed:.0f} s: "
          f"{plural(res.new_trials, 'new trial')}{detail}{earlier}; estimated latency of the "
          f"tuned kernels{part} {res.latency_default * 1e3:.3f} ms -> "
          f"{res.latency_tuned * 1e3:.3f} ms")
    if res.confirmed is not None:
        print(res.confirmed.line())
    if res.plot:
        print(f"tuning curves: {res.plot}")
    return 0
