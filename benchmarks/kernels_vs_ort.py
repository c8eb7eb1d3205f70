"""Where a model's time goes, ours vs ONNX Runtime, per layer class (issue 15), in one process.

    python benchmarks/kernels_vs_ort.py [--model resnet50] [--rounds 9] [--fifo]
        [--target-extra "-conv1x1=direct"] [--by shape|class]

Compiles the model (cache of `export_torchvision.py`) at 1 thread (plus `--target-extra`) and
loads it in ONNX Runtime (1 thread, default graph optimizations, its profiler on). Then
`--rounds` interleaved rounds: 5 profiled executions of ours (`CompiledModel.profile`) and 5
of ORT's; per-kernel (per-node) medians over all rounds. Both sides' kernels are keyed by
what they compute, read from the ONNX graph (ours: the Conv node a kernel's group starts
from; ORT: the node's input shapes in its profile): convolutions as `conv KxK C->O HxW sS
[gG]`, the rest by class (pool, layout transform, dense, other). The table gives per key the
count and summed median ms of each side, their ratio and the difference, largest gap first,
so the rows at the top are where the model loses its time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from families_vs_ort import CACHE, _Fifo  # noqa: E402


def conv_key(x: list[int], w: list[int], y: list[int], by: str) -> str:
    """A conv's key from NCHW input, OIHW weight and NCHW output shapes."""
    c, o, kh, kw = x[1], w[0], w[2], w[3]
    g = c // w[1]
    s = max(1, -(-x[2] // y[2])) if y[2] else 1
    if by == "class":
        kind = "depthwise" if g == c and g > 1 else ("grouped" if g > 1 else "")
        return f"conv {kh}x{kw} s{s} {kind}".rstrip()
    return f"conv {kh}x{kw} {c}->{o} {x[2]}x{x[3]} s{s}" + (f" g{g}" if g > 1 else "")


def _other_class(op: str) -> str:
    op = op.lower()
    for word, cls in (("pool", "pool"), ("layout", "layout"), ("reorder", "layout"),
                      ("dense", "dense/gemm"), ("gemm", "dense/gemm"), ("matmul", "dense/gemm"),
                      ("add", "add"), ("reshape", "reshape"), ("flatten", "reshape")):
        if word in op:
            return cls
    return op


def onnx_conv_shapes(path: Path) -> dict[str, tuple[list[int], list[int], list[int]]]:
    """{Conv node name: (input, weight, output shapes)} by ONNX shape inference."""
    import onnx

    model = onnx.shape_inference.infer_shapes(onnx.load(str(path)))
    g = model.graph
    shapes = {}
    for v in list(g.input) + list(g.value_info) + list(g.output):
        shapes[v.name] = [d.dim_value for d in v.type.tensor_type.shape.dim]
    for t in g.initializer:
        shapes[t.name] = list(t.dims)
    return {n.name: (shapes[n.input[0]], shapes[n.input[1]], shapes[n.output[0]])
            for n in g.node if n.op_type == "Conv"}


def our_keys(cm, convs: dict, by: str) -> list[str]:
    keys = []
    for k in cm.desc["kernels"]:
        node = next((n.split(":")[0] for n in k["nodes"] if n.split(":")[0] in convs), None)
        keys.append(conv_key(*convs[node], by) if node and "conv" in k["master"]
                    else _other_class(k["master"]))
    return keys


def ort_node_times(sess_path: Path, x: dict, runs: int) -> tuple[object, callable]:
    """A profiling ORT session and a function giving {node: (key args, [ms...])}."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = 1, 1
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
    return ort.InferenceSession(str(sess_path), so, providers=["CPUExecutionProvider"])


def ort_key(args: dict, by: str) -> str:
    op = args.get("op_name", "")
    shapes = [next(iter(s.values())) for s in args.get("input_type_shape", [])]
    out = [next(iter(s.values())) for s in args.get("output_type_shape", [])]
    if op in ("Conv", "FusedConv") and len(shapes) >= 2 and len(shapes[1]) == 4:
        return conv_key(shapes[0], shapes[1], out[0], by)
    return _other_class(op)


def main() -> None:
    import tensorforge

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--fifo", action="store_true")
    ap.add_argument("--target-extra", default="")
    ap.add_argument("--by", default="shape", choices=("shape", "class"))
    args = ap.parse_args()
    path = CACHE / f"{args.model}.onnx"
    convs = onnx_conv_shapes(path)
    sess = ort_node_times(path, {}, 0)
    inp = sess.get_inputs()[0]
    x = {inp.name: np.random.default_rng(0).standard_normal(inp.shape).astype(np.float32)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cm = tensorforge.compile(str(path), f"llvm -num-threads=1 {args.target_extra}")
    ref = sess.run(None, x)[0]
    err = float(np.max(np.abs(cm.run(x)[0] - ref)) / np.max(np.abs(ref)))
    print(f"max |ours - ORT| / max |ORT| = {err:.1e}")
    assert err < 1e-4, err
    keys = our_keys(cm, convs, args.by)
    ours: list[list[float]] = []
    load0 = os.getloadavg()[0]
    with _Fifo(args.fifo):
        for r in range(args.rounds):
            for who in ((0, 1) if r % 2 == 0 else (1, 0)):
                if who == 0:
                    ours.append([p["median"] * 1e3 for p in cm.profile(x, repeat=5)])
                else:
                    for _ in range(5):
                        sess.run(None, x)
    load1 = os.getloadavg()[0]
    with open(sess.end_profiling()) as f:
        events = json.load(f)
    per: dict[str, tuple[str, list[float]]] = {}
    for e in events:
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            per.setdefault(e["name"], (ort_key(e["args"], args.by), []))[1].append(
                e["dur"] / 1e3)
    rows: dict[str, list[float]] = {}
    for key, med in zip(keys, (statistics.median(c) for c in zip(*ours))):
        row = rows.setdefault(key, [0, 0.0, 0, 0.0])
        row[0] += 1
        row[1] += med
    for key, ts in per.values():
        row = rows.setdefault(key, [0, 0.0, 0, 0.0])
        row[2] += 1
        row[3] += statistics.median(ts[1:] or ts)  # the first is the check run
    print(f"{args.model} {args.target_extra or '(defaults)'}: load (1 min) {load0:.1f} -> "
          f"{load1:.1f}, {args.rounds} rounds x 5")
    print("| kernel | ours n | ours ms | ORT n | ORT ms | ours / ORT | ours - ORT ms |")
    print("|---|---|---|---|---|---|---|")
    for key, (n, t, m, u) in sorted(rows.items(), key=lambda kv: kv[1][3] - kv[1][1]):
        ratio = f"{t / u:.2f}" if u else "-"
        print(f"| {key} | {n} | {t:.3f} | {m} | {u:.3f} | {ratio} | {t - u:+.3f} |")
    tt, tu = sum(r[1] for r in rows.values()), sum(r[3] for r in rows.values())
    print(f"| **all** | {sum(r[0] for r in rows.values())} | {tt:.2f} | "
          f"{sum(r[2] for r in rows.values())} | {tu:.2f} | {tt / tu:.2f} | {tt - tu:+.2f} |")


if __name__ == "__main__":
    main()
