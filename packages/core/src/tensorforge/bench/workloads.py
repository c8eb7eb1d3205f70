"""Operator workloads of the benchmark: every distinct conv2d, depthwise conv2d and dense
shape of ResNet-18 and MobileNetV2, read from the frontend's graph, each turned into a
single-op ONNX model (op + bias, fixed-seed weights) that both we and ONNX Runtime compile."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

OP_MODELS = ("resnet18", "mobilenet_v2")


@dataclass(frozen=True)
class Workload:
    """One operator shape. conv: x (N, C, H, W), w (OC, C/groups, KH, KW); dense: x (M, K),
    w (N, K). `models` names the models (and how many times) the shape occurs in."""

    kind: str  # "conv2d", "depthwise", "dense"
    x: tuple[int, ...]
    w: tuple[int, ...]
    strides: tuple[int, int] = (1, 1)
    pads: tuple[int, int, int, int] = (0, 0, 0, 0)
    groups: int = 1
    models: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        if self.kind == "dense":
            return f"dense_{self.x[0]}x{self.x[1]}_{self.w[0]}"
        n, c, h, w = self.x
        oc, _, kh, kw = self.w
        return (f"{self.kind}_{n}x{c}x{h}x{w}_{oc}x{kh}x{kw}_s{self.strides[0]}"
                f"p{self.pads[0]}")

    @property
    def out_shape(self) -> tuple[int, ...]:
        if self.kind == "dense":
            return (self.x[0], self.w[0])
        n, _, h, w = self.x
        oc, _, kh, kw = self.w
        oh = (h + self.pads[0] + self.pads[2] - kh) // self.strides[0] + 1
        ow = (w + self.pads[1] + self.pads[3] - kw) // self.strides[1] + 1
        return (n, oc, oh, ow)

    @property
    def flops(self) -> float:
        """Multiply-adds x 2 (the bias is not counted)."""
        out = int(np.prod(self.out_shape))
        if self.kind == "dense":
            return 2.0 * out * self.x[1]
        return 2.0 * out * int(np.prod(self.w[1:]))

    def arrays(self, seed: int = 0) -> dict[str, np.ndarray]:
        """Fixed-seed input, weight and bias (weights scaled like a trained layer's)."""
        rng = np.random.default_rng(seed)
        fan_in = int(np.prod(self.w[1:]))
        x = rng.standard_normal(self.x, dtype=np.float32)
        w = rng.standard_normal(self.w, dtype=np.float32) * np.float32(fan_in ** -0.5)
        b = rng.standard_normal(self.w[0], dtype=np.float32) * np.float32(0.1)
        return {"x": x, "w": w, "b": b}

    def onnx_model(self, seed: int = 0) -> Any:
        """The single-op ONNX model: input `x`, initializers `w` and `b`, output `y`."""
        import onnx
        from onnx import TensorProto, helper, numpy_helper

        a = self.arrays(seed)
        if self.kind == "dense":
            node = helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)
        else:
            node = helper.make_node("Conv", ["x", "w", "b"], ["y"],
                                    kernel_shape=list(self.w[2:]), strides=list(self.strides),
                                    pads=list(self.pads), group=self.groups)
        graph = helper.make_graph(
            [node], self.key,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(self.x))],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(self.out_shape))],
            [numpy_helper.from_array(a["w"], "w"), numpy_helper.from_array(a["b"], "b")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model


def _from_node(node: Any) -> tuple[str, tuple, tuple, tuple, tuple, int] | None:
    if node.op == "conv2d":
        x, w = node.inputs[0].shape, node.inputs[1].shape
        groups = int(node.attrs.get("groups", 1))
        if tuple(node.attrs.get("dilations", (1, 1))) != (1, 1):
            return None
        kind = "conv2d" if groups == 1 else "depthwise" if groups == x[1] == w[0] else None
        if kind is None:
            return None
        return (kind, tuple(x), tuple(w), tuple(node.attrs.get("strides", (1, 1))),
                tuple(node.attrs.get("pads", (0, 0, 0, 0))), groups)
    if node.op == "dense":
        return ("dense", tuple(node.inputs[0].shape), tuple(node.inputs[1].shape), (1, 1),
                (0, 0, 0, 0), 1)
    return None


def extract(models: tuple[str, ...] = OP_MODELS) -> list[Workload]:
    """Distinct conv2d/depthwise/dense workloads of `models`, in order of first appearance."""
    from tensorforge_onnx import models as zoo
    from tensorforge_onnx.frontend import load

    found: dict[tuple, list[str]] = {}
    for name in models:
        graph = load(zoo.build(name))
        for node in graph.nodes:
            sig = _from_node(node)
            if sig is not None:
                found.setdefault(sig, []).append(name)
    out = []
    for (kind, x, w, strides, pads, groups), where in found.items():
        tags = tuple(f"{m} x{where.count(m)}" for m in dict.fromkeys(where))
        out.append(Workload(kind, x, w, strides, pads, groups, tags))
    return out


def quick_subset(workloads: list[Workload]) -> list[Workload]:
    """One workload of each kind (the first found): the `--quick` operator set."""
    seen: dict[str, Workload] = {}
    for w in workloads:
        seen.setdefault(w.kind, w)
    return list(seen.values())
