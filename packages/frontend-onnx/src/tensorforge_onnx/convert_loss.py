"""Converters for the loss ops: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
(inference of the loss value; the ops ORT's CPU provider runs, not training-only ops)."""

from __future__ import annotations

import numpy as np
import onnx

from tensorforge.graph import Value

from .context import Context
from .dispatch import converter

Node = onnx.NodeProto


def _nll(ctx: Context, node: Node, logp: Value) -> Value:
    """The reduced loss of log-probabilities `logp` (N, C, d1...) against input 1."""
    target, weight = ctx.get(node, 1), ctx.get(node, 2)
    at = ctx.attrs(node)
    reduction = at.get("reduction", "mean")
    ignore = at.get("ignore_index")
    n, c = logp.shape[:2]
    d = int(np.prod(logp.shape[2:], dtype=np.int64))
    x3 = ctx.reshape(logp, (n, c, d))
    t2 = ctx.reshape(target, (n, d))
    ins = [x3, t2] + ([weight] if weight is not None else [])
    attrs = {} if ignore is None else {"ignore_index": int(ignore)}
    loss, w = ctx.emit_multi("nll_loss", ins, attrs)
    if reduction == "none":
        return ctx.reshape(loss, target.shape)
    total = ctx.emit("reduce_sum", loss, axes=None, keepdims=False)
    if reduction == "sum":
        return total
    if reduction != "mean":
        raise ctx.fail(node, f"reduction={reduction!r}")
    if weight is None and ignore is None:
        return ctx.emit("reduce_mean", loss, axes=None, keepdims=False)
    return ctx.emit("div", total, ctx.emit("reduce_sum", w, axes=None, keepdims=False))


@converter("NegativeLogLikelihoodLoss", versions=(12, 22))
def nll_loss(ctx: Context, node: Node) -> list[Value]:
    return [_nll(ctx, node, ctx.get(node, 0))]


@converter("SoftmaxCrossEntropyLoss", versions=(12, 13))
def softmax_cross_entropy(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    logp = ctx.emit("log_softmax", x, axis=1)
    return [_nll(ctx, node, logp), logp][:len(node.output)]
