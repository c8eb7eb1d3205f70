"""Narrow data types (formats, storage, numpy encode/decode; the graph ops and their TE computes
are in `graph/ops/narrow.py`): bfloat16, the float8 formats, float4 and 2/4-bit integers.

They are stored narrow (one byte, two for bfloat16: the `storage` dtype, which kernels and
the executor's buffers use) and computed in float32 (int32 for the integer formats): the
`legalize_narrow_types` pass puts `narrow_decode` before and `narrow_encode` after every op
that computes on them; ops that only move data (reshape, transpose, slices ...) move the
stored bits. Graph values keep the narrow name (numpy's name from ml_dtypes: `bfloat16`,
`float8_e4m3fn` ...), which is also the dtype of a compiled model's inputs and outputs.

Encoding rounds to nearest even; `saturate` (ONNX Cast's default) clamps overflow and
infinities to the largest finite value, else they become infinity (float8_e5m2) or NaN.
Integer formats take a float by truncation and give 0 for values out of range (as onnx's
reference). The numpy references below compute bit for bit what the TE computes do."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class NarrowFormat:
    """`kind`: "float" (sign, `ebits` exponent, `mbits` mantissa, `bias`), "bf16", "e8m0"
    or "int"/"uint" (`mbits` value bits). `nan`: the code of NaN (None: no NaN);
    `inf`: the code of +inf (None: no inf); `fnuz`: no negative zero, NaN is 0x80."""

    name: str
    storage: str
    kind: str
    ebits: int = 0
    mbits: int = 0
    bias: int = 0
    max_value: float = 0.0
    nan: int | None = None
    inf: int | None = None
    fnuz: bool = False


FORMATS: dict[str, NarrowFormat] = {f.name: f for f in (
    NarrowFormat("bfloat16", "uint16", "bf16"),
    NarrowFormat("float8_e4m3fn", "uint8", "float", 4, 3, 7, 448.0, nan=0x7F),
    NarrowFormat("float8_e4m3fnuz", "uint8", "float", 4, 3, 8, 240.0, nan=0x80, fnuz=True),
    NarrowFormat("float8_e5m2", "uint8", "float", 5, 2, 15, 57344.0, nan=0x7E, inf=0x7C),
    NarrowFormat("float8_e5m2fnuz", "uint8", "float", 5, 2, 16, 57344.0, nan=0x80, fnuz=True),
    NarrowFormat("float4_e2m1fn", "uint8", "float", 2, 1, 1, 6.0),
    NarrowFormat("float8_e8m0fnu", "uint8", "e8m0", nan=0xFF),
    NarrowFormat("int4", "uint8", "int", mbits=4),
    NarrowFormat("uint4", "uint8", "uint", mbits=4),
    NarrowFormat("int2", "uint8", "int", mbits=2),
    NarrowFormat("uint2", "uint8", "uint", mbits=2),
)}


def is_narrow(dtype: str) -> bool:
    return dtype in FORMATS


def storage_dtype(dtype: str) -> str:
    """The dtype kernels and buffers use for `dtype` (itself unless it is narrow)."""
    f = FORMATS.get(dtype)
    return f.storage if f is not None else dtype


def compute_dtype(dtype: str) -> str:
    """What a narrow value computes in: float32, or int32 for the integer formats."""
    return "int32" if FORMATS[dtype].kind in ("int", "uint") else "float32"


def numpy_dtype(dtype: str) -> np.dtype:
    """numpy's dtype for a graph dtype (ml_dtypes registers the narrow ones)."""
    if dtype in FORMATS:
        import ml_dtypes  # noqa: F401  (registers bfloat16, float8_* ... with numpy)
    return np.dtype(dtype)


# numpy references ---------------------------------------------------------------------------
def _int_range(f: NarrowFormat) -> tuple[int, int]:
    return (-(1 << (f.mbits - 1)), (1 << (f.mbits - 1)) - 1) if f.kind == "int" else (
        0, (1 << f.mbits) - 1)


