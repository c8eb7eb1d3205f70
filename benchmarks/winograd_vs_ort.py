"""ResNet-18's 3x3 stride-1 convolutions (bias + relu): tensorforge direct vs Winograd F(2,3)
vs F(4,3) vs ONNX Runtime (single-op models), 1 thread, interleaved medians.

    python benchmarks/winograd_vs_ort.py [rounds] [threads]
"""

from __future__ import annotations

import sys
import time

import numpy as np

LAYERS = [(64, 56), (128, 28), (256, 14), (512, 7)]  # (channels, height = width)


def conv_model(c: int, hw: int, seed: int = 0):  # noqa: ANN201 (onnx.ModelProto)
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    w = (rng.standard_normal((c, c, 3, 3)) / np.sqrt(9 * c)).astype("float32")
    b = (rng.standard_normal(c) * 0.1).astype("float32")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1],
                              kernel_shape=[3, 3]),
             helper.make_node("Relu", ["y"], ["out"])]
    graph = helper.make_graph(
        nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, hw, hw])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, c, hw, hw])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _med(f, n: int) -> float:  # noqa: ANN001
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def main(argv: list[str]) -> None:
    import onnxruntime as ort

    import tensorforge

    rounds = int(argv[0]) if argv else 10
    th = int(argv[1]) if len(argv) > 1 else 1
    print("| layer | direct | F(2,3) | F(4,3) | ORT | best / ORT | F(4,3) max rel err |")
    print("|---|---|---|---|---|---|---|")
    for c, hw in LAYERS:
        model = conv_model(c, hw)
        x = {"x": np.random.default_rng(1).standard_normal((1, c, hw, hw)).astype("float32")}
        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = th, 1
        sess = ort.InferenceSession(model.SerializeToString(), so,
                                    providers=["CPUExecutionProvider"])
        ref = sess.run(None, x)[0]
        runs = {"ort": lambda s=sess, x=x: s.run(None, x)}
        errs = {}
        for mode in ("off", "2", "4"):
            cm = tensorforge.compile(model, target=f"llvm -num-threads={th} -winograd={mode}")
            errs[mode] = float(np.abs(cm.run(x)[0] - ref).max() / np.abs(ref).max())
            runs[mode] = lambda cm=cm, x=x: cm.run(x)
        times: dict[str, list[float]] = {k: [] for k in runs}
        for _ in range(rounds):
            for k, f in runs.items():
                times[k].append(_med(f, 3))
        med = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
        best = min(med["off"], med["2"], med["4"])
        print(f"| {c}->{c}, {hw}x{hw} | {med['off']:.2f} ms | {med['2']:.2f} ms | "
              f"{med['4']:.2f} ms | {med['ort']:.2f} ms | {best / med['ort']:.2f} | "
              f"{errs['4']:.1e} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
