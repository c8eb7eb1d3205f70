"""Scalar semantics of the operations whose IEEE or C behaviour needs a decision, in one place:
the constant folders, the numpy references and the code generators follow these.

- `fmax` / `fmin` propagate NaN like numpy's `maximum` / `minimum` and ONNX Runtime's Max /
  Min / Relu: a NaN in either operand gives NaN; between equal operands (``-0.0`` and
  ``+0.0``) the first one is returned, so ``max(-0.0, 0.0)`` is ``-0.0`` and Relu keeps
  ``-0.0``, as ONNX Runtime's Relu (numpy's SIMD loops return ``+0.0`` there).
- `float_to_int` is what x86's truncating conversions give, which is what ONNX Runtime and
  numpy produce on x86 (the ONNX spec leaves it undefined): NaN, infinities and values whose
  truncation does not fit become the "integer indefinite" ``INT_MIN`` of a 32- or 64-bit
  conversion; narrower integers convert through int32 and wrap (so NaN -> 0 for int8/uint8);
  unsigned 32/64-bit conversions use the compilers' split at 2**31 / 2**63.
"""

from __future__ import annotations

import math

from . import dtype as dt

__all__ = ["float_to_int", "fmax", "fmin"]


def fmax(x: float, y: float) -> float:
    """max of two scalars, NaN-propagating, the first of two equal operands."""
    return x if x >= y or x != x else y


def fmin(x: float, y: float) -> float:
    """min of two scalars, NaN-propagating, the first of two equal operands."""
    return x if x <= y or x != x else y


def _signed(v: float, bits: int) -> int:
    """x86 `cvttss2si`/`cvttsd2si` with a `bits`-bit result (32 or 64)."""
    lo = -(1 << (bits - 1))
    if not math.isfinite(v):
        return lo
    t = int(v)  # truncation toward zero
    return t if lo <= t < -lo else lo


def _wrap(v: int, bits: int, signed: bool) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v


def float_to_int(v: float, dtype: str) -> int | bool:
    """The integer (or bool) a float converts to, as compiled C does on x86 (see above)."""
    d = dt.parse(dtype)
    if d.code == "bool":
        return v != 0  # NaN -> True
    if d.code == "int":
        return _signed(v, 64) if d.bits == 64 else _wrap(_signed(v, 32), d.bits, True)
    # unsigned
    if d.bits < 32:
        return _wrap(_signed(v, 32), d.bits, False)
    half = float(1 << (d.bits - 1))
    if v >= half:  # (NaN is not: it takes the signed path)
        return _wrap(_signed(v - half, d.bits) ^ (1 << (d.bits - 1)), d.bits, False)
    return _wrap(_signed(v, d.bits), d.bits, False)
