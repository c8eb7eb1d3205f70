"""Where a model's time goes, ours vs ONNX Runtime, per layer class (issue 15), in one process.

    python benchmarks/kernels_vs_ort.py [--model resnet50] [--rounds 9] [--fifo]
        [--target-extra=-conv1x1=direct] [--before=-conv-tile=narrow] [--by shape|class]

Compiles the model (cache of `export_torchvision.py`) at 1 thread (plus `--target-extra`) and
loads it in ONNX Runtime (1 thread, default graph optimizations, its profiler on). Then
`--rounds` interleaved rounds: 5 profiled executions of ours (`CompiledModel.profile`) and 5
of ORT's; per-kernel (per-node) medians over all rounds. Both sides' kernels are keyed by
what they compute, read from the ONNX graph (ours: the Conv node a kernel's group starts
from; ORT: the node's input shapes in its profile): convolutions as `conv KxK C->O HxW sS
[gG]`, the rest by class (pool, layout transform, dense, other). The table gives per key the
count and summed median ms of each side, their ratio and the difference, largest gap first,
so the rows at the top are where the model loses its time. `--before OPTS`: a second
compilation with those target options, profiled in the same interleaved rounds, as a column
before ours (a before/after pair per kernel in one process); `--instances N` compiles each
option set N times and pools their samples (placement effects: see the code).
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


def ort_profiling_session(path: Path):
    """An ORT session (1 thread, default optimizations) with its profiler on."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = 1, 1
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def ort_key(args: dict, by: str) -> str:
    op = args.get("op_name", "")
    shapes = [next(iter(s.values())) for s in args.get("input_type_shape", [])]
    out = [next(iter(s.values())) for s in args.get("output_type_shape", [])]
    if op in ("Conv", "FusedConv") and len(shapes) >= 2 and len(shapes[1]) == 4:
        return conv_key(shapes[0], shapes[1], out[0], by)
    return _other_class(op)


def _compile(path: Path, extra: str, x: dict, ref: np.ndarray):
    import tensorforge

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cm = tensorforge.compile(str(path), f"llvm -num-threads=1 {extra}")
    err = float(np.max(np.abs(cm.run(x)[0] - ref)) / np.max(np.abs(ref)))
    print(f"{extra or '(defaults)'}: max |ours - ORT| / max |ORT| = {err:.1e}")
    assert err < 1e-4, err
    return cm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--fifo", action="store_true")
    ap.add_argument("--target-extra", default="", help="target options of ours")
    ap.add_argument("--before", default=None, help="also compile with these target options "
                    "(e.g. -conv-tile=narrow) and add its columns, interleaved with the rest")
    ap.add_argument("--by", default="shape", choices=("shape", "class"))
    ap.add_argument("--instances", type=int, default=1, help="compilations per option set "
                    "(profiled in turn, samples pooled)")
    args = ap.parse_args()
    path = CACHE / f"{args.model}.onnx"
    convs = onnx_conv_shapes(path)
    sess = ort_profiling_session(path)
    inp = sess.get_inputs()[0]
    x = {inp.name: np.random.default_rng(0).standard_normal(inp.shape).astype(np.float32)}
    ref = sess.run(None, x)[0]
    extras = ([args.before] if args.before is not None else []) + [args.target_extra]
    # `--instances` compilations per option set, pooled: the same code compiled twice can
    # differ by 3% in total and 20% in a layer (where its buffers land)
    models = [_compile(path, e, x, ref) for _ in range(args.instances) for e in extras]
    keys = [our_keys(cm, convs, args.by) for cm in models[:len(extras)]]
    ours: list[list[list[float]]] = [[] for _ in extras]
    load0 = os.getloadavg()[0]
    players = list(range(len(models) + 1))  # the last: ORT
    with _Fifo(args.fifo):
        for r in range(args.rounds):
            for who in (players if r % 2 == 0 else players[::-1]):
                if who < len(models):
                    ours[who % len(extras)].append(
                        [p["median"] * 1e3 for p in models[who].profile(x, repeat=5)])
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
    ncol = len(extras) + 1
    rows: dict[str, list[list[float]]] = {}
    for m, (ks, runs) in enumerate(zip(keys, ours)):
        for key, med in zip(ks, (statistics.median(c) for c in zip(*runs))):
            row = rows.setdefault(key, [[0, 0.0] for _ in range(ncol)])
            row[m][0] += 1
            row[m][1] += med
    for key, ts in per.values():
        row = rows.setdefault(key, [[0, 0.0] for _ in range(ncol)])
        row[-1][0] += 1
        row[-1][1] += statistics.median(ts[1:] or ts)  # the first is the check run
    print(f"{args.model}: load (1 min) {load0:.1f} -> {load1:.1f}, {args.rounds} rounds x 5")
    print(table(rows, extras))


def table(rows: dict[str, list[list[float]]], extras: list[str]) -> str:
    """Markdown: per key the count and ms of each column (ours per option set, ORT), ours /
    ORT and ours - ORT of the last of ours; largest gap first, then the totals."""
    names = [e or "ours" for e in extras] + ["ORT"]
    head = "| kernel | n | " + " | ".join(f"{n} ms" for n in names)
    lines = [head + " | ours / ORT | ours - ORT ms |",
             "|---|---|" + "---|" * (len(names) + 2)]
    tot = [sum(r[i][1] for r in rows.values()) for i in range(len(names))]
    items = sorted(rows.items(), key=lambda kv: kv[1][-1][1] - kv[1][-2][1])
    for key, cols in items + [("**all**", [[sum(r[i][0] for r in rows.values()), tot[i]]
                                            for i in range(len(names))])]:
        n = "/".join(str(int(c[0])) for c in cols) if len({c[0] for c in cols}) > 1 \
            else str(int(cols[0][0]))
        t, u = cols[-2][1], cols[-1][1]
        ms = " | ".join(f"{c[1]:.3f}" for c in cols)
        ratio = f"{t / u:.2f}" if u else "-"
        lines.append(f"| {key} | {n} | {ms} | {ratio} | {t - u:+.3f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
