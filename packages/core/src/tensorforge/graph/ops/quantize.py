"""Quantization ops, shared by the ONNX QDQ converters and the int8 compilation paths.

- `quantize(x, scale, zero_point)`: `clip(round_half_even(x / scale) + zero_point, lo, hi)`
  to the integer dtype attr `to` (ONNX QuantizeLinear; scale and zero point broadcast to x,
  the frontend expands per-axis and blocked forms). With `to` a float type the result is
  `x / scale` (a float8 cast follows).
- `dequantize(q, scale, zero_point)`: `(q - zero_point) * scale` in float32, then the
  attr `to` (the scale's type by default).
- `requantize(acc)`: the integer-only rescale of an int32 accumulator, as a fixed-point
  accelerator ALU does it: `clip(((acc * multiplier + 2**(shift-1)) >> shift) + zero_point,
  lo, hi)` with a 64-bit product (round half up), attrs `multiplier` (< 2**31), `shift`
  (1..62), `zero_point`, `to` (int8 by default). No float arithmetic: the numpy reference
  is bit-exact with the generated code.

`quantize_multiplier(real)` gives the (multiplier, shift) pair of a real scale in (0, 1)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import te
from ...expr import PrimExpr, const
from ..registry import OpPattern, TypeList, broadcast_shapes, register_op


def _range(at: dict[str, Any]) -> tuple[int, int]:
    to = at.get("to", "int8")
    lo = at.get("lo", int(np.iinfo(to).min))
    hi = at.get("hi", int(np.iinfo(to).max))
    return int(lo), int(hi)


def _bshape(types: TypeList) -> tuple[int, ...]:
    return broadcast_shapes([t[0] for t in types])


def _bidx(t: Any, i: tuple) -> tuple:
    off = len(i) - len(t.shape)
    return tuple(const(0) if int(t.shape[d].value) == 1 else i[off + d]
                 for d in range(len(t.shape)))


# quantize -----------------------------------------------------------------------------------
def _quantize_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x, scale = ins[0], ins[1]
    prec = at.get("precision")
    y = x.astype(prec) / scale.astype(prec) if prec else x / scale
    to = at.get("to", "uint8")
    if np.dtype(to).kind == "f":
        return [np.asarray(y).astype(to)]
    big = float(2 ** 40)  # as the kernel: clamp before converting (inf saturates)
    with np.errstate(invalid="ignore"):
        r = np.rint(np.asarray(y, "float64"))
    q = np.where(np.isnan(r), -big, np.clip(r, -big, big)).astype("int64")
    if len(ins) > 2:
        q = q + ins[2].astype("int64")
    lo, hi = _range(at)
    return [np.clip(q, lo, hi).astype(to)]


def _quantize_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x, scale = ins[0], ins[1]
    zp = ins[2] if len(ins) > 2 else None
    to = at.get("to", "uint8")
    prec = at.get("precision") or str(np.result_type(x.dtype, scale.dtype))
    big = float(2 ** 40)

    def f(*i: Any) -> PrimExpr:
        y = x[_bidx(x, i)].astype(prec) / scale[_bidx(scale, i)].astype(prec)
        if to.startswith("float"):
            return y.astype(to)
        r = te.round(y.astype("float64"))  # clamped first: any float converts safely
        r = te.min_expr(te.max_expr(r, const(-big, "float64")), const(big, "float64"))
        q = r.astype("int64")
        if zp is not None:
            q = q + zp[_bidx(zp, i)].astype("int64")
        lo, hi = _range(at)
        q = te.min_expr(te.max_expr(q, const(lo, "int64")), const(hi, "int64"))
        return q.astype(to)

    return [te.compute(out[0][0], f, name="quantize", tag="broadcast")]


register_op("quantize", OpPattern.BROADCAST,
            lambda types, at: [(_bshape(types), at.get("to", "uint8"))], _quantize_ref,
            _quantize_compute,
            doc="clip(round_half_even(x / scale) + zero_point, lo, hi) as attr to "
            "(scale, zero_point broadcast); attr precision: the division's float type")


# dequantize ---------------------------------------------------------------------------------
def _dequantize_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    q = ins[0].astype("float32")
    if len(ins) > 2:
        q = q - ins[2].astype("float32")
    return [(q * ins[1]).astype(at.get("to", ins[1].dtype.name))]


def _dequantize_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    q, scale = ins[0], ins[1]
    zp = ins[2] if len(ins) > 2 else None
    wide = "float64" if scale.dtype == "float64" else "float32"

    def f(*i: Any) -> PrimExpr:
        v = q[_bidx(q, i)].astype("float32")
        if zp is not None:
            v = v - zp[_bidx(zp, i)].astype("float32")
        return (v.astype(wide) * scale[_bidx(scale, i)].astype(wide)).astype(out[0][1])

    return [te.compute(out[0][0], f, name="dequantize", tag="broadcast")]


register_op("dequantize", OpPattern.BROADCAST,
            lambda types, at: [(_bshape(types), at.get("to", types[1][1]))],
            _dequantize_ref, _dequantize_compute,
            doc="(q - zero_point) * scale (broadcast) as attr to (default: the scale's type)")


# requantize ---------------------------------------------------------------------------------
def quantize_multiplier(real: float) -> tuple[int, int]:
    """(multiplier, shift) with multiplier * 2**-shift ~= real, multiplier in [2**30, 2**31)
    for 0 < real < 1 (TFLite's convention): the most precision an int64 product keeps."""
    if not 0 < real < 1:
        raise ValueError(f"requantize scale {real} is not in (0, 1)")
    mant, exp = math.frexp(real)  # real = mant * 2**exp, mant in [0.5, 1)
    mult = round(mant * (1 << 31))
    if mult == 1 << 31:
        mult, exp = mult // 2, exp + 1
    return int(mult), int(31 - exp)


def _requantize_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    acc = ins[0].astype("int64")
    m, s = int(at["multiplier"]), int(at["shift"])
    y = (acc * m + (1 << (s - 1))) >> s
    lo, hi = _range(at)
    return [np.clip(y + int(at.get("zero_point", 0)), lo, hi).astype(at.get("to", "int8"))]


def _requantize_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    acc = ins[0]
    m, s = int(at["multiplier"]), int(at["shift"])
    lo, hi = _range(at)

    def f(*i: Any) -> PrimExpr:
        p = acc[i].astype("int64") * const(m, "int64") + const(1 << (s - 1), "int64")
        y = te.shift_right(p, const(s, "int64")) + const(int(at.get("zero_point", 0)), "int64")
        y = te.min_expr(te.max_expr(y, const(lo, "int64")), const(hi, "int64"))
        return y.astype(out[0][1])

    return [te.compute(acc.shape, f, name="requantize", tag="elemwise")]


def _requantize_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    m, s = int(at["multiplier"]), int(at["shift"])
    if not (0 < m < 2 ** 31 and 0 < s < 63):
        from ...errors import TensorforgeError

        raise TensorforgeError(f"requantize: multiplier {m} must be in (0, 2**31) and shift "
                               f"{s} in [1, 62] (an int64 product must not overflow)")
    return [(types[0][0], at.get("to", "int8"))]


register_op("requantize", OpPattern.ELEMWISE, _requantize_infer, _requantize_ref,
            _requantize_compute,
            doc="clip(((acc * multiplier + 2**(shift-1)) >> shift) + zero_point) of an int32 "
            "accumulator (round half up, int64 product); attrs multiplier, shift, zero_point, "
            "to (int8), lo, hi")
