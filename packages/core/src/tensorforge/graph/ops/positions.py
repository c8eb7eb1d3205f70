"""Ops that compute with element positions: argmax/argmin, cumulative sum/product, top-k,
triangular masks (trilu), one_hot, arange and signal windows.

Written as plain TE computes (no sequential loops), so every target's generic schedule can
run them: a cumulative op along an axis of length n and top-k are reductions over that axis
with a position condition, O(n^2) work along the axis; argmax is a max, then the first
(or last) position holding it."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import te
from ...expr import PrimExpr, const
from ..registry import OpPattern, TypeList, register_op


def _dims(t: Any) -> list[int]:
    return [int(s.value) for s in t.shape]


def _with(i: tuple, axis: int, k: Any, keep: bool) -> tuple:
    """Index `i` of a reduced tensor with `k` put at `axis` (replacing a kept unit dim)."""
    i = list(i)
    if keep:
        i[axis] = k
    else:
        i.insert(axis, k)
    return tuple(i)


# argmax / argmin ---------------------------------------------------------------------------
def _arg_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    shape, _ = types[0]
    axis = at["axis"] % len(shape)
    keep = at.get("keepdims", True)
    out = tuple(1 if d == axis else s for d, s in enumerate(shape) if keep or d != axis)
    return [(out, "int64")]


def _arg_ref(largest: bool) -> Any:
    def ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
        x = ins[0]
        axis = at["axis"] % x.ndim
        fn = np.argmax if largest else np.argmin
        if at.get("last", False):
            n = x.shape[axis]
            idx = n - 1 - fn(np.flip(x, axis), axis=axis)
        else:
            idx = fn(x, axis=axis)
        if at.get("keepdims", True):
            idx = np.expand_dims(idx, axis)
        return [idx.astype("int64")]

    return ref


def _arg_compute(largest: bool) -> Any:
    def compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
        x = ins[0]
        nd = len(x.shape)
        axis = at["axis"] % nd
        keep = at.get("keepdims", True)
        n = _dims(x)[axis]
        red = out[0][0]
        k1 = te.reduce_axis((0, n), name="k1")
        k2 = te.reduce_axis((0, n), name="k2")
        best = te.compute(red, lambda *i: (te.max if largest else te.min)(
            x[_with(i, axis, k1, keep)], axis=k1), name="arg_best")
        last = at.get("last", False)

        def pos(*i: Any) -> PrimExpr:
            hit = x[_with(i, axis, k2, keep)] == best[i]
            kk = k2.var.astype("int64")
            if last:
                return te.max(te.select(hit, kk, const(-1, "int64")), axis=k2)
            return te.min(te.select(hit, kk, const(n, "int64")), axis=k2)

        return [te.compute(red, pos, name="arg_index", tag="reduce")]

    return compute


for _name, _largest in (("argmax", True), ("argmin", False)):
    register_op(_name, OpPattern.OPAQUE, _arg_infer, _arg_ref(_largest), _arg_compute(_largest),
                doc=f"{_name} along attrs axis (keepdims; last: the last position of ties) "
                "-> int64")


# cumulative sum / product ------------------------------------------------------------------
def _cum_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x = ins[0]
    axis = at["axis"] % x.ndim
    fn = np.cumsum if at.get("kind", "sum") == "sum" else np.cumprod
    ident = 0 if at.get("kind", "sum") == "sum" else 1
    if at.get("reverse", False):
        x = np.flip(x, axis)
    y = fn(x, axis=axis, dtype=x.dtype)
    if at.get("exclusive", False):
        y = np.concatenate([np.full_like(np.take(y, [0], axis), ident),
                            np.take(y, range(x.shape[axis] - 1), axis)], axis=axis)
    if at.get("reverse", False):
        y = np.flip(y, axis)
    return [np.ascontiguousarray(y)]


_prod = te.comm_reducer(lambda a, b: a * b, lambda t: const(1, t), name="prod")


def _cum_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x = ins[0]
    axis = at["axis"] % len(x.shape)
    n = _dims(x)[axis]
    k = te.reduce_axis((0, n), name="k")
    rev, excl = at.get("reverse", False), at.get("exclusive", False)
    reducer = te.sum if at.get("kind", "sum") == "sum" else _prod

    def f(*i: Any) -> PrimExpr:
        j = i[axis]
        if rev:
            cond = k.var > j if excl else k.var >= j
        else:
            cond = k.var < j if excl else k.var <= j
        return reducer(x[_with(i, axis, k, True)], axis=k, where=cond)

    return [te.compute(x.shape, f, name="cumulative", tag="reduce")]


register_op("cumulative", OpPattern.OPAQUE, lambda types, at: [types[0]], _cum_ref,
            _cum_compute, doc="cumulative sum or product (attr kind) along attrs axis; "
            "exclusive, reverse")


# top-k -----------------------------------------------------------------------------------
def _topk_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    shape, dt = types[0]
    axis = at["axis"] % len(shape)
    out = tuple(at["k"] if d == axis else s for d, s in enumerate(shape))
    return [(out, dt), (out, "int64")]


def _topk_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x = ins[0]
    axis = at["axis"] % x.ndim
    key = -x if at.get("largest", True) else x
    if x.dtype.kind in "ui" and at.get("largest", True):
        key = -x.astype("int64") if x.dtype != np.uint64 else ~x
    idx = np.argsort(key, axis=axis, kind="stable")
    idx = np.take(idx, range(at["k"]), axis=axis)
    return [np.take_along_axis(x, idx, axis=axis), idx.astype("int64")]


def _topk_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x = ins[0]
    nd = len(x.shape)
    axis = at["axis"] % nd
    n = _dims(x)[axis]
    largest = at.get("largest", True)
    k1 = te.reduce_axis((0, n), name="k1")
    k2 = te.reduce_axis((0, n), name="k2")

    def rank(*i: Any) -> PrimExpr:  # how many elements come before x[i] (ties: position)
        a, b = x[_with(i, axis, k1, True)], x[i]
        before = (a > b) if largest else (a < b)
        tie = te.all(a == b, k1.var < i[axis])
        return te.sum(te.select(te.any(before, tie), const(1, "int32"), const(0, "int32")),
                      axis=k1)

    r = te.compute(x.shape, rank, name="topk_rank")
    idx = te.compute(out[1][0], lambda *i: te.sum(te.select(
        r[_with(i, axis, k2, True)] == i[axis].astype("int32"), k2.var.astype("int64"),
        const(0, "int64")), axis=k2), name="topk_index", tag="reduce")
    val = te.compute(out[0][0], lambda *i: x[_with(i, axis, idx[i].astype("int32"), True)],
                     name="topk_value", tag="injective")
    return [val, idx]


register_op("topk", OpPattern.OPAQUE, _topk_infer, _topk_ref, _topk_compute,
            doc="the k largest (attr largest) elements along attrs axis, sorted, ties by "
            "position -> (values, int64 indices)")


# trilu -------------------------------------------------------------------------------------
def _trilu_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x = ins[0]
    k = int(np.asarray(ins[1]).reshape(-1)[0]) if len(ins) > 1 else 0
    if x.ndim < 2:
        return [x.copy()]
    return [np.triu(x, k) if at.get("upper", True) else np.tril(x, k)]


def _trilu_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x = ins[0]
    kt = ins[1] if len(ins) > 1 else None
    upper = at.get("upper", True)
    zero = const(0, x.dtype)

    def f(*i: Any) -> PrimExpr:
        k = kt[(0,) * len(kt.shape)].astype("int64") if kt is not None else const(0, "int64")
        d = i[-1].astype("int64") - i[-2].astype("int64")
        return te.select(d >= k if upper else d <= k, x[i], zero)

    return [te.compute(x.shape, f, name="trilu", tag="broadcast")]


register_op("trilu", OpPattern.BROADCAST, lambda types, at: [types[0]], _trilu_ref,
            _trilu_compute, doc="upper (attr upper) or lower triangle of the last two dims; "
            "optional input k: the diagonal offset (read at run time)")


# one_hot ------------------------------------------------------------------------------------
def _onehot_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    shape = list(types[0][0])
    axis = at["axis"] % (len(shape) + 1)
    shape.insert(axis, at["depth"])
    return [(tuple(shape), types[1][1])]


def _onehot_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    idx, values = ins[0].astype("int64"), ins[1].reshape(-1)
    depth = at["depth"]
    axis = at["axis"] % (idx.ndim + 1)
    idx = np.where(idx < 0, idx + depth, idx)
    pos = np.arange(depth).reshape([-1 if d == axis else 1 for d in range(idx.ndim + 1)])
    hit = np.expand_dims(idx, axis) == pos
    return [np.where(hit, values[1], values[0]).astype(values.dtype)]


def _onehot_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    idx, values = ins
    depth = at["depth"]
    axis = at["axis"] % (len(idx.shape) + 1)

    def f(*i: Any) -> PrimExpr:
        j = i[:axis] + i[axis + 1:]
        v = idx[j].astype("int64")
        v = te.select(v < const(0, "int64"), v + const(depth, "int64"), v)
        return te.select(v == i[axis].astype("int64"), values[1], values[0])

    return [te.compute(out[0][0], f, name="one_hot", tag="injective")]


register_op("one_hot", OpPattern.INJECTIVE, _onehot_infer, _onehot_ref, _onehot_compute,
            doc="one_hot(indices, values=[off, on]); attrs depth, axis; indices outside "
            "[-depth, depth) give all off")


# arange -------------------------------------------------------------------------------------
def _arange_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    start, delta = (np.asarray(v).reshape(()) for v in ins)
    return [(start + delta * np.arange(at["n"], dtype=start.dtype)).astype(start.dtype)]


def _arange_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    start, delta = ins
    z = (0,) * len(start.shape)
    return [te.compute(out[0][0], lambda i: start[z] + i.astype(start.dtype) * delta[z],
                       name="arange", tag="injective")]


register_op("arange", OpPattern.INJECTIVE, lambda types, at: [((at["n"],), types[0][1])],
            _arange_ref, _arange_compute,
            doc="start + delta * i for i < attrs n (start, delta: 0-d inputs read at run time)")


# windows ------------------------------------------------------------------------------------
_WINDOWS = {  # a0 - a1 cos(2 pi i / N) + a2 cos(4 pi i / N)
    "hann": (0.5, 0.5, 0.0),
    "hamming": (25 / 46, 21 / 46, 0.0),
    "blackman": (0.42, 0.5, 0.08),
}


def _window_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    n = at["n"]
    a0, a1, a2 = _WINDOWS[at["kind"]]
    denom = n if at.get("periodic", True) else n - 1
    i = np.arange(n, dtype="float64")
    w = a0 - a1 * np.cos(2 * np.pi * i / denom) + a2 * np.cos(4 * np.pi * i / denom)
    return [w.astype(at["dtype"])]


def _window_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    n = at["n"]
    a0, a1, a2 = _WINDOWS[at["kind"]]
    denom = n if at.get("periodic", True) else n - 1
    f32 = "float32"

    def f(i: Any) -> PrimExpr:
        t = i.astype(f32) * const(2 * np.pi / denom, f32)
        w = const(a0, f32) - const(a1, f32) * te.cos(t)
        if a2:
            w = w + const(a2, f32) * te.cos(t * const(2.0, f32))
        return w.astype(out[0][1])

    return [te.compute((n,), f, name="window", tag="injective")]


register_op("window", OpPattern.INJECTIVE, lambda types, at: [((at["n"],), at["dtype"])],
            _window_ref, _window_compute,
            doc="a signal window (attr kind: hann, hamming, blackman) of attrs n points; "
            "periodic; no inputs")
