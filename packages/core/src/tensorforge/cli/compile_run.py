"""``tforge compile`` (a model into a .tfpkg) and ``tforge run`` (a package, or a model compiled
in memory; ``--verify``)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from tensorforge.cli.common import MODEL_HELP, _shapes, add_model_format
from tensorforge.errors import TensorforgeError
from tensorforge.text import plural


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
        how = ("ahead-of-time entry" if model.executor_kind == "aot" else
               f"graph executor: {model.executor_reason}")
        print(f"time: {model.benchmark(inputs, repeat=args.repeat)} ({how})")
    return 0
