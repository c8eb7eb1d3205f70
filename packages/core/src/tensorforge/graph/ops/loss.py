"""Loss ops: `nll_loss` gathers the negative log-likelihood of each target class.

The reductions (mean, sum) are graph ops after it, so they fuse and schedule like any
reduction."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import te
from ...expr import const
from ..registry import OpPattern, TypeList, register_op


def _nll_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    (n, _c, d), dt = types[0]
    return [((n, d), dt), ((n, d), dt)]


def _nll_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x, t = ins[0], ins[1].astype("int64")
    c = x.shape[1]
    ignore = at.get("ignore_index")
    tc = np.clip(t, 0, c - 1)
    w = ins[2][tc] if len(ins) > 2 else np.ones(t.shape, x.dtype)
    if ignore is not None:
        w = np.where(t == ignore, 0, w)
    picked = np.take_along_axis(x, tc[:, None, :], axis=1)[:, 0, :]
    loss = np.where(w == 0, 0, -picked * w)
    return [loss.astype(x.dtype), w.astype(x.dtype)]


def _nll_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x, t = ins[0], ins[1]
    weight = ins[2] if len(ins) > 2 else None
    c = int(x.shape[1].value)
    ignore = at.get("ignore_index")

    def cls(n: Any, d: Any) -> Any:  # the target class, clamped so the read stays inside
        k = t[n, d].astype("int32")
        return te.min_expr(te.max_expr(k, const(0, "int32")), const(c - 1, "int32"))

    def wt(n: Any, d: Any) -> Any:
        w = weight[cls(n, d)] if weight is not None else const(1.0, x.dtype)
        if ignore is None:
            return w
        return te.select(t[n, d] == const(int(ignore), t.dtype), const(0.0, x.dtype), w)

    w = te.compute(out[1][0], wt, name="nll_weight", tag="injective")
    loss = te.compute(
        out[0][0], lambda n, d: te.select(w[n, d] == const(0.0, x.dtype), const(0.0, x.dtype),
                                          -x[n, cls(n, d), d] * w[n, d]),
        name="nll_loss", tag="injective")
    return [loss, w]


register_op("nll_loss", OpPattern.INJECTIVE, _nll_infer, _nll_ref, _nll_compute,
            doc="negative log-likelihood per element: x (N, C, D), target (N, D)[, weight (C,)]"
            " -> (loss (N, D), weight of each target (N, D)); attr ignore_index (weight 0)")
