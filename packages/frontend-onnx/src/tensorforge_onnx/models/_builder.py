"""A small helper around `onnx.helper` for building models with seeded random weights.

Weights are float32, drawn from `numpy.random.default_rng(seed)` with scales that keep the
activations of order one: He-normal convolutions and dense layers, and batch-norm statistics
close to an identity transform."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DTYPES = {"float32": TensorProto.FLOAT, "int64": TensorProto.INT64}


class ModelBuilder:
    """Collects nodes and initializers; every helper returns the name of its output."""

    def __init__(self, name: str, seed: int = 0, opset: int = 17) -> None:
        self.name = name
        self.opset = opset
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self._count: dict[str, int] = {}

    # naming and constants -------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        k = self._count.get(base, 0)
        self._count[base] = k + 1
        return f"{base}_{k}"

    def const(self, base: str, array: np.ndarray) -> str:
        name = self.fresh(base)
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def normal(self, shape: Sequence[int], std: float) -> np.ndarray:
        return (self.rng.standard_normal(tuple(shape), dtype=np.float32) * np.float32(std))

    def uniform(self, shape: Sequence[int], low: float, high: float) -> np.ndarray:
        return self.rng.uniform(low, high, tuple(shape)).astype(np.float32)

    # graph construction ---------------------------------------------------------------------
    def input(self, name: str, shape: Sequence[int], dtype: str = "float32") -> str:
        self.inputs.append(helper.make_tensor_value_info(name, DTYPES[dtype], list(shape)))
        return name

    def output(self, name: str, shape: Sequence[int], dtype: str = "float32") -> None:
        self.outputs.append(helper.make_tensor_value_info(name, DTYPES[dtype], list(shape)))

    def op(self, op_type: str, inputs: Sequence[str], n_out: int = 1, out: str | None = None,
           **attrs: object) -> str | list[str]:
        """Append an `op_type` node; returns its output name (a list when `n_out` > 1)."""
        base = self.fresh(op_type.lower())
        outs = [out] if out and n_out == 1 else [f"{base}_y{i}" if n_out > 1 else base
                                                 for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=base, **attrs))
        return outs[0] if n_out == 1 else outs

    # layers ---------------------------------------------------------------------------------
    def conv(self, x: str, cin: int, cout: int, k: int, stride: int = 1, pad: int = 0,
             group: int = 1, bias: bool = False, gain: float = 2.0) -> str:
        """Conv2d with He-normal weights (`gain`/fan_in variance)."""
        fan_in = cin // group * k * k
        w = self.const("w", self.normal((cout, cin // group, k, k), np.sqrt(gain / fan_in)))
        ins = [x, w] + ([self.const("b", self.normal((cout,), 0.05))] if bias else [])
        return self.op("Conv", ins, kernel_shape=[k, k], strides=[stride, stride],
                       pads=[pad] * 4, group=group)

    def conv_transpose(self, x: str, cin: int, cout: int, k: int, stride: int, pad: int,
                       gain: float = 2.0) -> str:
        """ConvTranspose2d; each output pixel sums about cin*k*k/stride^2 products."""
        fan_in = cin * k * k / (stride * stride)
        w = self.const("w", self.normal((cin, cout, k, k), np.sqrt(gain / fan_in)))
        return self.op("ConvTranspose", [x, w], kernel_shape=[k, k], strides=[stride, stride],
                       pads=[pad] * 4)

    def batch_norm(self, x: str, c: int, gamma: tuple[float, float] = (0.8, 1.2)) -> str:
        """Inference batch norm with near-identity statistics; `gamma` is a uniform range."""
        scale = self.const("bn_scale", self.uniform((c,), *gamma))
        shift = self.const("bn_bias", self.normal((c,), 0.05))
        mean = self.const("bn_mean", self.normal((c,), 0.05))
        var = self.const("bn_var", self.uniform((c,), 0.8, 1.2))
        return self.op("BatchNormalization", [x, scale, shift, mean, var], epsilon=1e-5)

    def relu6(self, x: str) -> str:
        lo = self.const("clip_min", np.array(0.0, np.float32))
        hi = self.const("clip_max", np.array(6.0, np.float32))
        return self.op("Clip", [x, lo, hi])

    def gemm(self, x: str, cin: int, cout: int, gain: float = 2.0) -> str:
        """Fully connected layer as Gemm(x, W^T) + b, W of shape (cout, cin) like PyTorch."""
        w = self.const("fc_w", self.normal((cout, cin), np.sqrt(gain / cin)))
        b = self.const("fc_b", self.normal((cout,), 0.05))
        return self.op("Gemm", [x, w, b], transB=1)

    # result ---------------------------------------------------------------------------------
    def model(self, doc: str = "") -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                              producer_name="tensorforge_onnx.models", doc_string=doc)
        m.ir_version = 8  # readable by onnxruntime releases of the last few years
        return m
