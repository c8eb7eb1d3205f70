"""The PyTorch baseline of the end-to-end benchmark: an ONNX model run eagerly by PyTorch.

There is no ONNX importer in PyTorch, so each node is mapped to the `torch` call a PyTorch
model would make (conv2d, batch_norm, lstm, ...); weights become tensors once, LSTM weights are
reordered to PyTorch's gate order once. This is what `model.eval()` in eager mode costs: no
batch-norm folding, no fusion, one framework call per op. Covers the ops of the benchmark
models (`tensorforge_onnx.models`); anything else raises `NotImplementedError`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Step = Callable[[list[Any]], list[Any]]


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _pads(p: list[int] | None, n: int = 2) -> tuple[int, ...]:
    p = list(p or [0] * (2 * n))
    if p[:n] != p[n:]:
        raise NotImplementedError(f"asymmetric pads {p}")
    return tuple(p[:n])


class TorchOnnxModel:
    """`TorchOnnxModel(onnx_model).runner(inputs)() -> list of numpy outputs`."""

    def __init__(self, model: Any):
        import torch
        from onnx import numpy_helper

        self.torch = torch
        g = model.graph
        self.consts: dict[str, Any] = {
            t.name: torch.from_numpy(np.array(numpy_helper.to_array(t))) for t in g.initializer}
        self.inputs = [v.name for v in g.input if v.name not in self.consts]
        self.outputs = [v.name for v in g.output]
        self.steps: list[tuple[list[str], list[str], Step]] = []
        for node in g.node:
            if node.op_type == "Constant":
                self.consts[node.output[0]] = torch.from_numpy(
                    np.array(numpy_helper.to_array(node.attribute[0].t)))
                continue
            self.steps.append((list(node.input), list(node.output), self._step(node)))

    def _step(self, node: Any) -> Step:
        import torch
        import torch.nn.functional as F

        a, op = _attrs(node), node.op_type
        if op == "Conv":
            s, p, d = tuple(a.get("strides", (1, 1))), _pads(a.get("pads")), \
                tuple(a.get("dilations", (1, 1)))
            return lambda x: [F.conv2d(x[0], x[1], x[2] if len(x) > 2 else None, s, p, d,
                                       a.get("group", 1))]
        if op == "ConvTranspose":
            s, p = tuple(a.get("strides", (1, 1))), _pads(a.get("pads"))
            return lambda x: [F.conv_transpose2d(x[0], x[1], x[2] if len(x) > 2 else None,
                                                 s, p, groups=a.get("group", 1))]
        if op == "BatchNormalization":
            eps = a.get("epsilon", 1e-5)
            return lambda x: [F.batch_norm(x[0], x[3], x[4], x[1], x[2], False, 0.0, eps)]
        if op == "MaxPool":
            k, s = tuple(a["kernel_shape"]), tuple(a.get("strides", (1, 1)))
            p, ceil = _pads(a.get("pads")), bool(a.get("ceil_mode", 0))
            return lambda x: [F.max_pool2d(x[0], k, s, p, ceil_mode=ceil)]
        if op == "Gemm":
            if a.get("transA", 0) or not a.get("transB", 0) or a.get("alpha", 1.0) != 1.0:
                raise NotImplementedError("Gemm other than A @ B.T + C")
            return lambda x: [F.linear(x[0], x[1], x[2] if len(x) > 2 else None)]
        if op == "LSTM":
            return self._lstm(node, a)
        transformer = _transformer_step(op, a, len(node.output))
        if transformer is not None:
            return transformer
        simple: dict[str, Step] = {
            "Relu": lambda x: [torch.relu(x[0])],
            "Tanh": lambda x: [torch.tanh(x[0])],
            "Sigmoid": lambda x: [torch.sigmoid(x[0])],
            "Add": lambda x: [x[0] + x[1]],
            "Mul": lambda x: [x[0] * x[1]],
            "MatMul": lambda x: [torch.matmul(x[0], x[1])],
            "Clip": lambda x: [torch.clamp(x[0], float(x[1]), float(x[2]))],
            "GlobalAveragePool": lambda x: [F.adaptive_avg_pool2d(x[0], 1)],
            "Flatten": lambda x: [torch.flatten(x[0], a.get("axis", 1))],
            "Concat": lambda x: [torch.cat(x, a["axis"])],
            "Gather": lambda x: [torch.index_select(x[0], a.get("axis", 0),
                                                    x[1].reshape(-1)).reshape(
                *x[0].shape[:a.get("axis", 0)], *x[1].shape,
                *x[0].shape[a.get("axis", 0) + 1:])],
            "Squeeze": lambda x: [x[0].squeeze(int(x[1][0])) if len(x) > 1 else x[0].squeeze()],
            "Reshape": lambda x: [x[0].reshape([int(v) for v in x[1]])],
            "Softmax": lambda x: [torch.softmax(x[0], a.get("axis", -1))],
        }
        if op not in simple:
            raise NotImplementedError(f"the PyTorch baseline has no mapping for ONNX {op}")
        return simple[op]

    def _lstm(self, node: Any, a: dict[str, Any]) -> Step:
        """ONNX LSTM (gates i, o, f, c; one direction) as torch.lstm (gates i, f, g, o)."""
        torch = self.torch
        if a.get("direction", "forward") != "forward" or len(node.input) > 4:
            raise NotImplementedError("LSTM other than forward without initial states")
        h = a["hidden_size"]
        order = [0, 2, 3, 1]

        def gates(t: Any) -> Any:
            return torch.cat([t[i * h:(i + 1) * h] for i in order]).contiguous()

        w, r, b = (self.consts[n][0] for n in node.input[1:4])
        params = [gates(w), gates(r), gates(b[:4 * h]), gates(b[4 * h:])]

        def run(x: list[Any]) -> list[Any]:
            seq = x[0]
            zeros = seq.new_zeros(1, seq.shape[1], h)
            y, _, _ = torch.lstm(seq, (zeros, zeros), params, True, 1, 0.0, False, False,
                                 False)
            return [y.unsqueeze(1)]

        return run

    def runner(self, inputs: dict[str, np.ndarray]) -> Callable[[], list[np.ndarray]]:
        """A callable running the model on `inputs` (converted once) in inference mode."""
        torch = self.torch
        feeds = {k: torch.from_numpy(np.ascontiguousarray(inputs[k])) for k in self.inputs}

        def run() -> list[np.ndarray]:
            env = dict(self.consts)
            env.update(feeds)
            with torch.inference_mode():
                for ins, outs, fn in self.steps:
                    for name, val in zip(outs, fn([env[i] for i in ins if i])):
                        env[name] = val
                return [env[o].numpy() for o in self.outputs]

        return run


#: ONNX TensorProto element types -> torch dtype names (the casts the zoo's models make)
_CAST = {1: "float32", 6: "int32", 7: "int64", 9: "bool", 11: "float64"}


def _transformer_step(op: str, a: dict[str, Any], n_out: int) -> Step | None:
    """The ops the zoo's transformers add (LayerNorm, GELU's pieces, masks, head reshuffles),
    each the call a PyTorch model makes; None for others."""
    import torch
    import torch.nn.functional as F

    def layer_norm(x: list[Any]) -> list[Any]:
        axis = a.get("axis", -1) % x[0].dim()
        return [F.layer_norm(x[0], x[0].shape[axis:], x[1], x[2] if len(x) > 2 else None,
                             a.get("epsilon", 1e-5))]

    def split(x: list[Any]) -> list[Any]:
        axis = a.get("axis", 0)
        if len(x) > 1:
            return list(torch.split(x[0], [int(v) for v in x[1]], axis))
        n = a.get("num_outputs", n_out)
        return list(torch.split(x[0], -(-x[0].shape[axis] // n), axis))

    def unsqueeze(x: list[Any]) -> list[Any]:
        y = x[0]
        for ax in sorted(int(v) for v in x[1]):
            y = y.unsqueeze(ax)
        return [y]

    steps: dict[str, Step] = {
        "LayerNormalization": layer_norm,
        "Split": split,
        "Unsqueeze": unsqueeze,
        "Sub": lambda x: [x[0] - x[1]],
        "Div": lambda x: [x[0] / x[1]],
        "Pow": lambda x: [torch.pow(x[0], x[1])],
        "Erf": lambda x: [torch.erf(x[0])],
        "Where": lambda x: [torch.where(x[0], x[1], x[2])],
        "Transpose": lambda x: [x[0].permute(*a["perm"])],
        "Cast": lambda x: [x[0].to(getattr(torch, _CAST[a["to"]]))],
        "Identity": lambda x: [x[0]],
    }
    return steps.get(op)
