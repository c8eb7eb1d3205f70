"""The graph ops `narrow_decode` and `narrow_encode` (see `graph/narrow_types.py`): TE computes
that convert stored narrow bits to float32 (int32) and back with integer bit operations,
bit for bit as the numpy references."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import te
from ...expr import PrimExpr, const
from ..narrow_types import (
    FORMATS,
    NarrowFormat,
    _int_range,
    _max_code,
    compute_dtype,
    decode_np,
    encode_np,
    numpy_dtype,
)
from ..registry import OpPattern, register_op


# TE computes ----------------------------------------------------------------------------------
def _u(v: int) -> PrimExpr:
    return const(v, "uint32")


def _pow2(e: PrimExpr) -> PrimExpr:
    """2**e as float32 for an int32 e in [-126, 127] (exact: built from the bits)."""
    return te.reinterpret(te.shift_left((e + const(127, "int32")).astype("uint32"), _u(23)),
                          "float32")


def decode_te(b: PrimExpr, f: NarrowFormat) -> PrimExpr:
    b = b.astype("uint32")
    if f.kind in ("int", "uint"):
        v = te.bitwise_and(b, _u((1 << f.mbits) - 1)).astype("int32")
        if f.kind == "uint":
            return v
        hi = _int_range(f)[1]
        return te.select(v > const(hi, "int32"), v - const(1 << f.mbits, "int32"), v)
    if f.kind == "bf16":
        return te.reinterpret(te.shift_left(b, _u(16)), "float32")
    nan = const(float("nan"), "float32")
    if f.kind == "e8m0":
        bits = te.select(b == _u(0), _u(1 << 22), te.shift_left(b, _u(23)))
        return te.select(b == _u(0xFF), nan, te.reinterpret(bits, "float32"))
    m, e = f.mbits, f.ebits
    emin = 1 - f.bias
    s = te.bitwise_and(te.shift_right(b, _u(e + m)), _u(1))
    ef = te.bitwise_and(te.shift_right(b, _u(m)), _u((1 << e) - 1))
    mf = te.bitwise_and(b, _u((1 << m) - 1))
    normal_bits = te.bitwise_or(te.shift_left(ef + _u(127 - f.bias), _u(23)),
                                te.shift_left(mf, _u(23 - m)))
    sub = mf.astype("float32") * const(2.0 ** (emin - m), "float32")
    mag = te.select(ef == _u(0), sub, te.reinterpret(normal_bits, "float32"))
    out = te.select(s == _u(1), -mag, mag)
    if f.fnuz:
        return te.select(b == _u(0x80), nan, out)
    if f.inf is not None:
        top = ef == _u((1 << e) - 1)
        inf = te.select(s == _u(1), const(float("-inf"), "float32"),
                        const(float("inf"), "float32"))
        return te.select(top, te.select(mf == _u(0), inf, nan), out)
    if f.nan is not None:
        return te.select(te.bitwise_and(b, _u(0x7F)) == _u(f.nan), nan, out)
    return out


def encode_te(x: PrimExpr, f: NarrowFormat, saturate: bool = True,
              round_mode: str = "nearest") -> PrimExpr:
    store = f.storage
    if f.kind in ("int", "uint"):
        lo, hi = _int_range(f)
        t = te.trunc(x.astype("float32")) if x.dtype.startswith("float") else x.astype(
            "float32")
        ok = te.all(t >= const(float(lo), "float32"), t <= const(float(hi), "float32"))
        v = te.select(ok, t, const(0.0, "float32")).astype("int32")
        return te.bitwise_and(v, const((1 << f.mbits) - 1, "int32")).astype(store)
    x = x.astype("float32")
    u = te.reinterpret(x, "uint32")
    isnan = x != x
    if f.kind == "bf16":
        r = te.shift_right(u + _u(0x7FFF) + te.bitwise_and(te.shift_right(u, _u(16)), _u(1)),
                           _u(16))
        nan_code = te.bitwise_or(te.bitwise_and(te.shift_right(u, _u(16)), _u(0x8000)),
                                 _u(0x7FC0))
        return te.select(isnan, nan_code, r).astype(store)
    if f.kind == "e8m0":
        fe = te.bitwise_and(te.shift_right(u, _u(23)), _u(0xFF)).astype("int32")
        mant = te.bitwise_and(u, _u(0x7FFFFF))
        up = {"up": mant != _u(0), "nearest": mant >= _u(0x400000)}.get(round_mode)
        e = fe + (up.astype("int32") if up is not None else const(0, "int32"))
        e = te.select(x == const(float("inf"), "float32"), const(255, "int32"), e)
        top = const(254, "int32")
        e = te.min_expr(e, top) if saturate else te.select(e > top, const(255, "int32"), e)
        return te.select(isnan, const(255, "int32"), e).astype(store)
    m, e = f.mbits, f.ebits
    emin = 1 - f.bias
    sign = te.shift_right(u, _u(31)).astype("int32")
    a = te.abs(x)
    ex = te.bitwise_and(te.shift_right(u, _u(23)), _u(0xFF)).astype("int32") - const(
        127, "int32")
    eq = te.max_expr(ex, const(emin, "int32")) - const(m, "int32")
    r = te.round(a * _pow2(-eq)) * _pow2(eq)
    overflow = te.any(a == const(float("inf"), "float32"),
                      r > const(f.max_value, "float32"))
    rb = te.reinterpret(r, "uint32")
    er = te.bitwise_and(te.shift_right(rb, _u(23)), _u(0xFF)).astype("int32") - const(
        127, "int32")
    normal = te.bitwise_or(
        te.shift_left(er + const(f.bias, "int32"), const(m, "int32")),
        te.bitwise_and(te.shift_right(rb, _u(23 - m)), _u((1 << m) - 1)).astype("int32"))
    sub = (r * const(2.0 ** (m - emin), "float32")).astype("int32")
    zero = const(0, "int32")
    code = te.select(r == const(0.0, "float32"), zero,
                     te.select(er >= const(emin, "int32"), normal, sub))
    sbit = te.shift_left(sign, const(e + m, "int32"))
    if f.fnuz:
        sbit = te.select(code == zero, zero, sbit)
    if saturate or (f.nan is None and f.inf is None):  # float4: nothing else to overflow to
        over = te.bitwise_or(sbit, const(_max_code(f), "int32"))
    elif f.inf is not None:
        over = te.bitwise_or(sbit, const(f.inf, "int32"))
    elif f.fnuz:
        over = const(f.nan, "int32")
    else:
        over = te.bitwise_or(sbit, const(f.nan, "int32"))
    out = te.select(overflow, over, te.bitwise_or(sbit, code))
    signed_zero = te.shift_left(sign, const(e + m, "int32"))
    if f.nan is None:
        nan_code = signed_zero
    elif f.fnuz:
        nan_code = const(f.nan, "int32")
    else:
        nan_code = te.bitwise_or(signed_zero, const(f.nan, "int32"))
    return te.select(isnan, nan_code, out).astype(store)


# graph ops --------------------------------------------------------------------------------
def _decode_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    f = FORMATS[at["fmt"]]
    x = ins[0]
    bits = x.view(f.storage) if x.dtype != np.dtype(f.storage) else x
    return [decode_np(bits, f)]


def _encode_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    f = FORMATS[at["fmt"]]
    bits = encode_np(np.asarray(ins[0]), f, at.get("saturate", True),
                     at.get("round_mode", "nearest"))
    return [bits.view(numpy_dtype(f.name))]


register_op(
    "narrow_decode", OpPattern.ELEMWISE,
    lambda types, at: [(types[0][0], compute_dtype(at["fmt"]))], _decode_ref,
    lambda ins, at, out: [te.compute(ins[0].shape, lambda *i: decode_te(
        ins[0][i], FORMATS[at["fmt"]]), name="decode", tag="elemwise")],
    doc="a narrow value (attr fmt) -> float32 (int32 for the integer formats)")
register_op(
    "narrow_encode", OpPattern.ELEMWISE, lambda types, at: [(types[0][0], at["fmt"])],
    _encode_ref,
    lambda ins, at, out: [te.compute(ins[0].shape, lambda *i: encode_te(
        ins[0][i], FORMATS[at["fmt"]], at.get("saturate", True),
        at.get("round_mode", "nearest")), name="encode", tag="elemwise,materialize")],
    doc="float32 (int32 for the integer formats) -> narrow attr fmt; attrs saturate, "
        "round_mode (float8_e8m0fnu: up, down, nearest)")
