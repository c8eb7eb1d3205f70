"""Data-movement ops whose source positions depend on run-time values: `cache_update`
(ONNX TensorScatter: a KV-cache write at per-batch positions), `reverse_sequence`; and
`bitcast` (same bits, another type).

Each output element reads one input element, at a position computed from an index input:
written as a gather (every output element decides where it comes from), so there are no
write conflicts and every read is clamped inside its tensor."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import te
from ...expr import PrimExpr, const
from ..registry import OpPattern, TypeList, register_op


def _dims(t: Any) -> list[int]:
    return [int(s.value) for s in t.shape]


# bitcast ------------------------------------------------------------------------------------
def _bitcast_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x = ins[0]
    to = out[0][1]
    if x.dtype == "bool" or to == "bool":  # a byte each: 0 or 1 either way
        return [te.compute(x.shape, lambda *i: x[i].astype(to), name="bitcast",
                           tag="elemwise")]
    return [te.compute(x.shape, lambda *i: te.reinterpret(x[i], to), name="bitcast",
                       tag="elemwise")]


register_op("bitcast", OpPattern.ELEMWISE, lambda types, at: [(types[0][0], at["to"])],
            lambda ins, at: [ins[0].view(at["to"])], _bitcast_compute,
            doc="the bits of x as attr to (the same width)")


# cache_update -------------------------------------------------------------------------------
def _cache_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    past, upd = ins[0], ins[1]
    axis = at["axis"]
    idx = ins[2] if len(ins) > 2 else np.zeros(past.shape[0], "int64")
    out = past.copy()
    m, n = past.shape[axis], upd.shape[axis]
    for b in range(past.shape[0]):
        for s in range(n):
            pos = int(idx[b]) + s
            pos = pos % m if at.get("mode", "linear") == "circular" else pos
            if 0 <= pos < m:
                src = [slice(None)] * past.ndim
                src[0], src[axis] = b, s
                dst = list(src)
                dst[axis] = pos
                out[tuple(dst)] = upd[tuple(src)]
    return [out]


def _cache_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    past, upd = ins[0], ins[1]
    idx = ins[2] if len(ins) > 2 else None
    axis = at["axis"]
    m, n = _dims(past)[axis], _dims(upd)[axis]
    circular = at.get("mode", "linear") == "circular"

    def f(*i: Any) -> PrimExpr:
        start = idx[i[0]].astype("int32") if idx is not None else const(0, "int32")
        j = i[axis] - start
        if circular:
            j = te.floormod(j, const(m, "int32"))
        hit = te.all(j >= const(0, "int32"), j < const(n, "int32"))
        safe = te.select(hit, j, const(0, "int32"))
        src = tuple(safe if d == axis else v for d, v in enumerate(i))
        return te.select(hit, upd[src], past[i])

    return [te.compute(past.shape, f, name="cache_update", tag="injective")]


register_op("cache_update", OpPattern.INJECTIVE, lambda types, at: [types[0]], _cache_ref,
            _cache_compute,
            doc="past with update written along attrs axis from per-batch write indices "
            "(input 2, zeros if absent); attr mode linear | circular (positions modulo)")


# reverse_sequence ---------------------------------------------------------------------------
def _revseq_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x, lens = ins[0], ins[1].astype("int64")
    t_ax, b_ax = at["time_axis"], at["batch_axis"]
    out = x.copy()
    for b in range(x.shape[b_ax]):
        n = int(np.clip(lens[b], 0, x.shape[t_ax]))
        src = [slice(None)] * x.ndim
        src[b_ax], src[t_ax] = b, slice(0, n)
        dst = list(src)
        dst[t_ax] = slice(n - 1, None, -1) if n else slice(0, 0)
        out[tuple(src)] = x[tuple(dst)]
    return [out]


def _revseq_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x, lens = ins
    t_ax, b_ax = at["time_axis"], at["batch_axis"]

    def f(*i: Any) -> PrimExpr:
        n = lens[i[b_ax]].astype("int32")
        n = te.min_expr(te.max_expr(n, const(0, "int32")), const(_dims(x)[t_ax], "int32"))
        t = i[t_ax]
        src_t = te.select(t < n, n - const(1, "int32") - t, t)
        return x[tuple(src_t if d == t_ax else v for d, v in enumerate(i))]

    return [te.compute(x.shape, f, name="reverse_sequence", tag="injective")]


register_op("reverse_sequence", OpPattern.INJECTIVE, lambda types, at: [types[0]],
            _revseq_ref, _revseq_compute,
            doc="reverse the first lengths[b] steps along attrs time_axis of every batch "
            "(attrs batch_axis; lengths read at run time)")
