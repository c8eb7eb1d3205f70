"""Neural-network ops: convolution, dense/matmul, pooling, normalization, softmax.

Attributes use ONNX's meaning with normalized forms: `strides` and `dilations` are pairs,
`pads` is (top, left, bottom, right)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import ops, te
from ...expr import const
from ...ops import reference as ref
from ..registry import (
    OpPattern,
    TypeList,
    broadcast_shapes,
    register_op,
    require,
    require_rank,
)


def _conv_out(h: int, k: int, s: int, d: int, p0: int, p1: int) -> int:
    return (h + p0 + p1 - d * (k - 1) - 1) // s + 1


def check_window(op: str, in_hw: tuple[int, int], kernel: tuple[int, int],
                 strides: tuple[int, int], dilations: tuple[int, int],
                 pads: tuple[int, int, int, int]) -> None:
    """Positive kernel, strides and dilations, non-negative pads, and a (dilated) kernel no
    larger than the padded input: otherwise a TensorforgeError saying which."""
    require(all(int(k) >= 1 for k in kernel), f"{op}: kernel {list(kernel)} must be positive")
    require(all(int(s) >= 1 for s in strides), f"{op}: strides {list(strides)} must be "
            "positive")
    require(all(int(d) >= 1 for d in dilations), f"{op}: dilations {list(dilations)} must be "
            "positive")
    require(all(int(p) >= 0 for p in pads), f"{op}: pads {list(pads)} must not be negative")
    for axis, (size, k, d, p0, p1) in enumerate(zip(in_hw, kernel, dilations, pads[:2],
                                                    pads[2:])):
        span = d * (k - 1) + 1
        require(span <= size + p0 + p1, f"{op}: the kernel spans {span} along spatial axis "
                f"{axis}, more than the padded input ({size} + {p0} + {p1} pads)")


def _conv2d_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    require_rank(types, 0, 4, "conv2d", "NCHW data")
    require_rank(types, 1, 4, "conv2d", "OIHW weight")
    (n, c, h, w), dt = types[0]
    o, cg, kh, kw = types[1][0]
    sh, sw = at.get("strides", (1, 1))
    dh, dw = at.get("dilations", (1, 1))
    pt, pl, pb, pr = at.get("pads", (0, 0, 0, 0))
    g = at.get("groups", 1)
    require(g >= 1 and o % g == 0, f"conv2d: groups={g} must be at least 1 and divide the "
            f"{o} output channels")
    require(c == cg * g, f"conv2d: input has {c} channels but the weight "
            f"{list(types[1][0])} with groups={g} expects {cg * g}")
    check_window("conv2d", (h, w), (kh, kw), (sh, sw), (dh, dw), (pt, pl, pb, pr))
    if len(types) > 2:
        require(tuple(types[2][0]) == (o,), f"conv2d: bias shape {list(types[2][0])} is not "
                f"[{o}]")
    return [((n, o, _conv_out(h, kh, sh, dh, pt, pb), _conv_out(w, kw, sw, dw, pl, pr)),
             at.get("out_dtype") or dt)]


def _conv2d_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x, w = ins[0], ins[1]
    if at.get("out_dtype"):  # int8 products summed exactly (float64 holds them)
        x, w = x.astype("float64"), w.astype("float64")
    out = ref.conv2d_nchw(x, w, at.get("strides", (1, 1)), at.get("pads", 0),
                          at.get("dilations", (1, 1)), at.get("groups", 1))
    if len(ins) > 2:
        out = out + ins[2].reshape(1, -1, 1, 1)
    return [out.astype(at.get("out_dtype") or ins[0].dtype)]


def _conv2d_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x, w = ins[0], ins[1]
    groups = at.get("groups", 1)
    c = int(x.shape[1].value)
    # float16 accumulates in float32 (as ONNX Runtime and PyTorch do), rounded once
    acc = "float32" if x.dtype == "float16" else None
    acc = at.get("out_dtype") or acc  # int8 x int8 -> int32 (quantized models)
    if groups > 1 and groups == c and int(w.shape[1].value) == 1:
        y = ops.depthwise_conv2d_nchw(x, w, at.get("strides", 1), at.get("pads", 0),
                                      at.get("dilations", 1), out_dtype=acc)
    else:
        y = ops.conv2d_nchw(x, w, at.get("strides", 1), at.get("pads", 0),
                            at.get("dilations", 1), groups, out_dtype=acc)
    if len(ins) > 2:
        b = ins[2]
        y = te.compute(y.shape, lambda n, f, i, j: y[n, f, i, j] + b[f].astype(y.dtype),
                       name="bias_add", tag="broadcast")
    if y.dtype != (at.get("out_dtype") or x.dtype):
        y = te.compute(y.shape, lambda *i: y[i].astype(x.dtype), name="cast", tag="elemwise")
    return [y]


register_op("conv2d", OpPattern.OUT_ELEMWISE_FUSABLE, _conv2d_infer, _conv2d_ref,
            _conv2d_compute, doc="NCHW conv2d (x, w[, bias]); attrs strides, pads, dilations, "
            "groups, out_dtype (the accumulator's and result's type: int8 x int8 -> int32)")


def _matmul_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    a, b = types[0][0], types[1][0]
    require(len(a) >= 1 and len(b) >= 1, f"matmul: scalar operand {list(a)} @ {list(b)}")
    if len(a) == 1:
        a = (1, *a)
    if len(b) == 1:
        b = (*b, 1)
    require(a[-1] == b[-2], f"matmul: inner dimensions differ: {list(types[0][0])} @ "
            f"{list(types[1][0])}")
    batch = broadcast_shapes([a[:-2], b[:-2]])
    shape = (*batch, a[-2], b[-1])
    if len(types[0][0]) == 1:
        shape = (*batch, b[-1])
    if len(types[1][0]) == 1:
        shape = shape[:-1]
    return [(shape, types[0][1])]


def _acc_dtype(dtype: str) -> str | None:
    """float16 products accumulate in float32 (as ONNX Runtime and PyTorch do)."""
    return "float32" if dtype == "float16" else None


def _round_to(y: Any, dtype: str) -> Any:
    if y.dtype == dtype:
        return y
    return te.compute(y.shape, lambda *i: y[i].astype(dtype), name="cast", tag="elemwise")


def _matmul_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    a, b = ins
    acc = _acc_dtype(a.dtype)
    if len(a.shape) == 2 and len(b.shape) == 2:
        return [_round_to(ops.matmul(a, b, out_dtype=acc), a.dtype)]
    shape = out[0][0]
    ka = a.shape[-1]
    k = te.reduce_axis((0, ka), name="k")
    na, nb = len(a.shape), len(b.shape)

    def f(*i):  # type: ignore[no-untyped-def]
        batch = i[: len(i) - 2]

        def bidx(t: Any, nd: int) -> list:
            bt = list(batch[len(batch) - (nd - 2):]) if nd > 2 else []
            return [0 if int(t.shape[d].value) == 1 else bt[d] for d in range(nd - 2)]

        ai = bidx(a, na) + [i[-2], k]
        bi = bidx(b, nb) + [k, i[-1]]
        dt = acc or a.dtype
        return te.sum(a[tuple(ai)].astype(dt) * b[tuple(bi)].astype(dt), axis=k)

    if na < 2 or nb < 2:
        raise NotImplementedError("matmul with a 1-D operand is reshaped by the frontend")
    return [_round_to(te.compute(shape, f, name="batch_matmul", tag="matmul"), a.dtype)]


register_op("matmul", OpPattern.OUT_ELEMWISE_FUSABLE, _matmul_infer,
            lambda ins, at: [np.matmul(ins[0], ins[1])], _matmul_compute,
            doc="numpy matmul semantics (batched, broadcasting batch dims)")


def _dense_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    require_rank(types, 0, 2, "dense", "(M, K) data")
    require_rank(types, 1, 2, "dense", "(N, K) weight")
    (m, k), dt = types[0]
    n, k2 = types[1][0]
    require(k == k2, f"dense: inner dimensions differ: {list(types[0][0])} x "
            f"{list(types[1][0])}^T")
    if len(types) > 2:
        require(tuple(types[2][0]) in ((n,), (1, n), (1,), ()), f"dense: bias shape "
                f"{list(types[2][0])} does not broadcast to [{m}, {n}]")
    return [((m, n), at.get("out_dtype") or dt)]


def _dense_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    od = at.get("out_dtype")
    if od:  # integer products summed exactly
        y = ins[0].astype("int64") @ ins[1].T.astype("int64")
    else:
        y = ins[0] @ ins[1].T
    if len(ins) > 2:
        y = y + ins[2]
    return [y.astype(od or ins[0].dtype)]


def _dense_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    od = at.get("out_dtype")
    y = ops.dense(ins[0], ins[1], out_dtype=od or _acc_dtype(ins[0].dtype))
    if len(ins) > 2:
        b = ins[2]
        y = te.compute(y.shape, lambda i, j: y[i, j] + b[j].astype(y.dtype), name="bias_add",
                       tag="broadcast")
    return [_round_to(y, od or ins[0].dtype)]


register_op("dense", OpPattern.OUT_ELEMWISE_FUSABLE, _dense_infer, _dense_ref,
            _dense_compute, doc="x (M, K) @ W (N, K)^T [+ bias (N,)]; attr out_dtype (the "
            "accumulator's and result's type: int8 x int8 -> int32)")


def _pool_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    require_rank(types, 0, 4, "pool2d", "NCHW data")
    (n, c, h, w), dt = types[0]
    kh, kw = at["kernel"]
    sh, sw = at.get("strides", (1, 1))
    pt, pl, pb, pr = at.get("pads", (0, 0, 0, 0))
    ceil_mode = at.get("ceil_mode", False)
    check_window("pool2d", (h, w), (kh, kw), (sh, sw), (1, 1), (pt, pl, pb, pr))

    def size(d: int, k: int, s: int, p0: int, p1: int) -> int:
        num = d + p0 + p1 - k
        out = (-(-num // s) if ceil_mode else num // s) + 1
        # as ops.nn: ceil_mode adds no window that starts in the trailing padding
        return out - 1 if ceil_mode and (out - 1) * s >= d + p0 else out

    return [((n, c, size(h, kh, sh, pt, pb), size(w, kw, sw, pl, pr)), dt)]


register_op(
    "max_pool2d", OpPattern.OUT_ELEMWISE_FUSABLE, _pool_infer,
    lambda ins, at: [ref.max_pool2d(ins[0], at["kernel"], at.get("strides", 1),
                                    at.get("pads", 0), at.get("ceil_mode", False))],
    lambda ins, at, out: [ops.max_pool2d(ins[0], at["kernel"], at.get("strides", 1),
                                         at.get("pads", 0), at.get("ceil_mode", False))],
    doc="NCHW max pooling; attrs kernel, strides, pads, ceil_mode",
)
register_op(
    "avg_pool2d", OpPattern.OUT_ELEMWISE_FUSABLE, _pool_infer,
    lambda ins, at: [ref.avg_pool2d(ins[0], at["kernel"], at.get("strides", 1),
                                    at.get("pads", 0), at.get("count_include_pad", False),
                                    at.get("ceil_mode", False))],
    lambda ins, at, out: [ops.avg_pool2d(ins[0], at["kernel"], at.get("strides", 1),
                                         at.get("pads", 0), at.get("count_include_pad", False),
                                         at.get("ceil_mode", False))],
    doc="NCHW average pooling; attrs kernel, strides, pads, count_include_pad, ceil_mode",
)
register_op(
    "global_avg_pool2d", OpPattern.OUT_ELEMWISE_FUSABLE,
    lambda types, at: (require_rank(types, 0, 4, "global_avg_pool2d", "NCHW data")
                       or [((*types[0][0][:2], 1, 1), types[0][1])]),
    lambda ins, at: [ins[0].mean(axis=(2, 3), keepdims=True).astype(ins[0].dtype)],
    lambda ins, at, out: [ops.global_avg_pool2d(ins[0])],
    doc="NCHW global average pooling to (N, C, 1, 1)",
)


def _bn_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x, gamma, beta, mean, var = ins
    shape = (1, -1) + (1,) * (x.ndim - 2)
    scale = gamma / np.sqrt(var + at.get("epsilon", 1e-5))
    y = (x - mean.reshape(shape)) * scale.reshape(shape) + beta.reshape(shape)
    return [y.astype(x.dtype)]


def _bn_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x, gamma, beta, mean, var = ins
    eps = at.get("epsilon", 1e-5)
    return [te.compute(
        x.shape,
        lambda n, c, *r: (x[(n, c, *r)] - mean[c]) * (gamma[c] * te.rsqrt(var[c] + const(
            eps, x.dtype))) + beta[c],
        name="batch_norm", tag="broadcast")]


register_op("batch_norm", OpPattern.BROADCAST, lambda types, at: [types[0]], _bn_ref,
            _bn_compute, doc="inference batch norm (x, gamma, beta, mean, var); attr epsilon")


def _softmax_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    return [ref.softmax(ins[0], at.get("axis", -1)).astype(ins[0].dtype)]


def _softmax_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x = ins[0]
    if x.dtype != "float16":
        return [ops.softmax(x, at.get("axis", -1))]
    wide = te.compute(x.shape, lambda *i: x[i].astype("float32"), name="widen", tag="elemwise")
    return [_round_to(ops.softmax(wide, at.get("axis", -1)), x.dtype)]


register_op("softmax", OpPattern.OPAQUE, lambda types, at: [types[0]], _softmax_ref,
            _softmax_compute,
            doc="softmax along attrs['axis']")