def decode_np(bits: np.ndarray, f: NarrowFormat) -> np.ndarray:
    """Stored bits -> float32 (int32 for the integer formats)."""
    b = bits.astype("uint32")
    if f.kind in ("int", "uint"):
        v = (b & ((1 << f.mbits) - 1)).astype("int32")
        return np.where(v > _int_range(f)[1], v - (1 << f.mbits), v).astype("int32")
    if f.kind == "bf16":
        return (b << 16).view("float32")
    if f.kind == "e8m0":
        out = np.where(b == 0, np.uint32(1 << 22), b << 23).view("float32")
        return np.where(b == 0xFF, np.float32("nan"), out).astype("float32")
    m, e = f.mbits, f.ebits
    s = (b >> (e + m)) & 1
    ef = (b >> m) & ((1 << e) - 1)
    mf = b & ((1 << m) - 1)
    emin = 1 - f.bias
    normal = ((ef.astype("int64") - f.bias + 127).clip(0, 255).astype("uint32") << 23) | (
        mf << (23 - m))
    sub = mf.astype("float32") * np.float32(2.0 ** (emin - m))
    mag = np.where(ef == 0, sub, normal.view("float32"))
    out = np.where(s == 1, -mag, mag).astype("float32")
    if f.fnuz:
        out = np.where(b == 0x80, np.float32("nan"), out)
    elif f.inf is not None:
        top = ef == (1 << e) - 1
        out = np.where(top & (mf == 0), np.where(s == 1, -np.inf, np.inf), out)
        out = np.where(top & (mf != 0), np.float32("nan"), out)
    elif f.nan is not None:
        out = np.where((b & 0x7F) == f.nan, np.float32("nan"), out)
    return out.astype("float32")


def encode_np(x: np.ndarray, f: NarrowFormat, saturate: bool = True,
              round_mode: str = "nearest") -> np.ndarray:
    """float32 (int32 for the integer formats) -> stored bits."""
    store = np.dtype(f.storage)
    if f.kind in ("int", "uint"):
        lo, hi = _int_range(f)
        with np.errstate(invalid="ignore"):
            t = np.trunc(x.astype("float64"))
        ok = (t >= lo) & (t <= hi)
        v = np.where(ok, t, 0).astype("int64")
        return (v & ((1 << f.mbits) - 1)).astype(store)
    x = x.astype("float32")
    u = x.view("uint32")
    if f.kind == "bf16":
        r = (u + np.uint32(0x7FFF) + ((u >> 16) & 1)) >> 16
        nan_code = ((u >> 16) & 0x8000) | 0x7FC0
        return np.where(np.isnan(x), nan_code, r).astype(store)
    if f.kind == "e8m0":
        fe, mant = (u >> 23) & 0xFF, u & 0x7FFFFF
        up = {"up": mant != 0, "down": np.zeros_like(mant, bool),
              "nearest": mant >= 0x400000}[round_mode]
        e = fe.astype("int64") + up
        e = np.where(np.isinf(x), 255, e)
        e = np.minimum(e, 254) if saturate else np.where(e > 254, 255, e)
        return np.where(np.isnan(x), 255, e).astype(store)
    m, e = f.mbits, f.ebits
    emin = 1 - f.bias
    sign = (u >> 31).astype("int64")
    a = np.abs(x)
    ex = ((u >> 23) & 0xFF).astype("int64") - 127
    eq = np.maximum(ex, emin) - m
    inv_q = ((127 - eq) << 23).astype("uint32").view("float32")
    q = ((eq + 127) << 23).astype("uint32").view("float32")
    with np.errstate(invalid="ignore", over="ignore"):
        r = np.round(a * inv_q) * q
    overflow = np.isinf(a) | (r > f.max_value)
    rb = r.astype("float32").view("uint32")
    er = ((rb >> 23) & 0xFF).astype("int64") - 127
    normal = ((er + f.bias) << m) | ((rb >> (23 - m)) & ((1 << m) - 1))
    with np.errstate(over="ignore", invalid="ignore"):
        sub = (r * np.float32(2.0 ** (m - emin))).astype("int64")
    code = np.where(r == 0, 0, np.where(er >= emin, normal, sub))
    sbit = sign << (e + m)
    if f.fnuz:
        sbit = np.where(code == 0, 0, sbit)
    max_code = _max_code(f)
    if saturate or (f.nan is None and f.inf is None):  # float4: nothing else to overflow to
        over = sbit | max_code
    elif f.inf is not None:
        over = sbit | f.inf
    else:
        over = (sbit | f.nan) if not f.fnuz else np.full_like(code, f.nan)
    out = np.where(overflow, over, sbit | code)
    if f.nan is not None:
        nan = (sign << (e + m)) | f.nan if not f.fnuz else np.full_like(code, f.nan)
        out = np.where(np.isnan(x), nan, out)
    else:
        out = np.where(np.isnan(x), sign << (e + m), out)
    return out.astype(store)


def _max_code(f: NarrowFormat) -> int:
    """The code of the largest finite value."""
    a = np.array([f.max_value], "float32")
    u = int(a.view("uint32")[0])
    er = ((u >> 23) & 0xFF) - 127
    return ((er + f.bias) << f.mbits) | ((u >> (23 - f.mbits)) & ((1 << f.mbits) - 1))
