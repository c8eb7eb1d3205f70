"""Transformers vs ONNX Runtime: latency at batch 1, interleaved in one process (issue 13).

    python benchmarks/transformers_vs_ort.py --threads 1,2 --rounds 15 [--models a,b] [--md F]
    /work/torchenv/bin/python benchmarks/export_transformers.py   # once: the torch exports

Models (full size unless `--layers` says otherwise):

- the zoo's, built by `tensorforge_onnx.models` (seed 0) and cached as ONNX:
  `bert` at sequence 128 (`bert-32`, `bert-512`: sequence 32 and 512), `gpt2` (sequence 128,
  causal, LM head over 50257 tokens), `vit_b_16` (224x224, 197 tokens);
- the PyTorch exports of `benchmarks/export_transformers.py` found in the cache
  (TorchScript exporter): `transformer_encoder` (`nn.TransformerEncoder`, 6 layers, d 512),
  `torch_vit_b_16` (torchvision's ViT-B/16), `gpt2_lm` (GPT-2 small, SDPA).

Each model is compiled for `llvm -num-threads=T` and loaded in ONNX Runtime with its default
graph optimizations (which fuse attention, LayerNorm and GELU) and `intra_op_num_threads=T`.
Outputs are checked first (max |ours - ORT| / max |ORT|, against the issue's rtol 1e-4 /
atol 1e-5 x max |output|). Then `--rounds` rounds of one run each, alternating who goes
first (`families_vs_ort._rounds`; `--phased`: all of ours, then all of ORT's, which is how
the 2-thread figures are taken under `--fifo`); figures are medians, the ratio is the median
of per-round ratios (ours / ORT: below 1 = we are faster), with the 1-minute load average
before/after.

`--dynamic 32,128,512`: BERT compiled once with a bounded dynamic sequence
(``input_shapes={...: (1, "seq<=512")}``, the zoo's `dynamic=1` model) against a static
compile at each length, interleaved the same way; the first call at a new length compiles
that length only with `--dynamic-mode specialize` (`compiler.dynamic`; the default,
`symbolic`, compiles once: `compiler.symbolic`), and its time is reported apart."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from families_vs_ort import (  # noqa: E402
    CACHE,
    _Fifo,
    _rounds,
    _session,
    kernel_sums,
    print_row,
    write_tables,
)

ZOO = {"bert": ("bert", {}), "bert-32": ("bert", {"seq": 32}),
       "bert-512": ("bert", {"seq": 512}), "gpt2": ("gpt2", {}), "vit_b_16": ("vit_b_16", {})}
TORCH = {"transformer_encoder": "transformer_encoder", "torch_vit_b_16": "vit_b_16",
         "gpt2_lm": "gpt2_lm"}
ORDER = ["bert", "gpt2", "vit_b_16", "bert-32", "bert-512", "transformer_encoder",
         "torch_vit_b_16", "gpt2_lm"]
RTOL, ATOL_REL = 1e-4, 1e-5


def model_path(name: str, layers: int | None) -> tuple[Path, dict[str, np.ndarray]] | None:
    """The ONNX file of `name` (built into the cache on first use for the zoo's) and its
    inputs; None for a torch export that is not in the cache."""
    if name in TORCH:
        path = CACHE / f"{TORCH[name]}.onnx"
        if not path.exists():
            return None
        saved = np.load(CACHE / f"{TORCH[name]}.npz")
        sess = _session(path, 1)
        return path, {i.name: saved[i.name] for i in sess.get_inputs()}
    from tensorforge_onnx import models

    zoo, cfg = ZOO[name] if name in ZOO else ("bert", {"seq": int(name.split("-")[1])})
    if layers:
        cfg = {**cfg, "layers": layers}
    tag = "-".join(f"{k}{v}" for k, v in sorted(cfg.items()))
    path = CACHE / f"zoo_{zoo}{'-' + tag if tag else ''}.onnx"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        models.save(zoo, path, **cfg)
    return path, models.example_inputs(zoo, **cfg)


def measure(name: str, path: Path, x: dict, threads: int, rounds: int,
            fifo: bool = False, kernels: bool = True, phased: bool = False) -> dict:
    import tensorforge

    sess = _session(path, threads)
    ref = sess.run(None, x)[0]
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cm = tensorforge.compile(str(path), f"llvm -num-threads={threads}")
    compile_s = time.perf_counter() - t0
    out = np.asarray(cm.run(x)[0])
    scale = max(float(np.max(np.abs(ref))), 1e-30)
    err = float(np.max(np.abs(out - ref))) / scale
    ok = bool(np.allclose(out, ref, rtol=RTOL, atol=ATOL_REL * scale))
    for _ in range(2):  # warm both (and start their thread pools)
        cm.run(x)
        sess.run(None, x)
    load0 = os.getloadavg()[0]
    ours: list[float] = []
    theirs: list[float] = []
    ratios: list[float] = []
    with _Fifo(fifo):
        _rounds(cm, sess, x, rounds, ours, theirs, ratios, phased)
        kernel_ms, node_ms = (kernel_sums(cm, path, threads, x, max(3, rounds // 3))
                              if kernels else (float("nan"), float("nan")))
    masters = [k["master"] for k in cm.desc["kernels"]]
    return {"model": name, "threads": threads, "ours_ms": statistics.median(ours) * 1e3,
            "ort_ms": statistics.median(theirs) * 1e3, "ratio": statistics.median(ratios),
            "ratio_iqr": [float(q) for q in np.percentile(ratios, [25, 75])],
            "max_rel_err": err, "matches": ok, "compile_s": compile_s,
            "kernels": len(masters), "attention_kernels": masters.count("attention"),
            "load": (round(load0, 2), round(os.getloadavg()[0], 2)), "rounds": rounds,
            "ours_kernels_ms": kernel_ms, "ort_nodes_ms": node_ms}


def measure_dynamic(lengths: list[int], threads: int, rounds: int, layers: int | None,
                    fifo: bool = False, mode: str = "symbolic") -> list[dict]:
    """Dynamic (one compile, bound 512) vs static BERT at each length (module docstring)."""
    import tensorforge
    from tensorforge_onnx import models

    cfg = {"layers": layers} if layers else {}
    dyn_path = CACHE / f"zoo_bert-dynamic{'-layers' + str(layers) if layers else ''}.onnx"
    if not dyn_path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        models.save("bert", dyn_path, dynamic=1, **cfg)
    target = f"llvm -num-threads={threads}"
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dyn = tensorforge.compile(str(dyn_path), target, input_shapes={
            k: (1, "seq<=512") for k in ("input_ids", "token_type_ids", "attention_mask")},
            dynamic=mode)
    print(f"dynamic model: {dyn!r}, compiled in {time.perf_counter() - t0:.1f} s", flush=True)
    dyn_compile_s = time.perf_counter() - t0
    rows = []
    for seq in lengths:
        path, x = model_path(f"bert-{seq}" if seq != 128 else "bert", layers)
        t0 = time.perf_counter()
        first = dyn.run(x)[0]  # compiles this length unless it is the bound
        first_call_s = time.perf_counter() - t0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            static = tensorforge.compile(str(path), target)
        ref = static.run(x)[0]
        err = float(np.max(np.abs(first - ref))) / float(np.max(np.abs(ref)))
        for _ in range(2):
            dyn.run(x)
            static.run(x)
        load0 = os.getloadavg()[0]
        a: list[float] = []
        b: list[float] = []
        ratios: list[float] = []
        with _Fifo(fifo):
            _rounds(dyn, _AsSession(static), x, rounds, a, b, ratios)
        rows.append({"seq": seq, "threads": threads, "mode": mode,
                     "dynamic_ms": statistics.median(a) * 1e3,
                     "static_ms": statistics.median(b) * 1e3, "ratio": statistics.median(ratios),
                     "max_rel_err": err, "dynamic_compile_s": dyn_compile_s,
                     "first_call_s": first_call_s,
                     "load": (round(load0, 2), round(os.getloadavg()[0], 2))})
        print(json.dumps(rows[-1]), flush=True)
        static.close()
    return rows


class _AsSession:
    """A CompiledModel called like an ORT session (`_rounds` times `sess.run(None, x)`)."""

    def __init__(self, cm: object):
        self.cm = cm

    def run(self, _names: object, x: dict) -> list:
        return self.cm.run(x)


def markdown_dynamic(rows: list[dict]) -> str:
    lines = ["| seq | threads | dynamic ms | static ms | dynamic / static | first call at this "
             "length s | max rel err | load |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['seq']} | {r['threads']} | {r['dynamic_ms']:.1f} | "
                     f"{r['static_ms']:.1f} | **{r['ratio']:.2f}** | {r['first_call_s']:.1f} | "
                     f"{r['max_rel_err']:.1e} | {r['load'][0]}-{r['load'][1]} |")
    return "\n".join(lines)


def markdown(rows: list[dict]) -> str:
    lines = ["| model | threads | ours ms | ORT ms | ours / ORT (IQR) | sum of kernels ours / "
             "ORT ms | max rel err | matches | kernels (attention) | compile s | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        q = r["ratio_iqr"]
        lines.append(f"| {r['model']} | {r['threads']} | {r['ours_ms']:.1f} | "
                     f"{r['ort_ms']:.1f} | **{r['ratio']:.2f}** ({q[0]:.2f}-{q[1]:.2f}) | "
                     f"{r['ours_kernels_ms']:.1f} / {r['ort_nodes_ms']:.1f} | "
                     f"{r['max_rel_err']:.1e} | {'yes' if r['matches'] else 'NO'} | "
                     f"{r['kernels']} ({r['attention_kernels']}) | {r['compile_s']:.0f} | "
                     f"{r['load'][0]}-{r['load'][1]} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="", help=f"comma-separated, of {', '.join(ORDER)}")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--layers", type=int, default=0, help="zoo models with this many layers")
    ap.add_argument("--fifo", action="store_true", help="time under SCHED_FIFO (root)")
    ap.add_argument("--phased", action="store_true",
                    help="all our runs, then all of ORT's (see families_vs_ort.py): at 2 threads "
                    "under --fifo, interleaving pits the two thread pools against each other")
    ap.add_argument("--no-kernels", action="store_true", help="skip the per-kernel sums")
    ap.add_argument("--dynamic", default="",
                    help="BERT lengths for the dynamic-vs-static comparison, e.g. 32,128,512")
    ap.add_argument("--dynamic-mode", default="symbolic", choices=("symbolic", "specialize"),
                    help="compile(dynamic=...): one symbolic compile, or one per length")
    ap.add_argument("--json", default="")
    ap.add_argument("--md", default="")
    args = ap.parse_args(argv)
    if args.dynamic:
        rows = []
        for th in (int(t) for t in args.threads.split(",")):
            rows += measure_dynamic([int(n) for n in args.dynamic.split(",")], th,
                                    args.rounds, args.layers or None, args.fifo,
                                    args.dynamic_mode)
        md = markdown_dynamic(rows)
        print(md)
        if args.md:
            Path(args.md).write_text(md + "\n")
        return 0
    names = args.models.split(",") if args.models else ORDER
    unknown = set(names) - set(ORDER)
    if unknown:
        print(f"unknown models {sorted(unknown)}; known: {', '.join(ORDER)}")
        return 2
    rows = []
    for name in names:
        found = model_path(name, args.layers or None)
        if found is None:
            print(f"{name}: not in {CACHE}; run benchmarks/export_transformers.py first")
            continue
        for th in (int(t) for t in args.threads.split(",")):
            row = measure(name, *found, th, args.rounds, args.fifo, not args.no_kernels,
                          args.phased)
            rows.append(row)
            print_row(row)
    write_tables(rows, markdown(rows), args.md, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
