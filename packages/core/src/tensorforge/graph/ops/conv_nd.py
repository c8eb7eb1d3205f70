"""Convolutions over any number of spatial dims (`conv_nd`, `conv_transpose_nd`): the 3-D
convolutions of ONNX Conv / ConvTranspose (1-D and 2-D ones use the tuned NCHW `conv2d` and
`conv2d_transpose`).

Attributes as the 2-D ops, one entry per spatial dim: `strides`, `dilations`, `pads`
(begins then ends), `groups`; ConvTranspose adds `output_padding`. Direct TE reductions
(gather form for the transposed conv); float16 accumulates in float32."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ... import te
from ...expr import PrimExpr, const
from ..registry import OpPattern, TypeList, register_op


def _conv_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    (n, _c, *sp), dt = types[0]
    o, _cg, *k = types[1][0]
    m = len(sp)
    s, d, p = at["strides"], at["dilations"], at["pads"]
    out = [(sp[i] + p[i] + p[m + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(m)]
    return [((n, o, *out), dt)]


def _conv_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x, w = ins[0].astype("float64"), ins[1].astype("float64")
    m = x.ndim - 2
    s, d, p, g = at["strides"], at["dilations"], at["pads"], at.get("groups", 1)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p[i], p[m + i]) for i in range(m)])
    _, o, *out = _conv_infer([(x.shape, ""), (w.shape, "")], at)[0][0]
    cg, og = x.shape[1] // g, o // g
    y = np.zeros((x.shape[0], o, *out))
    for ks in itertools.product(*[range(v) for v in w.shape[2:]]):
        win = tuple(slice(ks[i] * d[i], ks[i] * d[i] + (out[i] - 1) * s[i] + 1, s[i])
                    for i in range(m))
        for gi in range(g):
            xs = xp[(slice(None), slice(gi * cg, (gi + 1) * cg), *win)]
            ws = w[(slice(gi * og, (gi + 1) * og), slice(None), *ks)]
            y[:, gi * og:(gi + 1) * og] += np.einsum("nc...,oc->no...", xs, ws)
    if len(ins) > 2:
        y += ins[2].reshape((1, -1) + (1,) * m)
    return [y.astype(ins[0].dtype)]


def _bias(y: Any, ins: list[Any], dtype: str) -> Any:
    if len(ins) > 2:
        b = ins[2]
        y = te.compute(y.shape, lambda n, o, *r: y[(n, o, *r)] + b[o].astype(y.dtype),
                       name="bias_add", tag="broadcast")
    if y.dtype != dtype:
        y = te.compute(y.shape, lambda *i: y[i].astype(dtype), name="cast", tag="elemwise")
    return y


def _conv_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x, w = ins[0], ins[1]
    sp = [int(v.value) for v in x.shape[2:]]
    m = len(sp)
    o_n, cg, *k = (int(v.value) for v in w.shape)
    s, d, p, g = at["strides"], at["dilations"], at["pads"], at.get("groups", 1)
    og = o_n // g
    acc = "float32" if x.dtype == "float16" else x.dtype
    rc = te.reduce_axis((0, cg), name="rc")
    rk = [te.reduce_axis((0, v), name=f"rk{i}") for i, v in enumerate(k)]

    def f(n: Any, o: Any, *q: Any) -> PrimExpr:
        ci = (o // og) * cg + rc.var if g > 1 else rc.var
        pos = [q[i] * s[i] + rk[i].var * d[i] - p[i] for i in range(m)]
        ok = te.all(*[c for i in range(m) for c in (pos[i] >= 0, pos[i] < sp[i])])
        safe = [te.select(ok, v, const(0, "int32")) for v in pos]
        prod = x[(n, ci, *safe)].astype(acc) * w[(o, rc.var, *[r.var for r in rk])].astype(acc)
        return te.sum(te.select(ok, prod, const(0, acc)), axis=[rc, *rk])

    y = te.compute(out[0][0], f, name="conv_nd", tag="conv_nd")
    return [_bias(y, ins, x.dtype)]


register_op("conv_nd", OpPattern.OUT_ELEMWISE_FUSABLE, _conv_infer, _conv_ref, _conv_compute,
            doc="N-D conv (x, w[, bias]); attrs strides, dilations, pads (begins, ends), groups")


# transposed -------------------------------------------------------------------------------
def _tconv_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    (n, _c, *sp), dt = types[0]
    _ci, og, *k = types[1][0]
    m = len(sp)
    s, d, p, op = at["strides"], at["dilations"], at["pads"], at["output_padding"]
    out = [(sp[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 + op[i] - p[i] - p[m + i]
           for i in range(m)]
    return [((n, og * at.get("groups", 1), *out), dt)]


def _tconv_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x, w = ins[0].astype("float64"), ins[1].astype("float64")
    m = x.ndim - 2
    s, d, p, g = at["strides"], at["dilations"], at["pads"], at.get("groups", 1)
    _, o, *out = _tconv_infer([(x.shape, ""), (w.shape, "")], at)[0][0]
    cg, og = x.shape[1] // g, w.shape[1]
    full = [max((x.shape[2 + i] - 1) * s[i] + d[i] * (w.shape[2 + i] - 1) + 1, p[i] + out[i])
            for i in range(m)]
    y = np.zeros((x.shape[0], o, *full))
    for ks in itertools.product(*[range(v) for v in w.shape[2:]]):
        win = tuple(slice(ks[i] * d[i], ks[i] * d[i] + (x.shape[2 + i] - 1) * s[i] + 1, s[i])
                    for i in range(m))
        for gi in range(g):
            contrib = np.einsum("nc...,co->no...", x[:, gi * cg:(gi + 1) * cg],
                                w[(slice(gi * cg, (gi + 1) * cg), slice(None), *ks)])
            y[(slice(None), slice(gi * og, (gi + 1) * og), *win)] += contrib
    y = y[(slice(None), slice(None), *[slice(p[i], p[i] + out[i]) for i in range(m)])]
    if len(ins) > 2:
        y = y + ins[2].reshape((1, -1) + (1,) * m)
    return [y.astype(ins[0].dtype)]


def _tconv_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x, w = ins[0], ins[1]
    sp = [int(v.value) for v in x.shape[2:]]
    m = len(sp)
    c, og, *k = (int(v.value) for v in w.shape)
    s, d, p, g = at["strides"], at["dilations"], at["pads"], at.get("groups", 1)
    cg = c // g
    acc = "float32" if x.dtype == "float16" else x.dtype
    rc = te.reduce_axis((0, cg), name="rc")
    rk = [te.reduce_axis((0, v), name=f"rk{i}") for i, v in enumerate(k)]

    def f(n: Any, o: Any, *q: Any) -> PrimExpr:
        ci = (o // og) * cg + rc.var if g > 1 else rc.var
        t = [q[i] + p[i] - rk[i].var * d[i] for i in range(m)]
        src = [te.floordiv(t[i], s[i]) for i in range(m)]
        ok = te.all(*[c for i in range(m) for c in (
            t[i] >= 0, te.floormod(t[i], s[i]) == 0, src[i] < sp[i])])
        safe = [te.select(ok, v, const(0, "int32")) for v in src]
        prod = x[(n, ci, *safe)].astype(acc) * w[(ci, o % og if g > 1 else o,
                                                  *[r.var for r in rk])].astype(acc)
        return te.sum(te.select(ok, prod, const(0, acc)), axis=[rc, *rk])

    y = te.compute(out[0][0], f, name="conv_transpose_nd", tag="conv_transpose_nd")
    return [_bias(y, ins, x.dtype)]


register_op("conv_transpose_nd", OpPattern.OUT_ELEMWISE_FUSABLE, _tconv_infer, _tconv_ref,
            _tconv_compute, doc="N-D transposed conv (x, w (C, O/g, k...)[, bias]); attrs "
            "strides, dilations, pads, output_padding, groups")
