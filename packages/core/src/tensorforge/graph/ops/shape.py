"""Injective data-movement ops: strided_slice, pad, broadcast_to, split (gathers by data
indices are in `indexing.py`).

Attributes are normalized by the frontend: one entry per dimension, static and in range."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import te
from ...expr import const
from ..registry import OpPattern, TypeList, register_op


def _dims(t: Any) -> list[int]:
    return [int(s.value) for s in t.shape]


# strided_slice: out[i] = x[begin + i * step] per dimension ------------------------------------
def _slice_index(at: dict[str, Any], d: int) -> np.ndarray:
    return at["begin"][d] + at["step"][d] * np.arange(at["size"][d])


def _slice_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x = ins[0]
    idx = np.ix_(*[_slice_index(at, d) for d in range(x.ndim)]) if x.ndim else ()
    return [x[idx]]


def _slice_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x = ins[0]
    b, s = at["begin"], at["step"]
    return [te.compute(out[0][0], lambda *i: x[tuple(b[d] + s[d] * i[d] for d in range(len(i)))],
                       name="strided_slice", tag="injective")]


register_op("strided_slice", OpPattern.INJECTIVE,
            lambda types, at: [(tuple(at["size"]), types[0][1])], _slice_ref, _slice_compute,
            doc="out[i] = x[begin + step * i] per dim; attrs begin, step, size (out shape)")


# pad: constant, reflect, edge, wrap ---------------------------------------------------------
def _pad_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    shape, dt = types[0]
    return [(tuple(s + b + a for s, (b, a) in zip(shape, at["pads"])), dt)]


def _pad_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x = ins[0]
    mode = at.get("mode", "constant")
    # negative pads crop first
    crop = tuple(slice(max(-b, 0), x.shape[d] - max(-a, 0)) for d, (b, a) in
                 enumerate(at["pads"]))
    x = x[crop]
    pads = [(max(b, 0), max(a, 0)) for b, a in at["pads"]]
    if mode == "constant":
        return [np.pad(x, pads, mode="constant", constant_values=at.get("value", 0))]
    np_mode = {"reflect": "reflect", "edge": "edge", "wrap": "wrap"}[mode]
    return [np.pad(x, pads, mode=np_mode)]


def _pad_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x = ins[0]
    dims = _dims(x)
    pads = at["pads"]
    mode = at.get("mode", "constant")
    value = const(at.get("value", 0), x.dtype)

    def f(*i: Any) -> Any:
        conds, src = [], []
        for d, idx in enumerate(i):
            b, a = pads[d]
            n = dims[d]
            j = idx - b
            if b > 0 or a > 0:
                if mode == "constant":
                    if b > 0:
                        conds.append(j >= 0)
                    if a > 0:
                        conds.append(j < n)
                elif mode == "edge":
                    j = te.min_expr(te.max_expr(j, const(0)), const(n - 1))
                elif mode == "reflect":
                    j = te.select(j < 0, -j, j)
                    j = te.select(j >= n, 2 * (n - 1) - j, j)
                else:  # wrap
                    j = te.floormod(j, const(n))
            src.append(j)
        v = x[tuple(src)]
        return te.if_then_else(te.all(*conds), v, value) if conds else v

    return [te.compute(out[0][0], f, name="pad", tag="injective,pad")]


register_op("pad", OpPattern.INJECTIVE, _pad_infer, _pad_ref, _pad_compute,
            doc="pad by attrs pads ((before, after) per dim, may be negative); mode constant "
            "(value) | reflect | edge | wrap")


# broadcast_to ---------------------------------------------------------------------------
def _bcast_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x = ins[0]
    dims = _dims(x)

    def f(*i: Any) -> Any:
        off = len(i) - len(dims)
        return x[tuple(const(0) if s == 1 else i[off + d] for d, s in enumerate(dims))]

    return [te.compute(out[0][0], f, name="broadcast_to", tag="broadcast")]


register_op("broadcast_to", OpPattern.BROADCAST,
            lambda types, at: [(tuple(at["shape"]), types[0][1])],
            lambda ins, at: [np.ascontiguousarray(np.broadcast_to(ins[0], at["shape"]))],
            _bcast_compute, doc="numpy broadcast_to attrs['shape']")


# split: several outputs along one axis --------------------------------------------------
def _split_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    shape, dt = types[0]
    axis = at["axis"] % len(shape)
    return [(tuple(s if d != axis else n for d, s in enumerate(shape)), dt)
            for n in at["sizes"]]


def _split_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x = ins[0]
    offs = np.cumsum(at["sizes"])[:-1]
    return [np.ascontiguousarray(p) for p in np.split(x, offs, axis=at["axis"])]


def _split_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x = ins[0]
    axis = at["axis"] % len(x.shape)
    outs, off = [], 0
    for k, (shape, _) in enumerate(out):
        def f(*i: Any, off: int = off) -> Any:
            return x[tuple(i[d] + off if d == axis else i[d] for d in range(len(i)))]

        outs.append(te.compute(shape, f, name=f"split{k}", tag="injective"))
        off += at["sizes"][k]
    return outs


register_op("split", OpPattern.INJECTIVE, _split_infer, _split_ref, _split_compute,
            doc="split along attrs['axis'] into parts of attrs['sizes'] (one output each)")
