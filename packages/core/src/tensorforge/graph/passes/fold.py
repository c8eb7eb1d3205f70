"""Folding passes: batch norm into the preceding convolution (or into one scale and shift),
and constant subgraphs evaluated with the ops' numpy references."""

from __future__ import annotations

import os

import numpy as np

from ...runtime.transforms import TRANSFORMS
from ..ir import Graph, Node, Value
from ..registry import get_op
from .simplify import make_node, replace_uses

#: Constant folding does not materialize results larger than this many bytes unless they
#: are no larger than the constant inputs they replace (a broadcast of a scalar to a huge
#: tensor stays a kernel). Environment: TENSORFORGE_FOLD_LIMIT_BYTES.
FOLD_LIMIT_BYTES = int(os.environ.get("TENSORFORGE_FOLD_LIMIT_BYTES", 16 << 20))


def _bn_scale_shift(n: Node) -> tuple[np.ndarray, np.ndarray]:
    _, gamma, beta, mean, var = (v.const for v in n.inputs)
    eps = float(n.attrs.get("epsilon", 1e-5))
    scale = gamma.astype("float64") / np.sqrt(var.astype("float64") + eps)
    shift = beta.astype("float64") - mean.astype("float64") * scale
    return scale, shift


def fold_batch_norm(g: Graph) -> Graph:
    """batch_norm after a conv2d with constant weights is folded into the conv weights and
    bias; any other batch_norm with constant parameters becomes `x * scale + shift`. A
    per-channel constant `mul`, `add` or `sub` right after a conv2d or dense with constant
    weights (batch norm as Keras 3 exports it: `conv * s + t`) is folded the same way."""
    consumers = g.consumers()
    outputs = {id(v) for v in g.outputs}
    new_nodes: list[Node] = []
    for n in g.nodes:
        if n.op in ("mul", "add", "sub"):
            if not _fold_affine(g, n, consumers, outputs):
                new_nodes.append(n)
            continue
        if n.op != "batch_norm" or not all(v.is_const for v in n.inputs[1:]):
            new_nodes.append(n)
            continue
        x = n.inputs[0]
        dtype = x.dtype
        scale, shift = _bn_scale_shift(n)
        conv = x.producer
        if (conv is not None and conv.op == "conv2d" and conv.inputs[1].is_const
                and all(v.is_const for v in conv.inputs[2:])
                and len(consumers.get(x, [])) == 1 and id(x) not in outputs):
            _scale_shift_into(g, conv, scale, shift)
            _forward(g, consumers, outputs, n.outputs[0], x)
            continue
        bshape = (-1,) + (1,) * (len(x.shape) - 2)
        s = g.add_const(f"{n.name}_scale", scale.astype(dtype).reshape(bshape))
        t = g.add_const(f"{n.name}_shift", shift.astype(dtype).reshape(bshape))
        mul = make_node(g, "mul", [x, s], name=f"{n.name}_mul")
        add = make_node(g, "add", [mul.outputs[0], t], name=f"{n.name}_add")
        new_nodes += [mul, add]
        replace_uses(g, n.outputs[0], add.outputs[0])
    g.nodes = new_nodes
    return g


def _scale_shift_into(g: Graph, prod: Node, scale: np.ndarray | float,
                      shift: np.ndarray | float) -> None:
    """Make `prod` (conv2d or dense, constant weights and bias) compute `prod * scale + shift`
    per output channel: the weights' axis 0 is the output channel for both."""
    w = prod.inputs[1].const
    channels = w.shape[0]
    scale = np.broadcast_to(np.asarray(scale, "float64"), (channels,))
    shift = np.broadcast_to(np.asarray(shift, "float64"), (channels,))
    wf = (w.astype("float64") * scale.reshape((-1,) + (1,) * (w.ndim - 1))).astype(w.dtype)
    b = prod.inputs[2].const.astype("float64") if len(prod.inputs) > 2 else 0.0
    bias = (b * scale + shift).astype(prod.outputs[0].dtype)
    prod.inputs = [prod.inputs[0], g.add_const(f"{prod.name}_w_bn", wf),
                   g.add_const(f"{prod.name}_b_bn", bias)]


def _per_channel(c: np.ndarray, out_shape: tuple[int, ...]) -> np.ndarray | None:
    """`c` as one value per channel (axis 1) of a tensor of `out_shape`, when `c` broadcasts
    to it along the channel axis only (shape (C,1,1), (1,C,1,1), (1,), scalar; (C,) for a
    dense output); else None."""
    if c.ndim > len(out_shape):
        return None
    shape = (1,) * (len(out_shape) - c.ndim) + c.shape
    if any(d != 1 for k, d in enumerate(shape) if k != 1) or shape[1] not in (1, out_shape[1]):
        return None
    return c.reshape(-1)


def _fold_affine(g: Graph, n: Node, consumers: dict[Value, list[Node]], outputs: set[int]
                 ) -> bool:
    """Fold `n` (mul / add / sub of a constant and a conv2d or dense output) into the
    producer; True when it did (the caller drops `n`)."""
    a, b = n.inputs
    x, c, c_first = (a, b, False) if b.is_const else (b, a, True)
    prod = x.producer
    if (not c.is_const or x.is_const or prod is None or prod.op not in ("conv2d", "dense")
            or not all(v.is_const for v in prod.inputs[1:]) or id(x) in outputs
            or len(consumers.get(x, [])) != 1 or n.outputs[0].shape != x.shape
            or n.outputs[0].dtype != x.dtype or (n.op == "sub" and c_first)):
        return False
    per = _per_channel(c.const, x.shape)
    if per is None:
        return False
    per = per.astype("float64")
    if n.op == "mul":
        _scale_shift_into(g, prod, per, 0.0)
    else:
        _scale_shift_into(g, prod, 1.0, per if n.op == "add" else -per)
    _forward(g, consumers, outputs, n.outputs[0], x)
    return True


def _forward(g: Graph, consumers: dict[Value, list[Node]], outputs: set[int], old: Value,
             new: Value) -> None:
    """Readers of `old` read `new` (which had one reader, the node being dropped)."""
    replace_uses(g, old, new)
    consumers[new] = consumers.pop(old, [])
    if id(old) in outputs:
        outputs.add(id(new))


def fold_constants(g: Graph, limit_bytes: int | None = None) -> Graph:
    """Evaluate nodes whose inputs are all constants (numpy references); their outputs become
    constants. Results over `limit_bytes` that are larger than their inputs stay nodes."""
    limit = FOLD_LIMIT_BYTES if limit_bytes is None else limit_bytes
    keep: list[Node] = []
    for n in g.nodes:
        if not n.inputs or not all(v.is_const for v in n.inputs):
            keep.append(n)
            continue
        out_bytes = sum(o.nbytes for o in n.outputs)
        in_bytes = sum(v.nbytes for v in n.inputs)
        if out_bytes > limit and out_bytes > in_bytes:
            keep.append(n)
            continue
        results = get_op(n.op).reference([v.const for v in n.inputs], n.attrs)
        for o, r in zip(n.outputs, results):
            arr = np.array(np.asarray(r).astype(o.dtype, copy=False).reshape(o.shape), order="C")
            c = Value(o.name, o.shape, o.dtype, const=arr)
            if n.op in TRANSFORMS and len(n.inputs) == 1:  # a package can redo it at load
                c.origin = (n.op, dict(n.attrs), n.inputs[0])
            replace_uses(g, o, c)
    g.nodes = keep
    return g
