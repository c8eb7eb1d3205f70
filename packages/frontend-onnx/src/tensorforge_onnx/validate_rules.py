"""Per-op rules ONNX's schema inference does not check but the ONNX spec (and ONNX Runtime,
at run time) requires: parameter tensors of a fixed rank (Reshape's shape, axes, pads...),
boolean attributes that are 0 or 1, operands that must broadcast one way only (Gemm's C,
LayerNormalization's scale and bias), data of rank 3 and more for pools and convolutions,
an explicit `hidden_size` on recurrent ops. Each broken rule is an `InvalidModelError`
naming the node; without them the frontend would quietly compute something ONNX Runtime
refuses to.

`check_rules(nodes, shapes, label)` runs them; `shapes` maps a value name to its shape as
ONNX's inference left it (None: unknown rank; a dim is None when unknown)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import onnx

from .context import node_label
from .errors import InvalidModelError

__all__ = ["check_rules"]

Shape = tuple[int | None, ...] | None
ShapeOf = Callable[[str], Shape]

#: (op_type, input index, ONNX opset since which the input exists) that must be 1-D.
_VECTOR_INPUTS: dict[str, tuple[int, ...]] = {
    "Reshape": (1,), "Expand": (1,), "Tile": (1,), "ConstantOfShape": (0,), "Pad": (1, 3),
    "Slice": (1, 2, 3, 4), "Squeeze": (1,), "Unsqueeze": (1,), "Split": (1,),
    "ReduceSum": (1,), "ReduceMean": (1,), "ReduceMax": (1,), "ReduceMin": (1,),
    "ReduceProd": (1,), "ReduceL1": (1,), "ReduceL2": (1,), "ReduceLogSum": (1,),
    "ReduceLogSumExp": (1,), "ReduceSumSquare": (1,), "Resize": (1, 2, 3), "TopK": (1,),
}
#: Inputs that must hold one value (rank 0, or shape [1]).
_SCALAR_INPUTS: dict[str, tuple[int, ...]] = {
    "Clip": (1, 2), "Range": (0, 1, 2), "OneHot": (1,), "Pad": (2,),
}
_BOOL_ATTRS = ("keepdims", "ceil_mode", "count_include_pad", "transA", "transB",
               "noop_with_empty_axes", "select_last_index", "allowzero", "training_mode",
               "input_forget", "layout", "exclusive", "reverse", "detect_positive",
               "detect_negative", "sorted", "largest", "antialias", "exclude_outside")
_SPATIAL_OPS = ("Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool",
                "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "InstanceNormalization")
_RNN_OPS = ("LSTM", "GRU", "RNN")


def _fail(n: onnx.NodeProto, label: str, what: str) -> InvalidModelError:
    return InvalidModelError(f"{node_label(n)} in {label}: {what}. Re-export the model, or "
                             "check it with onnx.checker.check_model(model, full_check=True).")


def _broadcasts_into(small: Shape, big: Shape) -> bool:
    """Whether `small` broadcasts to `big` without changing it (unknown dims pass)."""
    if small is None or big is None:
        return True
    if len(small) > len(big):
        return False
    return all(s is None or b is None or s in (1, b)
               for s, b in zip(reversed(small), reversed(big)))


def _gemm(n: onnx.NodeProto, shape: ShapeOf, at: dict[str, Any]) -> str:
    if len(n.input) < 3 or not n.input[2]:
        return ""
    a, b, c = shape(n.input[0]), shape(n.input[1]), shape(n.input[2])
    if a is None or b is None or len(a) != 2 or len(b) != 2:
        return ""
    m = a[1] if at.get("transA") else a[0]
    k = b[0] if at.get("transB") else b[1]
    if not _broadcasts_into(c, (m, k)):
        return f"C {list(c or ())} does not broadcast to the output [{m}, {k}]"
    return ""


def _layer_norm(n: onnx.NodeProto, shape: ShapeOf, at: dict[str, Any]) -> str:
    x = shape(n.input[0])
    if x is None:
        return ""
    axis = int(at.get("axis", -1))
    if not -len(x) <= axis < len(x):
        return f"axis={axis} is out of range for rank {len(x)}"
    tail = x[axis % len(x):]
    for i, name in ((1, "scale"), (2, "bias")):
        if i < len(n.input) and n.input[i] and not _broadcasts_into(shape(n.input[i]), tail):
            return f"{name} {list(shape(n.input[i]) or ())} does not broadcast to {list(tail)}"
    return ""


_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def _rnn(n: onnx.NodeProto, shape: ShapeOf, at: dict[str, Any]) -> str:
    """hidden_size given; W, R, B (and LSTM's peepholes P) shaped for it."""
    h = int(at.get("hidden_size", 0))
    if h <= 0:
        return "hidden_size must be given and positive"
    d = 2 if at.get("direction", b"forward") in (b"bidirectional", "bidirectional") else 1
    gh = _GATES[n.op_type] * h
    x = shape(n.input[0])
    i = x[-1] if x is not None and len(x) == 3 else None
    want = {1: (d, gh, i), 2: (d, gh, h), 3: (d, 2 * gh), 7: (d, 3 * h)}
    for k, expected in want.items():
        if k >= len(n.input) or not n.input[k] or (k == 7 and n.op_type != "LSTM"):
            continue
        got = shape(n.input[k])
        if got is not None and (len(got) != len(expected) or any(
                g is not None and e is not None and g != e for g, e in zip(got, expected))):
            shown = [e if e is not None else "?" for e in expected]
            return (f"input {k} ({n.input[k]!r}) has shape {list(got)}; with hidden_size={h} "
                    f"it must be {shown}")
    return ""


def _conv_kernel(n: onnx.NodeProto, shape: ShapeOf, at: dict[str, Any]) -> str:
    """kernel_shape, when given, is the weight's spatial shape."""
    w = shape(n.input[1]) if len(n.input) > 1 else None
    k = at.get("kernel_shape")
    if k is None or w is None or len(w) < 3:
        return ""
    if list(k) != [d for d in w[2:]] and None not in w[2:]:
        return f"kernel_shape={list(k)} does not match the weight's {list(w[2:])}"
    return ""


_OP_RULES: dict[str, Callable[[onnx.NodeProto, ShapeOf, dict[str, Any]], str]] = {
    "Gemm": _gemm, "LayerNormalization": _layer_norm, "Conv": _conv_kernel,
    "ConvTranspose": _conv_kernel, **{op: _rnn for op in _RNN_OPS},
}


def check_rules(nodes: list[onnx.NodeProto], shape: ShapeOf, label: str) -> None:
    """The rules of this module, node by node (default-domain nodes only)."""
    for n in nodes:
        if n.domain not in ("", "ai.onnx"):
            continue
        at = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
        for name in _BOOL_ATTRS:
            if name in at and isinstance(at[name], int) and at[name] not in (0, 1):
                raise _fail(n, label, f"attribute {name}={at[name]}; it must be 0 or 1")
        for i in _VECTOR_INPUTS.get(n.op_type, ()):
            s = shape(n.input[i]) if i < len(n.input) and n.input[i] else None
            if s is not None and len(s) != 1:
                raise _fail(n, label, f"input {i} ({n.input[i]!r}) has shape {list(s)}; it "
                            "must be a 1-D tensor")
        for i in _SCALAR_INPUTS.get(n.op_type, ()):
            s = shape(n.input[i]) if i < len(n.input) and n.input[i] else None
            if s is not None and not (len(s) == 0 or tuple(s) == (1,)):
                raise _fail(n, label, f"input {i} ({n.input[i]!r}) has shape {list(s)}; it "
                            "must hold one value")
        if n.op_type in _SPATIAL_OPS and n.input:
            s = shape(n.input[0])
            if s is not None and len(s) < 3:
                raise _fail(n, label, f"input {n.input[0]!r} has shape {list(s)}; "
                            f"{n.op_type} needs (N, C, spatial...) data, rank 3 or more")
        rule = _OP_RULES.get(n.op_type)
        problem = rule(n, shape, at) if rule else ""
        if problem:
            raise _fail(n, label, problem)
