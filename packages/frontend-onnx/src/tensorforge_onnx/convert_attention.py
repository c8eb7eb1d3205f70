"""Converters for the transformer ops of the default domain: Attention (23-25),
RotaryEmbedding, RMSNormalization.

Attention becomes graph ops (scaled Q K^T, masks as additive biases, softmax, the product
with V) following onnx's reference: masks that depend only on shapes (causal, sliding
window) are constants; masks from inputs (attn_mask, nonpad_kv_seqlen) are computed at run
time. A fully masked query row gives zeros, not NaN."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from tensorforge.graph import Value

from .context import Context, np_dtype
from .dispatch import converter

Node = onnx.NodeProto

NEG_INF = float("-inf")


def _heads_first(ctx: Context, x: Value, heads: int) -> Value:
    """(B, S, H*D) -> (B, H, S, D)."""
    b, s, hidden = x.shape
    x = ctx.reshape(x, (b, s, heads, hidden // heads))
    return ctx.emit("transpose", x, perm=(0, 2, 1, 3))


def _repeat_heads(ctx: Context, x: Value, reps: int) -> Value:
    """(B, H, S, D) -> (B, H*reps, S, D), each head repeated `reps` times in place."""
    b, h, s, d = x.shape
    x = ctx.reshape(x, (b, h, 1, s, d))
    x = ctx.emit("broadcast_to", x, shape=(b, h, reps, s, d))
    return ctx.reshape(x, (b, h * reps, s, d))


def _bias_from_mask(ctx: Context, mask: Value, dtype: str) -> Value:
    """A bool mask (True: attend) as an additive bias (0 / -inf); a float mask as is."""
    if mask.dtype != "bool":
        return ctx.cast(mask, dtype)
    zero = ctx.constant(np.zeros((), dtype), "zero")
    ninf = ctx.constant(np.array(NEG_INF, dtype), "ninf")
    return ctx.emit("where", mask, zero, ninf)


def _frontier(ctx: Context, q_len: int, kv_len: int, offset: Value | int, dtype: str,
              allowed_fn: Any) -> Value:
    """The additive bias of a mask `allowed_fn(diff)` on diff = i + offset - j (i query,
    j key): a constant (q, kv) for a scalar offset, else (B, 1, q, kv) from the per-batch
    offsets (a run-time value)."""
    i = np.arange(q_len).reshape(q_len, 1)
    j = np.arange(kv_len).reshape(1, kv_len)
    if isinstance(offset, int):
        allowed = allowed_fn(i + offset - j)
        return ctx.constant(np.where(allowed, 0, NEG_INF).astype(dtype), "mask")
    b = offset.shape[0]
    off = ctx.reshape(ctx.cast(offset, "int64"), (b, 1, 1, 1))
    diff = ctx.emit("add", off, ctx.constant((i - j).reshape(1, 1, q_len, kv_len), "diff"))
    allowed = allowed_fn(diff, ctx)
    zero = ctx.constant(np.zeros((), dtype), "zero")
    ninf = ctx.constant(np.array(NEG_INF, dtype), "ninf")
    return ctx.emit("where", allowed, zero, ninf)


def _causal(diff: Any, ctx: Context | None = None) -> Any:
    if ctx is None:
        return diff >= 0
    return ctx.emit("greater_equal", diff, ctx.constant(np.zeros((), "int64"), "zero"))


def _window(left: int, right: int) -> Any:
    def allowed(diff: Any, ctx: Context | None = None) -> Any:
        if ctx is None:
            ok = np.ones(diff.shape, bool)
            if left >= 0:
                ok &= diff <= left
            if right >= 0:
                ok &= -diff <= right
            return ok
        ok = None
        if left >= 0:
            ok = ctx.emit("less_equal", diff, ctx.constant(np.array(left, "int64"), "left"))
        if right >= 0:
            r = ctx.emit("greater_equal", diff, ctx.constant(np.array(-right, "int64"), "r"))
            ok = r if ok is None else ctx.emit("logical_and", ok, r)
        return ok

    return allowed


@converter("Attention", versions=(23, 25))
def attention(ctx: Context, node: Node) -> list[Value]:
    q, k, v = ctx.get(node, 0), ctx.get(node, 1), ctx.get(node, 2)
    mask, past_k, past_v, nonpad = (ctx.get(node, i) for i in range(3, 7))
    at = ctx.attrs(node)
    dtype = q.dtype
    rank3 = len(q.shape) == 3
    if rank3:
        qh, kvh = int(at["q_num_heads"]), int(at["kv_num_heads"])
        q, k, v = _heads_first(ctx, q, qh), _heads_first(ctx, k, kvh), _heads_first(ctx, v, kvh)
    scale = at.get("scale")
    scale = 1 / np.sqrt(q.shape[3]) if scale is None else float(scale)
    s = ctx.constant(np.array(np.sqrt(scale), dtype), "scale")
    if past_k is not None:
        k = ctx.emit_multi("concat", [past_k, k], {"axis": 2})[0]
        v = ctx.emit_multi("concat", [past_v, v], {"axis": 2})[0]
    present_k, present_v = k, v
    q_len, kv_len = q.shape[2], k.shape[2]

    if mask is not None and mask.shape[-1] < kv_len:
        pad = [(0, 0)] * (len(mask.shape) - 1) + [(0, kv_len - mask.shape[-1])]
        mask = ctx.emit("pad", mask, pads=tuple(pad), mode="constant",
                        value=False if mask.dtype == "bool" else NEG_INF)
    left, right = int(at.get("left_window_size", -1)), int(at.get("right_window_size", -1))
    windowed = left >= 0 or right >= 0
    zeros = ctx.constant(np.zeros((q_len, kv_len), dtype), "zeros")
    if past_k is None and nonpad is not None:
        offset: Value | int = ctx.emit("sub", ctx.cast(nonpad, "int64"),
                                       ctx.constant(np.array(q_len, "int64"), "qlen"))
    else:
        offset = past_k.shape[2] if past_k is not None else 0
    if at.get("is_causal", 0):
        base = zeros if mask is None else _bias_from_mask(ctx, mask, dtype)
        if windowed:
            base = ctx.emit("add", zeros, base)
        bias = ctx.emit("add", base, _frontier(ctx, q_len, kv_len, offset, dtype, _causal))
    elif mask is not None:
        bias = ctx.emit("add", zeros, _bias_from_mask(ctx, mask, dtype))
    else:
        bias = zeros
    if windowed:
        bias = ctx.emit("add", ctx.emit("add", zeros, bias),
                        _frontier(ctx, q_len, kv_len, offset, dtype, _window(left, right)))
    if nonpad is not None:
        b = nonpad.shape[0]
        pos = ctx.constant(np.arange(kv_len).reshape(1, 1, 1, kv_len), "pos")
        valid = ctx.emit("less", pos, ctx.reshape(ctx.cast(nonpad, "int64"), (b, 1, 1, 1)))
        bias = ctx.emit("add", bias, _bias_from_mask(ctx, valid, dtype))

    if q.shape[1] != k.shape[1] and q.shape[1] % k.shape[1] == 0:
        reps = q.shape[1] // k.shape[1]
        k, v = _repeat_heads(ctx, k, reps), _repeat_heads(ctx, v, reps)
    kt = ctx.emit("transpose", ctx.emit("mul", k, s), perm=(0, 1, 3, 2))
    qk = ctx.emit("matmul", ctx.emit("mul", q, s), kt)
    softcap = float(at.get("softcap", 0.0))
    if softcap > 0:
        c = ctx.constant(np.array(softcap, dtype), "softcap")
        qk = ctx.emit("mul", ctx.emit("tanh", ctx.emit("div", qk, c)), c)
    with_bias = ctx.emit("add", qk, bias)
    mode = int(at.get("qk_matmul_output_mode", 0))
    qk_out = with_bias if mode == 2 else qk
    if "softmax_precision" in at:
        with_bias = ctx.cast(with_bias, np_dtype(int(at["softmax_precision"])))
    p = ctx.emit("softmax", with_bias, axis=len(with_bias.shape) - 1)
    # a row whose bias is all -inf attends nothing: zeros, not the NaN of softmax
    row_max = ctx.emit("reduce_max", bias, axes=(len(bias.shape) - 1,), keepdims=True)
    masked = ctx.emit("isinf", row_max, detect_positive=0, detect_negative=1)
    p = ctx.emit("where", masked, ctx.constant(np.zeros((), p.dtype), "zero"), p)
    if mode == 3:
        qk_out = p
    p = ctx.cast(p, dtype)
    y = ctx.emit("matmul", p, v)
    if rank3:
        y = ctx.emit("transpose", y, perm=(0, 2, 1, 3))
        y = ctx.reshape(y, (y.shape[0], y.shape[1], y.shape[2] * y.shape[3]))
    outs = [y, present_k, present_v, ctx.cast(qk_out, dtype)]
    return outs[:len(node.output)]


def _slice_last(ctx: Context, x: Value, begin: int, size: int, step: int = 1) -> Value:
    nd = len(x.shape)
    if begin == 0 and size == x.shape[-1] and step == 1:
        return x
    return ctx.emit("strided_slice", x, begin=(0,) * (nd - 1) + (begin,),
                    step=(1,) * (nd - 1) + (step,), size=tuple(x.shape[:-1]) + (size,))


@converter("RotaryEmbedding", versions=(23, 28))
def rotary_embedding(ctx: Context, node: Node) -> list[Value]:
    x, cos, sin, pos = (ctx.get(node, i) for i in range(4))
    at = ctx.attrs(node)
    shape = x.shape
    if len(shape) == 4:  # (B, H, S, D) -> (B, S, H, D)
        x = ctx.emit("transpose", x, perm=(0, 2, 1, 3))
    else:
        heads = int(at["num_heads"])
        x = ctx.reshape(x, (shape[0], shape[1], heads, shape[2] // heads))
    b, s, h, d = x.shape
    rot = int(at.get("rotary_embedding_dim", 0)) or d
    half = rot // 2
    if pos is not None:  # the caches' rows at each token's position (read at run time)
        cos = ctx.emit("take", cos, pos, axis=0)
        sin = ctx.emit("take", sin, pos, axis=0)
    cos = ctx.reshape(cos, (cos.shape[0], cos.shape[1], 1, half) if len(cos.shape) == 3
                      else (1, cos.shape[0], 1, half))
    sin = ctx.reshape(sin, cos.shape)
    x_rot = _slice_last(ctx, x, 0, rot)
    if at.get("interleaved", 0):
        x1, x2 = _slice_last(ctx, x_rot, 0, half, 2), _slice_last(ctx, x_rot, 1, half, 2)
    else:
        x1, x2 = _slice_last(ctx, x_rot, 0, half), _slice_last(ctx, x_rot, half, half)
    real = ctx.emit("sub", ctx.emit("mul", cos, x1), ctx.emit("mul", sin, x2))
    imag = ctx.emit("add", ctx.emit("mul", sin, x1), ctx.emit("mul", cos, x2))
    if at.get("interleaved", 0):
        pair = (b, s, h, half, 1)
        y = ctx.emit_multi("concat", [ctx.reshape(real, pair), ctx.reshape(imag, pair)],
                           {"axis": 4})[0]
        y = ctx.reshape(y, (b, s, h, rot))
    else:
        y = ctx.emit_multi("concat", [real, imag], {"axis": 3})[0]
    if rot < d:
        y = ctx.emit_multi("concat", [y, _slice_last(ctx, x, rot, d - rot)], {"axis": 3})[0]
    if len(shape) == 4:
        return [ctx.emit("transpose", y, perm=(0, 2, 1, 3))]
    return [ctx.reshape(y, shape)]
