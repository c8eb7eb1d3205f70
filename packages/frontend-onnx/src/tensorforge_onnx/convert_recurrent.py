"""Converters for the stateful sequence ops of recent opsets: LinearAttention (the
recurrence unrolled over the static sequence length, state in float32),
CausalConvWithState (a depthwise causal conv over the past state and the input),
TensorScatter (a KV-cache write at run-time positions), and BitCast."""

from __future__ import annotations

import numpy as np
import onnx

from tensorforge.graph import Value

from .context import Context, np_dtype
from .convert_attention import _heads_first, _repeat_heads
from .dispatch import converter

Node = onnx.NodeProto


def _step(ctx: Context, x: Value, t: int) -> Value:
    """x[:, :, t:t+1, :] of a (B, H, T, D) value."""
    b, h, _, d = x.shape
    return ctx.emit("strided_slice", x, begin=(0, 0, t, 0), step=(1, 1, 1, 1),
                    size=(b, h, 1, d))


@converter("LinearAttention", versions=(27, 28))
def linear_attention(ctx: Context, node: Node) -> list[Value]:
    q, k, v, past, decay, beta = (ctx.get(node, i) for i in range(6))
    at = ctx.attrs(node)
    qh, kvh = int(at["q_num_heads"]), int(at["kv_num_heads"])
    rule = at.get("update_rule", "gated_delta")
    gating, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    out_dtype = q.dtype
    b, t, _ = q.shape
    dk, dv = q.shape[2] // qh, v.shape[2] // kvh
    f32 = "float32"
    q4, k4, v4 = (ctx.cast(_heads_first(ctx, x, n), f32) for x, n in ((q, qh), (k, kvh),
                                                                      (v, kvh)))
    if gating:
        last = decay.shape[-1]
        decay = ctx.cast(_heads_first(ctx, decay if last != kvh else ctx.reshape(
            decay, (b, t, kvh)), kvh), f32)  # (B, H_kv, T, d_k or 1)
    if delta:
        beta = ctx.cast(_heads_first(ctx, beta, beta.shape[-1]), f32)  # (B, H_kv|1, T, 1)
    state = ctx.cast(past, f32) if past is not None else ctx.constant(
        np.zeros((b, kvh, dk, dv), f32), "state")
    scale = float(at.get("scale", 0.0)) or 1 / np.sqrt(dk)
    sc = ctx.constant(np.array(scale, f32), "scale")
    outs = []
    for i in range(t):
        q_t, k_t, v_t = _step(ctx, q4, i), _step(ctx, k4, i), _step(ctx, v4, i)
        if gating:  # S *= exp(g): (B, H, 1, d_k|1) -> (B, H, d_k|1, 1), broadcast over d_v
            g = ctx.emit("exp", ctx.emit("transpose", _step(ctx, decay, i), perm=(0, 1, 3, 2)))
            state = ctx.emit("mul", state, g)
        if delta:  # v <- beta * (v - k S)
            retrieved = ctx.emit("matmul", k_t, state)
            v_t = ctx.emit("mul", _step(ctx, beta, i), ctx.emit("sub", v_t, retrieved))
        kt = ctx.emit("transpose", k_t, perm=(0, 1, 3, 2))
        state = ctx.emit("add", state, ctx.emit("matmul", kt, v_t))
        read = _repeat_heads(ctx, state, qh // kvh) if qh != kvh else state
        outs.append(ctx.emit("mul", ctx.emit("matmul", q_t, read), sc))
    y = outs[0] if t == 1 else ctx.emit_multi("concat", outs, {"axis": 2})[0]
    y = ctx.reshape(ctx.emit("transpose", y, perm=(0, 2, 1, 3)), (b, t, qh * dv))
    present = ctx.cast(state, past.dtype if past is not None else out_dtype)
    return [ctx.cast(y, out_dtype), present][:len(node.output)]


@converter("CausalConvWithState", versions=(27, 28))
def causal_conv_with_state(ctx: Context, node: Node) -> list[Value]:
    x, w, bias, past = (ctx.get(node, i) for i in range(4))
    b, c, length = x.shape
    k = w.shape[-1]
    if past is None:
        past = ctx.constant(np.zeros((b, c, k - 1), x.dtype), "past")
    full = x if k == 1 else ctx.emit_multi("concat", [past, x], {"axis": 2})[0]
    total = full.shape[2]
    y = ctx.emit_multi("conv2d", [ctx.reshape(full, (b, c, 1, total)),
                                  ctx.reshape(w, (c, 1, 1, k))],
                       {"strides": (1, 1), "dilations": (1, 1), "pads": (0, 0, 0, 0),
                        "groups": c})[0]
    y = ctx.reshape(y, (b, c, length))
    if bias is not None:
        y = ctx.emit("add", y, ctx.reshape(bias, (c, 1)))
    if ctx.attrs(node).get("activation", "none") in ("silu", "swish"):
        y = ctx.emit("swish", y, alpha=1.0)
    present = ctx.emit("strided_slice", full, begin=(0, 0, total - (k - 1)), step=(1, 1, 1),
                       size=(b, c, k - 1))
    return [y, present][:len(node.output)]


@converter("TensorScatter", versions=(24, 28))
def tensor_scatter(ctx: Context, node: Node) -> list[Value]:
    past, update, idx = ctx.get(node, 0), ctx.get(node, 1), ctx.get(node, 2)
    at = ctx.attrs(node)
    axis = int(at.get("axis", -2)) % len(past.shape)
    ins = [past, update] + ([idx] if idx is not None else [])
    return [ctx.emit_multi("cache_update", ins, {"axis": axis,
                                                 "mode": at.get("mode", "linear")})[0]]


@converter("BitCast", versions=(26, 28))
def bitcast(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    to = np_dtype(int(ctx.attrs(node)["to"]))
    if np.dtype(to).itemsize != np.dtype(x.dtype).itemsize:
        raise ctx.fail(node, f"a bitcast of {x.dtype} to {to}", "the widths must match")
    return [ctx.emit("bitcast", x, to=to)]
