"""Reductions and normalizations: reduce_sum/mean/max/min, log_softmax, layer_norm.

Reductions take `axes` (a tuple of non-negative axes; None reduces every axis) and
`keepdims`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import ops, te
from ...expr import const
from ...ops.arith import float_to_int_np
from ..registry import OpPattern, TypeList, dim_of, register_op


def _axes(ndim: int, axes: Any) -> tuple[int, ...]:
    if axes is None:
        return tuple(range(ndim))
    return tuple(sorted({int(a) % ndim for a in axes})) if ndim else ()


def _reduce_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    shape, dt = types[0]
    axes = _axes(len(shape), at.get("axes"))
    keep = at.get("keepdims", True)
    out = tuple(1 if d in axes else s for d, s in enumerate(shape) if keep or d not in axes)
    return [(out, dt)]


_NP = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod}


def _reduce_ref(kind: str) -> Any:
    def ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
        x = ins[0]
        axes = _axes(x.ndim, at.get("axes"))
        if kind == "mean" and x.dtype.kind in "iu":  # in double, truncated, saturated
            y = np.mean(x.astype("float64"), axis=axes, keepdims=at.get("keepdims", True))
            return [float_to_int_np(y, str(x.dtype), saturate=True)]
        y = _NP[kind](x, axis=axes, keepdims=at.get("keepdims", True))
        return [np.asarray(y).astype(x.dtype)]

    return ref


def _reduce_compute(kind: str) -> Any:
    def compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
        x = ins[0]
        axes = _axes(len(x.shape), at.get("axes"))
        return [ops.reduce(x, axes, kind, at.get("keepdims", True), name=f"reduce_{kind}")]

    return compute


for _kind in ("sum", "mean", "max", "min", "prod"):
    register_op(f"reduce_{_kind}", OpPattern.COMM_REDUCE, _reduce_infer, _reduce_ref(_kind),
                _reduce_compute(_kind), doc=f"reduce_{_kind} over attrs axes (None: all), "
                "keepdims")


def _log_softmax_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x = ins[0].astype("float64")
    axis = at.get("axis", -1)
    m = x.max(axis=axis, keepdims=True)
    y = x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))
    return [y.astype(ins[0].dtype)]


def _log_softmax_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x = ins[0]
    nd = len(x.shape)
    axis = at.get("axis", -1) % nd
    red = [s for d, s in enumerate(x.shape) if d != axis]
    k1 = te.reduce_axis((0, x.shape[axis]), name="k1")
    k2 = te.reduce_axis((0, x.shape[axis]), name="k2")

    def at_(i: tuple, r: Any) -> tuple:
        return tuple(list(i[:axis]) + [r] + list(i[axis:]))

    def rest(i: tuple) -> tuple:
        return tuple(i[:axis]) + tuple(i[axis + 1:])

    mx = te.compute(red, lambda *i: te.max(x[at_(i, k1)], axis=k1), name="log_softmax_max")
    sm = te.compute(red, lambda *i: te.sum(te.exp(x[at_(i, k2)] - mx[i]), axis=k2),
                    name="log_softmax_sum")
    return [te.compute(x.shape, lambda *i: x[i] - mx[rest(i)] - te.log(sm[rest(i)]),
                       name="log_softmax", tag="softmax")]


register_op("log_softmax", OpPattern.OPAQUE, lambda types, at: [types[0]], _log_softmax_ref,
            _log_softmax_compute, doc="log(softmax(x)) along attrs['axis'], max-subtracted")


def _ln_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x = ins[0].astype("float64")
    axis = at.get("axis", -1) % x.ndim
    axes = tuple(range(axis, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + at.get("epsilon", 1e-5)) * ins[1]
    if len(ins) > 2:
        y = y + ins[2]
    return [y.astype(ins[0].dtype)]


def _ln_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x, scale = ins[0], ins[1]
    bias = ins[2] if len(ins) > 2 else None
    nd = len(x.shape)
    axis = at.get("axis", -1) % nd
    # the normalized (inner) dims are static; outer ones may be symbolic (compiler.symbolic)
    dims = [dim_of(s) for s in x.shape]
    count = int(np.prod(dims[axis:]))
    outer = dims[:axis]
    r1 = [te.reduce_axis((0, dims[d]), name=f"r{d}") for d in range(axis, nd)]
    r2 = [te.reduce_axis((0, dims[d]), name=f"q{d}") for d in range(axis, nd)]
    inv_n = const(1.0 / count, x.dtype)
    mean = te.compute(outer, lambda *i: te.sum(x[tuple(i) + tuple(r1)], axis=r1),
                      name="layer_norm_sum")  # times inv_n below: a reduction stays bare
    var = te.compute(
        outer, lambda *i: te.sum(
            (x[tuple(i) + tuple(r2)] - mean[i] * inv_n) * (x[tuple(i) + tuple(r2)]
                                                          - mean[i] * inv_n), axis=r2),
        name="layer_norm_var")
    eps = const(at.get("epsilon", 1e-5), x.dtype)
    ns = len(scale.shape)
    nb = len(bias.shape) if bias is not None else 0

    def f(*i: Any) -> Any:
        o = tuple(i[:axis])
        y = (x[i] - mean[o] * inv_n) * te.rsqrt(var[o] * inv_n + eps)
        y = y * scale[_tail(scale, i, ns)]
        if bias is not None:
            y = y + bias[_tail(bias, i, nb)]
        return y

    return [te.compute(x.shape, f, name="layer_norm", tag="layer_norm")]


def _tail(t: Any, i: tuple, n: int) -> tuple:
    idx = i[len(i) - n:]
    return tuple(const(0) if getattr(t.shape[d], "value", None) == 1 else idx[d]
                 for d in range(n))


register_op("layer_norm", OpPattern.OPAQUE, lambda types, at: [types[0]], _ln_ref, _ln_compute,
            doc="layer normalization (x, scale[, bias]) over axes attrs['axis']..; epsilon")
