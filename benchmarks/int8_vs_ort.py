"""ResNet-18 in int8 (QDQ, ONNX Runtime's quantizer) vs float, ours vs ONNX Runtime.

    python benchmarks/int8_vs_ort.py [--model PATH] [--threads 1] [--rounds 10] [--per-channel]

The float model is torchvision's ResNet-18 exported by `export_torchvision.py --only resnet18`
(`benchmarks/.models/resnet18.onnx`, torch's random initialisation) when it exists or
`--model` names one, else the zoo's (`tensorforge_onnx.models`, seeded weights). It is
quantized by `onnxruntime.quantization.quantize_static` (QDQ format, int8 activations and
weights, the defaults; `--per-channel` for per-channel weights), calibrated on 8 seeded
N(0, 1) images. Four runners in one process, interleaved (each round: 3 runs of each), 1
thread: ours int8, ONNX Runtime int8, ours float, ONNX Runtime float; medians in ms.
Accuracy: our int8 output vs ONNX Runtime's int8 output in units of the output's
quantization scale (max and count over 1 unit), and top-1 agreement over `--images`
seeded inputs (random weights give near-tied logits: a one-step difference can swap the
top-1, so the agreement is also given over the images where ONNX Runtime's top-1 leads by
more than 2 steps). The compiled int8 model's kernels are listed by strategy: the convolutions
must be `qconv2d_nchwc` (int8, VNNI `vpdpbusd` where the CPU has it)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from models_vs_ort import _times  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TORCHVISION = ROOT / "benchmarks" / ".models" / "resnet18.onnx"


def quantize_qdq(src: str, dst: str, name: str, shape: tuple[int, ...], per_channel: bool,
                 calib: int = 8, seed: int = 0, uint8: bool = False) -> None:
    """`quantize_static` (QDQ) of the model at `src` into `dst`, calibrated on `calib` seeded
    N(0, 1) inputs."""
    import onnx

    from tensorforge_onnx.testing import quantize_qdq as quantize

    rng = np.random.default_rng(seed)
    feeds = [{name: rng.standard_normal(shape).astype("float32")} for _ in range(calib)]
    options: dict[str, Any] = {"per_channel": per_channel}
    if uint8:
        from onnxruntime.quantization import QuantType

        options["activation_type"] = QuantType.QUInt8
    onnx.save(quantize(onnx.load(src), feeds, **options), dst)


def output_scale(path: str) -> float:
    """The scale of the last QuantizeLinear (the output's quantization step)."""
    import onnx
    from onnx import numpy_helper

    m = onnx.load(path)
    inits = {i.name: i for i in m.graph.initializer}
    q = [n for n in m.graph.node if n.op_type == "QuantizeLinear"][-1]
    return float(numpy_helper.to_array(inits[q.input[1]]).reshape(-1)[0])


def kernel_masters(cm: Any) -> dict[str, int]:
    """Master op of each compiled kernel -> count."""
    counts: dict[str, int] = {}
    for k in cm.desc["kernels"]:
        counts[k["master"]] = counts.get(k["master"], 0) + 1
    return counts


def main(argv: list[str]) -> None:
    import onnx
    import onnxruntime as ort

    import tensorforge
    from tensorforge_onnx import models

    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--images", type=int, default=20)
    ap.add_argument("--per-channel", action="store_true")
    ap.add_argument("--uint8", action="store_true", help="uint8 activations (default int8)")
    ap.add_argument("--profile", action="store_true", help="the int8 model's slowest kernels")
    a = ap.parse_args(argv)
    d = tempfile.mkdtemp()
    fp = a.model or (str(TORCHVISION) if TORCHVISION.exists() else "")
    if not fp:
        fp = str(models.save("resnet18", os.path.join(d, "resnet18.onnx")))
    inp = onnx.load(fp).graph.input[0]
    name = inp.name
    shape = tuple(dd.dim_value or 1 for dd in inp.type.tensor_type.shape.dim)
    qp = os.path.join(d, "resnet18_qdq.onnx")
    quantize_qdq(fp, qp, name, shape, a.per_channel, uint8=a.uint8)
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = a.threads, 1
    target = f"llvm -num-threads={a.threads}"
    runners: dict[str, Callable[[dict[str, np.ndarray]], list[np.ndarray]]] = {}
    compiled = {}
    for label, path in (("int8", qp), ("float", fp)):
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        cm = tensorforge.compile(path, target=target)
        compiled[label] = cm
        runners[f"ours {label}"] = cm.run
        runners[f"ort {label}"] = lambda x, s=sess: s.run(None, x)
    print(f"model: {fp} ({'per-channel' if a.per_channel else 'per-tensor'} weights, "
          f"{'uint8' if a.uint8 else 'int8'} activations)")
    print("int8 kernels by master op:", kernel_masters(compiled["int8"]))
    if a.profile:
        for k in sorted(compiled["int8"].profile(repeat=5), key=lambda k: -k["median"])[:12]:
            print(f"  {k['median'] * 1e3:7.3f} ms {k['share']:5.1%} {k['name']}")
    scale = output_scale(qp)
    rng = np.random.default_rng(1)
    worst, over, agree, clear, clear_agree = 0.0, 0, 0, 0, 0
    for _ in range(a.images):
        x = {name: rng.standard_normal(shape).astype("float32")}
        ours, theirs = runners["ours int8"](x)[0], runners["ort int8"](x)[0]
        diff = np.abs(ours - theirs) / scale
        worst, over = max(worst, float(diff.max())), over + int((diff > 1.5).sum())
        same = int(np.argmax(ours) == np.argmax(theirs))
        agree += same
        top2 = np.sort(theirs.reshape(-1))[-2:]
        if top2[1] - top2[0] > 2.5 * scale:  # ORT's top-1 ahead by more than 2 steps
            clear, clear_agree = clear + 1, clear_agree + same
    print(f"int8 vs ORT int8 over {a.images} images: max |diff| = {worst:.2f} quantized units "
          f"(scale {scale:.4g}), elements over 1 unit: {over}, top-1 agreement "
          f"{agree}/{a.images} ({clear_agree}/{clear} where ORT's top-1 leads by more than 2 "
          "steps)")
    x = {name: np.random.default_rng(2).standard_normal(shape).astype("float32")}
    times: dict[str, list[float]] = {k: [] for k in runners}
    for f in runners.values():
        f(x)
    for _ in range(a.rounds):
        for k, f in runners.items():
            times[k] += _times(lambda f=f: f(x), 3)
    med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
    for k, v in med.items():
        print(f"{k:11s} {v:8.2f} ms")
    print(f"ours int8 / ort int8 = {med['ours int8'] / med['ort int8']:.2f}; ours int8 / "
          f"ours float = {med['ours int8'] / med['ours float']:.2f}; ort int8 / ort float = "
          f"{med['ort int8'] / med['ort float']:.2f}  (threads={a.threads})")


if __name__ == "__main__":
    main(sys.argv[1:])
