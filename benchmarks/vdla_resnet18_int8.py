"""ResNet-18 quantized by `tensorforge.quantize` and compiled for `vdla -host=llvm`.

    python benchmarks/vdla_resnet18_int8.py [--size 224] [--inputs 32] [--write-docs]

Calibrates on 32 seeded inputs, compiles the int8 graph for `vdla -host=llvm` and for
`llvm`, and on 32 other seeded inputs reports: whether the two are bit-identical, top-1
agreement and logit cosine similarity against the float model (compiled for llvm), the
simulated VDLA cycles and seconds of one inference (the sum of its VDLA kernels' reports),
and the wall time of the simulator. `--write-docs` replaces the section between the
markers in docs/vdla.md. Inputs are standard-normal images (the weights are seeded, not
trained: agreement is measured on the same synthetic distribution the scales come from)."""

from __future__ import annotations

import argparse
import pathlib
import time

import numpy as np

import tensorforge
from tensorforge.compiler.compile import load_graph

BEGIN, END = "<!-- resnet18-int8:begin -->", "<!-- resnet18-int8:end -->"


def vdla_report(cm) -> tuple[int, float]:
    """(cycles, seconds) of the last run over every VDLA kernel."""
    from tensorforge.runtime.module import ModuleSet

    cycles, secs = 0, 0.0
    mods = cm.module.modules.values() if isinstance(cm.module, ModuleSet) else [cm.module]
    for m in mods:
        for p in getattr(m, "programs", []):
            rep = m.get_function(p.name).last_report
            if rep is not None:
                cycles += rep.total_cycles
                secs += rep.seconds
    return cycles, secs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--inputs", type=int, default=32)
    ap.add_argument("--write-docs", action="store_true")
    a = ap.parse_args()
    from tensorforge_onnx.models import build

    shape = (1, 3, a.size, a.size)
    g = load_graph(build("resnet18"), input_shapes={"input": shape})
    cal_rng, test_rng = np.random.default_rng(1234), np.random.default_rng(5678)
    cal = [cal_rng.standard_normal(shape).astype("float32") for _ in range(32)]
    tests = [test_rng.standard_normal(shape).astype("float32") for _ in range(a.inputs)]
    t0 = time.perf_counter()
    qg = tensorforge.quantize(g, cal)
    t_quant = time.perf_counter() - t0
    fm = tensorforge.compile(g, target="llvm")
    qm = tensorforge.compile(qg, target="llvm")
    t0 = time.perf_counter()
    vm = tensorforge.compile(qg, target="vdla -host=llvm")
    t_compile = time.perf_counter() - t0
    print(f"quantized in {t_quant:.1f} s, compiled for vdla in {t_compile:.1f} s", flush=True)
    kernels = vm.desc["placement"]["kernels"]
    same, top1, coss, sim_wall = True, 0, [], []
    for x in tests:
        f = fm.run({"input": x})[0].ravel().astype("float64")
        q = qm.run({"input": x})[0]
        t0 = time.perf_counter()
        v = vm.run({"input": x})[0]
        sim_wall.append(time.perf_counter() - t0)
        same &= bool(np.array_equal(q, v))
        v = v.ravel().astype("float64")
        top1 += int(np.argmax(f) == np.argmax(v))
        coss.append(float(f @ v / (np.linalg.norm(f) * np.linalg.norm(v))))
        print(f"input {len(coss)}: same={same} top1={top1}/{len(coss)} cos={coss[-1]:.4f} "
              f"sim {sim_wall[-1]:.1f} s", flush=True)
    cycles, secs = vdla_report(vm)
    rows = [
        ("input", f"{shape}, {a.inputs} seeded standard-normal images (calibration: 32 others)"),
        ("vdla -host=llvm vs llvm (same int8 graph)",
         "bit-identical" if same else "DIFFERENT"),
        ("top-1 agreement with the float model", f"{top1}/{a.inputs}"),
        ("logit cosine similarity (min / mean)", f"{min(coss):.4f} / {np.mean(coss):.4f}"),
        ("kernels by device", ", ".join(f"{k} {n}" for k, n in kernels.items())),
        ("VDLA cycles per inference (sum of its kernels)",
         f"{cycles:,} ({secs * 1e3:.2f} ms at the design's clock)"),
        ("simulator wall time per inference (median)", f"{np.median(sim_wall):.2f} s"),
        ("quantize (calibration) / compile for vdla", f"{t_quant:.1f} s / {t_compile:.1f} s"),
    ]
    table = "| ResNet-18 int8 | |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows)
    print(table)
    if a.write_docs:
        doc = pathlib.Path(__file__).resolve().parents[1] / "docs" / "vdla.md"
        text = doc.read_text()
        block = f"{BEGIN}\n{table}\n{END}"
        if BEGIN in text:
            text = text[:text.index(BEGIN)] + block + text[text.index(END) + len(END):]
        else:
            text = text.rstrip() + "\n\n" + block + "\n"
        doc.write_text(text)


if __name__ == "__main__":
    main()
