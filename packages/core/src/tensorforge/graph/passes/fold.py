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
    bias; any other batch_norm with constant parameters becomes `x * scale + shift`."""
    consumers = g.consumers()
    outputs = {id(v) for v in g.outputs}
    new_nodes: list[Node] = []
    for n in g.nodes:
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
            w = conv.inputs[1].const
            wf = (w.astype("float64") * scale.reshape(-1, 1, 1, 1)).astype(w.dtype)
            b = conv.inputs[2].const.astype("float64") if len(conv.inputs) > 2 else 0.0
            bias = (b * scale + shift).astype(dtype)
            conv.inputs = [conv.inputs[0], g.add_const(f"{conv.name}_w_bn", wf),
                           g.add_const(f"{conv.name}_b_bn", bias)]
            replace_uses(g, n.outputs[0], x)
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
