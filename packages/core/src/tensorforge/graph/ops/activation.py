"""More activations: elu, selu, softplus, prelu, logical_not."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import te
from ...expr import PrimExpr, const
from ...ops.broadcast import broadcast_binary
from ..registry import OpPattern, TypeList, broadcast_shapes, register_op, same_as_input
from .elementwise import _unary_compute, in_float32


def _f(x: PrimExpr, v: float) -> PrimExpr:
    return const(v, x.dtype)


def _elu_np(a: np.ndarray, at: dict[str, Any]) -> np.ndarray:
    return np.where(a >= 0, a, at.get("alpha", 1.0) * (np.exp(a) - 1))


def _elu_te(x: PrimExpr, at: dict[str, Any]) -> PrimExpr:
    # x >= 0 keeps -0.0 (as ONNX Runtime); NaN takes the exp side and stays NaN
    return te.select(x >= _f(x, 0), x, _f(x, at.get("alpha", 1.0)) * (te.exp(x) - _f(x, 1)))


_SELU_A, _SELU_G = 1.67326319217681884765625, 1.05070102214813232421875


def _selu_np(a: np.ndarray, at: dict[str, Any]) -> np.ndarray:
    al, g = at.get("alpha", _SELU_A), at.get("gamma", _SELU_G)
    return g * np.where(a > 0, a, al * (np.exp(a) - 1))


def _selu_te(x: PrimExpr, at: dict[str, Any]) -> PrimExpr:
    al, g = at.get("alpha", _SELU_A), at.get("gamma", _SELU_G)
    return _f(x, g) * te.select(x > _f(x, 0), x, _f(x, al) * (te.exp(x) - _f(x, 1)))


def _softplus_np(a: np.ndarray, at: dict[str, Any]) -> np.ndarray:
    return np.logaddexp(a, 0)


def _softplus_te(x: PrimExpr, at: dict[str, Any]) -> PrimExpr:
    # log(1 + exp(x)) computed stably: max(x, 0) + log1p(exp(-|x|)), log1p(e) as
    # log(u) * e / (u - 1) with u = 1 + e (Goldberg), = e where u rounds to 1: softplus(-100)
    # is exp(-100) = 3.8e-44 (as ONNX Runtime), not log(1 + 3.8e-44) = 0
    e = te.exp(-te.abs(x))
    u = _f(x, 1) + e
    log1p = te.select(u == _f(x, 1), e, te.log(u) * (e / (u - _f(x, 1))))
    return te.max_expr(x, _f(x, 0)) + log1p


_UNARY = {
    "elu": (_elu_np, _elu_te, "elu (attr alpha)"),
    "selu": (_selu_np, _selu_te, "selu (attrs alpha, gamma)"),
    "softplus": (_softplus_np, _softplus_te, "softplus log(1 + exp(x))"),
}

for _name, (_ref, _te, _doc) in _UNARY.items():
    register_op(
        _name, OpPattern.ELEMWISE, same_as_input(),
        (lambda r: lambda ins, at: [np.asarray(r(ins[0], at)).astype(ins[0].dtype)])(_ref),
        _unary_compute(_te), doc=f"elementwise {_doc}",
    )

register_op(
    "logical_not", OpPattern.ELEMWISE, lambda types, at: [(types[0][0], "bool")],
    lambda ins, at: [np.logical_not(ins[0])],
    lambda ins, at, out: [te.compute(ins[0].shape, lambda *i: te.select(
        ins[0][i], const(False), const(True)), name="not", tag="elemwise")],
    doc="elementwise logical not",
)


def _prelu_te(a: PrimExpr, s: PrimExpr) -> PrimExpr:
    return te.select(a < _f(a, 0), a * s, a)


def _prelu_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    return [broadcast_binary(ins[0], ins[1], in_float32(_prelu_te), name="prelu")]


register_op(
    "prelu", OpPattern.BROADCAST,
    lambda types, at: [(broadcast_shapes([types[0][0], types[1][0]]), types[0][1])],
    lambda ins, at: [np.where(ins[0] < 0, ins[0] * ins[1], ins[0]).astype(ins[0].dtype)],
    _prelu_compute, doc="prelu(x, slope): x if x >= 0 else slope * x (slope broadcasts)",
)
