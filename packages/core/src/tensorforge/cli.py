"""The ``tforge`` command.

``tforge plugins``, ``targets``, ``compile``, ``run``, ``inspect``, ``bench`` and ``tune``: each
is a function ``add_<name>(subparsers)`` that sets ``func``.
Errors print one paragraph and exit 1 (2 for usage errors); ``--debug`` shows the traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
import warnings
from collections.abc import Sequence
from typing import Any

from tensorforge._version import __version__
from tensorforge.errors import TensorforgeError
from tensorforge.text import HelpFormatter, plural, wrap

__all__ = ["main"]


def _registry():
    from tensorforge.plugins import get_registry

    return get_registry()


# -- tforge plugins -----------------------------------------------------------------------------
def add_plugins(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plugins", help="list installed plugins, what they register, load errors",
                       description="List every plugin found through the `tensorforge` entry "
                       "points, with its distribution, version, what it registers and any error.")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--strict", action="store_true", help="exit 1 if any plugin failed to load")
    p.set_defaults(func=run_plugins)


def run_plugins(args: argparse.Namespace) -> int:
    from tensorforge.plugins.loader import ENV_DISABLE, ENV_SELECT
    from tensorforge.plugins.registry import PluginLoadWarning
    from tensorforge.plugins.status import plugin_readiness, target_status

    with warnings.catch_warnings():  # failures are part of this report
        warnings.simplefilter("ignore", PluginLoadWarning)
        registry = _registry()
        plugins = registry.plugins
    env = {k: os.environ[k] for k in (ENV_SELECT, ENV_DISABLE) if k in os.environ}
    failed = [p for p in plugins if p.status == "failed"]
    if args.json:
        docs = []
        for p in plugins:
            d = p.to_dict()
            d["readiness"] = plugin_readiness(p, registry)
            d["targets"] = {n: {"state": st.state, "detail": st.detail}
                            for n in p.registered.get("targets", [])
                            if (k := registry.targets.get(n)) is not None
                            for st in [target_status(k)]}
            docs.append(d)
        doc = {"tensorforge": __version__, "environment": env, "plugins": docs}
        print(json.dumps(doc, indent=2))
    else:
        counts = {s: sum(p.status == s for p in plugins) for s in ("loaded", "failed", "disabled")}
        print(f"tensorforge {__version__}: {plural(len(plugins), 'plugin')}, "
              + ", ".join(f"{n} {s}" for s, n in counts.items()))
        for key, value in env.items():
            print(f"  {key}={value!r}")
        for p in sorted(plugins, key=lambda p: p.name):
            dist = f"{p.distribution} {p.version or ''}".strip() if p.distribution else "-"
            print(f"\n{p.name:<12} {dist:<36} {plugin_readiness(p, registry)}")
            for table, names in p.registered.items():
                print(_wrap(f"{table.replace('_', ' ')}: {', '.join(names)}"))
            lazy = [h for h in p.hooks if h in ("register_strategies", "register_intrinsics",
                                                "register_passes")]
            if lazy:
                print(_wrap(f"per-target hooks: {', '.join(lazy)}"))
            if p.error and p.status != "disabled":
                print(_wrap(("error: " if p.status == "failed" else "note: ") + p.error))
            for w in p.warnings:
                print(_wrap("warning: " + w))
        if not plugins:
            from tensorforge.plugins.known import install_hint

            print("\nNo plugins found. Install some, e.g.: "
                  + install_hint(("tensorforge-target-llvm", "llvm")))
    return 1 if (args.strict and failed) else 0


# -- tforge targets -----------------------------------------------------------------------------
def add_targets(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("targets", help="list target kinds and tags, or resolve one target",
                       description="List installed target kinds (with their options) and tags. "
                       "Given TARGET (e.g. 'llvm' or 'amd/zen3 -num-threads=4'), show all of "
                       "its options as resolved on this machine.")
    p.add_argument("target", nargs="?", help="a target string or tag to resolve")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run_targets)


def run_targets(args: argparse.Namespace) -> int:
    from tensorforge.plugins.status import target_status
    from tensorforge.target import Target

    registry = _registry()
    if args.target:
        t = Target.parse(args.target)
        if args.json:
            print(json.dumps(t.to_dict(), indent=2))
        else:
            print(f"{t}\n  kind: {t.kind.name} ({t.device_type}, from {t.kind.distribution}): "
                  f"{target_status(t.kind)}")
            for k, v in t.options.items():
                origin = "given" if k in t.explicit else "default or detected"
                print(wrap(f"-{k}={v}  ({origin})", 100, "  ", "      "))
        return 0
    if args.json:
        doc: dict[str, Any] = {
            "targets": [{"name": k.name, "device_type": k.device_type, "keys": list(k.keys),
                         "distribution": k.distribution, "description": k.description,
                         "status": target_status(k).state, "status_detail": str(target_status(k)),
                         "options": {n: {"type": o.type.__name__, "default": o.default,
                                         "help": o.help} for n, o in k.options.items()}}
                        for k in registry.targets.values()],
            "tags": [{"name": t.name, "config": t.config, "description": t.description,
                      "distribution": t.distribution} for t in registry.target_tags.values()],
        }
        print(json.dumps(doc, indent=2))
        return 0
    print("Target kinds:")
    for k in sorted(registry.targets.values(), key=lambda k: k.name):
        print(f"  {k.name:<8} {k.device_type:<7} {str(target_status(k)):<32} {k.distribution}")
        if k.description:
            print(_wrap(k.description))
        for n, o in k.options.items():
            opt = f"      -{n}=<{o.type.__name__}>"
            print(wrap(f"{opt:<40} {o.help} (default {o.default!r})", 100, "", " " * 41))
    if not registry.targets:
        from tensorforge.plugins.known import install_hint

        print(f"  (none; {install_hint(('tensorforge-target-llvm', 'llvm'))})")
    print("\nTags:")
    for t in sorted(registry.target_tags.values(), key=lambda t: t.name):
        print(wrap(f"  {t.name:<22} {t.config:<52} {t.description}", 100, "", " " * 25))
    if not registry.target_tags:
        print("  (none)")
    return 0


# -- tforge compile / run / inspect ------------------------------------------------------------
def _shapes(items: Sequence[str] | None) -> dict[str, tuple[int, ...]] | None:
    """`name=1,3,224,224` options as {name: shape}."""
    if not items:
        return None
    out = {}
    for item in items:
        name, sep, dims = item.partition("=")
        try:
            if not sep or not name:
                raise ValueError
            out[name] = tuple(int(d) for d in dims.split(",") if d.strip())
        except ValueError:
            raise TensorforgeError(f"--input-shape {item!r}: write NAME=D0,D1,... (e.g. "
                                   "input=1,3,224,224)") from None
    return out


MODEL_HELP = ("model file (its suffix picks the frontend: .onnx, .pb, .keras, .h5) or "
              "SavedModel directory")


def add_model_format(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model-format", metavar="NAME",
                   help="the frontend that reads MODEL (onnx, tensorflow, ...) when its suffix "
                   "does not say")


def add_compile(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compile", help="compile a model into a .tfpkg package",
                       description="Compile MODEL (e.g. model.onnx) for TARGET into one .tfpkg "
                       "file that `tforge run` and tensorforge.load() run without the compiler.")
    p.add_argument("model", help=MODEL_HELP)
    p.add_argument("--target", default="llvm", help="target string or tag (default: llvm)")
    p.add_argument("-o", "--output", required=True, help="the package to write (.tfpkg)")
    p.add_argument("--input-shape", action="append", metavar="NAME=D0,D1,...",
                   help="fix the shape of an input (repeatable)")
    add_model_format(p)
    p.add_argument("--opt-level", type=int, default=3, choices=range(4),
                   help="0 disables folding and fusion (default 3)")
    p.add_argument("--tuning-db", metavar="DB", help="apply the best records of `tforge tune`")
    p.set_defaults(func=run_compile)


def run_compile(args: argparse.Namespace) -> int:
    import time

    import tensorforge
    from tensorforge.progress import NullProgress, StageProgress
    from tensorforge.runtime.files import refuse_overwrite

    refuse_overwrite(args.output, [args.model, args.tuning_db], "output (-o)")
    t0 = time.perf_counter()
    progress = NullProgress() if args.quiet else StageProgress(sys.stderr, verbose=args.verbose)
    model = tensorforge.compile(args.model, target=args.target,
                                input_shapes=_shapes(args.input_shape), opt_level=args.opt_level,
                                tuning_db=args.tuning_db, progress=progress,
                                model_format=args.model_format)
    progress.stage("export")
    path = model.export(args.output)
    progress.finish()
    if args.quiet:
        return 0
    mem = model.desc["memory"]
    print(f"compiled {args.model} for {model.desc['target']} in "
          f"{time.perf_counter() - t0:.2f} s: {plural(len(model.kernels), 'kernel')}, "
          f"intermediate memory {mem['planned_bytes']} bytes (without reuse "
          f"{mem['unplanned_bytes']}), params {mem['params_bytes']} bytes -> {path}")
    tuning = model.desc.get("tuning")
    if tuning:
        print(f"tuning records of {tuning['db']}: {plural(len(tuning['applied']), 'task')} "
              f"tuned, {len(tuning['missing'])} without records")
    return 0


def add_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a .tfpkg package, or compile and run a model",
                       description="Run a package written by `tforge compile`, or a model file "
                       "(compiled in memory for --target). Inputs come from .npy files (--input "
                       "name=file.npy); --fill random makes up the others. --verify compares "
                       "every fused kernel with the numpy reference interpreter and names the "
                       "first one that diverges.")
    p.add_argument("package", metavar="PACKAGE|MODEL", help="a .tfpkg file or a model file")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="an input from a .npy file (repeatable)")
    p.add_argument("--fill", choices=["random", "zeros"],
                   help="fill inputs not given with random values or zeros")
    p.add_argument("--output", metavar="DIR", help="write each output to DIR/<name>.npy")
    p.add_argument("--print-time", action="store_true", help="time the model (see --repeat)")
    p.add_argument("--repeat", type=int, default=10, help="timed runs for --print-time")
    p.add_argument("--target", default="llvm", help="target for a model file (default: llvm)")
    p.add_argument("--verify", action="store_true",
                   help="check each fused kernel against the reference interpreter (inputs not "
                   "given are random); for a package, give its model with --model")
    p.add_argument("--model", metavar="MODEL", help="with --verify on a package: the model file "
                   "it was compiled from (the reference needs the graph)")
    p.set_defaults(func=run_run)


def _read_inputs(items: Sequence[str]) -> dict[str, Any]:
    import numpy as np

    inputs: dict[str, Any] = {}
    for item in items:
        name, sep, file = item.partition("=")
        if not sep or not name or not file:
            raise TensorforgeError(f"--input {item!r}: write NAME=FILE.npy")
        try:
            inputs[name] = np.load(file, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise TensorforgeError(f"--input {name}: cannot read {file!r}: {exc}") from None
    return inputs


def _write_outputs(args: argparse.Namespace, model: Any, outputs: list[Any]) -> None:
    """Each output to DIR/<name>.npy, whole or not at all, never over an input file."""
    import numpy as np

    from tensorforge.runtime.files import atomic_output, refuse_overwrite

    os.makedirs(args.output, exist_ok=True)
    sources = [args.package, args.model] + [i.partition("=")[2] for i in args.input]
    for spec, out in zip(model.output_specs, outputs):
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in spec["name"])
        path = os.path.join(args.output, f"{safe}.npy")
        refuse_overwrite(path, sources, f"output file for {spec['name']!r}")
        try:
            with atomic_output(path) as tmp, open(tmp, "wb") as f:
                np.save(f, out)
        except OSError as e:
            raise TensorforgeError(f"cannot write {path!r}: {e.strerror or e}") from None
        print(f"{spec['name']}: {out.dtype}{list(out.shape)} -> {path}")


def run_run(args: argparse.Namespace) -> int:
    import numpy as np

    import tensorforge
    from tensorforge.runtime.package_info import is_package

    packaged = is_package(args.package)
    if args.model and not (packaged and args.verify):
        raise TensorforgeError("--model is for --verify on a package (the model file it was "
                               "compiled from)")
    if args.verify and packaged and not args.model:
        raise TensorforgeError(
            "--verify needs the graph, which a package does not hold (native code, the "
            "executor's description and the constants): give the model file it was compiled "
            "from with --model, or run the model itself: tforge run MODEL --verify")
    if packaged:
        model = tensorforge.load(args.package)
    else:
        if not os.path.exists(args.package):
            raise TensorforgeError(f"{args.package!r}: no such file")
        model = tensorforge.compile(args.package, target=args.target)
    inputs = _read_inputs(args.input)
    if args.fill or args.verify:
        made = model.random_inputs()
        missing = [s["name"] for s in model.input_specs if s["name"] not in inputs]
        for name in missing:
            x = made[name]
            inputs[name] = x if args.fill != "zeros" else np.zeros_like(x)
        if args.verify and missing and not args.fill:
            print(f"inputs not given ({', '.join(missing)}): random, seed 0")
    missing_specs = [s for s in model.input_specs if s["name"] not in inputs]
    names = {s["name"] for s in model.input_specs}
    if missing_specs and set(inputs) <= names:  # (a wrong name: the runtime lists the right ones)
        need = ", ".join(f"{s['name']!r} ({s['dtype']}{list(s['shape'])})" for s in missing_specs)
        raise TensorforgeError(f"missing input(s) {need}: pass --input "
                               f"{missing_specs[0]['name']}=FILE.npy, or --fill random to make "
                               "them up")
    if args.verify:
        from tensorforge.compiler.verify import verify_model

        report, _ = verify_model(args.model or args.package, compiled=model, inputs=inputs)
        print("\n".join(report.lines()))
        if not report.ok:
            return 1
    outputs = model.run(inputs)
    if args.output:
        _write_outputs(args, model, outputs)
    else:
        for spec, out in zip(model.output_specs, outputs):
            flat = ", ".join(f"{v:.6g}" for v in out.reshape(-1)[:8].tolist())
            more = ", ..." if out.size > 8 else ""
            print(f"{spec['name']}: {out.dtype}{list(out.shape)} [{flat}{more}]")
    if args.print_time:
        print(f"time: {model.benchmark(inputs, repeat=args.repeat)}")
    return 0


def add_inspect(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("inspect", help="show a model's ops, fused groups and memory plan, or "
                       "what a package holds",
                       description="Load MODEL, run the graph passes and show its ops with "
                       "counts, inputs and outputs, the fused groups (one kernel each), ops the "
                       "frontend or compiler cannot handle, and the memory plan. Given a .tfpkg "
                       "PACKAGE: its format version, target, the CPU features it needs, its "
                       "kernels and its parameters by size (nothing of it runs).")
    p.add_argument("model", metavar="MODEL|PACKAGE",
                   help=f"{MODEL_HELP}, or .tfpkg package")
    p.add_argument("--target", default=None, help="target for target-driven passes (layout)")
    p.add_argument("--input-shape", action="append", metavar="NAME=D0,D1,...",
                   help="fix the shape of an input (repeatable)")
    add_model_format(p)
    p.add_argument("--opt-level", type=int, default=3, choices=range(4))
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run_inspect)


def _unsupported(model: str, model_format: str | None = None) -> list[str] | None:
    """Ops of `model` the frontend cannot convert, if it can tell (`unsupported_ops(path)`)."""
    from tensorforge.plugins.descriptors import load_ref

    reg = _registry()
    fe = reg.frontends.get(model_format) if model_format else reg.frontend_for(model)
    if fe is None:
        return None
    try:
        fn = load_ref(fe.load.partition(":")[0] + ":unsupported_ops")
    except TensorforgeError:
        return None
    found = fn(model)
    return sorted(found) if found is not None else None


def inspect_report(model: str, target: Any = None, input_shapes: Any = None,
                   opt_level: int = 3, model_format: str | None = None) -> dict[str, Any]:
    from tensorforge.compiler import load_graph, plan
    from tensorforge.compiler.compile import placement_report
    from tensorforge.graph import get_op

    unsupported = _unsupported(model, model_format)
    if unsupported:
        return {"model": model, "unsupported_ops": unsupported}
    graph = load_graph(model, input_shapes, model_format)
    p = plan(graph, target, opt_level=opt_level)
    no_compute = sorted({n.op for n in p.graph.nodes if get_op(n.op).compute is None})

    def spec(v: Any) -> dict[str, Any]:
        return {"name": v.name, "shape": list(v.shape), "dtype": v.dtype}

    return {
        "model": model, "name": graph.name,
        "inputs": [spec(v) for v in graph.inputs], "outputs": [spec(v) for v in graph.outputs],
        "ops": dict(sorted(graph.op_counts().items())),
        "ops_after_passes": dict(sorted(p.graph.op_counts().items())),
        "params": len(p.graph.constants()),
        "params_bytes": int(sum(v.nbytes for v in p.graph.constants())),
        "unsupported_ops": unsupported or [], "ops_without_compute": no_compute,
        "groups": [{"name": g.name, "ops": [n.op for n in g.nodes], "master": g.master.op,
                    "pattern": g.pattern.name, "output": spec(g.outputs[0]),
                    **({"device": p.device_of(g)} if p.placement is not None else {})}
                   for g in p.groups],
        "memory": {"storages": len(p.memory.storage_bytes),
                   "peak_bytes": p.memory.planned_bytes,
                   "no_reuse_bytes": p.memory.unplanned_bytes()},
        **({"placement": placement_report(p)} if p.placement is not None else {}),
    }


def _print_placement(pl: dict[str, Any]) -> None:
    kernels = ", ".join(f"{dev} {n}" for dev, n in pl["kernels"].items())
    print(f"\nplacement: target {pl['target']}, host {pl['host']} (kernels: {kernels})")
    for f in pl["fallbacks"]:
        print(f"  on the host: {f['node']} ({f['op']}): {f['why']}")
    runs = [c for c in pl["copies"] if c["when"].startswith("every run")]
    print(f"copies between devices: {len(runs)} every run "
          f"({sum(c['bytes'] for c in runs)} bytes), "
          f"{len(pl['copies']) - len(runs)} once at load")
    for c in pl["copies"]:
        print(f"  {c['value']}: {c['from']} -> {c['to']}, {c['bytes']} bytes, {c['when']}")


def run_inspect(args: argparse.Namespace) -> int:
    from tensorforge.runtime.package_info import format_report, is_package, package_report
    from tensorforge.target import Target

    if is_package(args.model):
        report = package_report(args.model)
        print(json.dumps(report, indent=2) if args.json else "\n".join(format_report(report)))
        return 0

    target = Target.parse(args.target) if args.target else None
    r = inspect_report(args.model, target, _shapes(args.input_shape), args.opt_level,
                       args.model_format)
    if args.json:
        print(json.dumps(r, indent=2))
        return 0 if "inputs" in r else 1
    if "inputs" not in r:
        print(_wrap(f"{args.model}: the frontend cannot convert these ops: "
                    f"{', '.join(r['unsupported_ops'])}"))
        return 1
    print(f"{r['model']} ({r['name']})")
    for key in ("inputs", "outputs"):
        for v in r[key]:
            print(f"  {key[:-1]:<6} {v['name']}: {v['dtype']}{v['shape']}")
    print(f"\nops ({sum(r['ops'].values())}): "
          + ", ".join(f"{k} x{n}" for k, n in r["ops"].items()))
    print(f"after graph passes ({sum(r['ops_after_passes'].values())}): "
          + ", ".join(f"{k} x{n}" for k, n in r["ops_after_passes"].items()))
    print(f"params: {r['params']} tensors, {r['params_bytes']} bytes")
    if r["ops_without_compute"]:
        print(_wrap("ops the compiler cannot generate code for yet: "
                    + ", ".join(r["ops_without_compute"])))
    print(f"\nfused groups ({len(r['groups'])} kernels):")
    for g in r["groups"]:
        out = g["output"]
        where = f" [{g['device']}]" if "device" in g else ""
        print(f"  {g['name']:<36} {'+'.join(g['ops']):<40} {g['pattern']:<20} "
              f"-> {out['dtype']}{out['shape']}{where}")
    if "placement" in r:
        _print_placement(r["placement"])
    m = r["memory"]
    saved = 1 - m["peak_bytes"] / m["no_reuse_bytes"] if m["no_reuse_bytes"] else 0.0
    print(f"\nmemory plan: {m['storages']} storages, {m['peak_bytes']} bytes for intermediate "
          f"values ({m['no_reuse_bytes']} without reuse, {saved:.0%} saved)")
    return 0


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

    from tensorforge.bench import ALL_MODELS, BenchConfig, run
    from tensorforge.bench import families as fam

    def items(text: str | None) -> list[str]:
        return [t.strip() for t in (text or "").split(",") if t.strip()]

    models = items(args.models)
    if args.families:
        if not fam.available():
            raise TensorforgeError(f"--families: no model is exported to {fam.cache_dir()}; "
                                   "run benchmarks/export_torchvision.py (needs torch)")
        models = [m for m in (models or list(ALL_MODELS)) if m != "none"] + list(
            fam.available())
    unknown = [m for m in models if m not in ALL_MODELS and m != "none"
               and fam.family_path(m) is None]
    bases = items(args.baselines)
    from tensorforge.bench.baselines import BASELINES

    if unknown or not set(bases) <= set(BASELINES):
        raise TensorforgeError(f"unknown model(s) {unknown} (known: {', '.join(ALL_MODELS)})"
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
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=run_tune)


def run_tune(args: argparse.Namespace) -> int:
    import math

    from tensorforge.autotune.report import summary_lines
    from tensorforge.autotune.tune_model import parse_duration, tune_model

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
    if res.plot:
        print(f"tuning curves: {res.plot}")
    return 0


COMMANDS = (add_plugins, add_targets, add_compile, add_run, add_inspect, add_bench, add_tune)


def _wrap(text: str) -> str:
    return wrap(text, 100, "    ", "      ")


def _global_flags(parser: argparse.ArgumentParser, suppress: bool) -> None:
    """--debug, --quiet, --verbose: on the main parser (with defaults) and on every
    subcommand (defaults suppressed, so `tforge compile --debug` and `tforge --debug compile`
    both work and neither position resets the other)."""
    default = {"default": argparse.SUPPRESS} if suppress else {}
    g = parser.add_argument_group("global options")
    g.add_argument("--debug", action="store_true", help="show tracebacks of errors", **default)
    g.add_argument("-q", "--quiet", action="store_true", help="print only results and errors",
                   **default)
    g.add_argument("-v", "--verbose", action="store_true",
                   help="show progress and timing of each stage even when not on a terminal",
                   **default)


class _SubParser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        _global_flags(self, suppress=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tforge", description="tensorforge: a deep-learning compiler.",
        formatter_class=HelpFormatter,
        epilog="Environment: TENSORFORGE_PLUGINS=a,b loads only those plugins ('none': none); "
        "TENSORFORGE_DISABLE_PLUGINS=a,b skips those.")
    parser.add_argument("--version", action="version", version=f"tensorforge {__version__}")
    _global_flags(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True,
                                parser_class=_SubParser)
    for add in COMMANDS:
        add(sub)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"tforge: warning: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    warnings.showwarning = _show_warning
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # `tforge ... | head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("tforge: interrupted", file=sys.stderr)
        return 130
    except TensorforgeError as exc:
        if args.debug:
            traceback.print_exc()
        print(wrap(f"tforge: error: {exc}"), file=sys.stderr)
        return 1
    except Exception as exc:  # a bug: say so, briefly
        if args.debug:
            traceback.print_exc()
        else:
            print(f"tforge: internal error: {type(exc).__name__}: {exc}\n"
                  "Run again with --debug for the traceback.", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
