"""Data types as strings ("float32", "int8", "float32x8" for 8 lanes), with cached parsing.

Strings keep IR nodes small and printable; `parse` turns one into a `DType` once and caches it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

_DTYPE_RE = re.compile(r"^(float|int|uint|bool|handle)(\d*)(?:x(\d+))?$")

SUPPORTED = ("float32", "float16", "float64", "int8", "uint8", "int16", "int32", "int64", "bool")


@dataclass(frozen=True, slots=True)
class DType:
    """A parsed data type: `code` is float/int/uint/bool/handle, `bits`, `lanes`."""

    code: str
    bits: int
    lanes: int

    @property
    def element(self) -> str:
        return "bool" if self.code == "bool" else f"{self.code}{self.bits}"

    def __str__(self) -> str:
        return self.element if self.lanes == 1 else f"{self.element}x{self.lanes}"


@cache
def parse(dtype: str) -> DType:
    m = _DTYPE_RE.match(dtype)
    if not m:
        raise ValueError(
            f"unknown dtype {dtype!r}: use one of {', '.join(SUPPORTED)} "
            "(optionally with a lane count, e.g. 'float32x8')"
        )
    code, bits, lanes = m.group(1), m.group(2), m.group(3)
    if code == "bool":
        nbits = 1
    elif code == "handle":
        nbits = 64
    else:
        if not bits:
            raise ValueError(f"dtype {dtype!r} needs a bit width, e.g. '{code}32'")
        nbits = int(bits)
    return DType(code, nbits, int(lanes) if lanes else 1)


@cache
def with_lanes(dtype: str, lanes: int) -> str:
    d = parse(dtype)
    return d.element if lanes == 1 else f"{d.element}x{lanes}"


def lanes(dtype: str) -> int:
    return parse(dtype).lanes


def element(dtype: str) -> str:
    return parse(dtype).element


def is_float(dtype: str) -> bool:
    return parse(dtype).code == "float"


def is_int(dtype: str) -> bool:
    """Signed or unsigned integer (not bool)."""
    return parse(dtype).code in ("int", "uint")


def is_uint(dtype: str) -> bool:
    return parse(dtype).code == "uint"


def is_bool(dtype: str) -> bool:
    return parse(dtype).code == "bool"


def bits(dtype: str) -> int:
    return parse(dtype).bits


def nbytes(dtype: str) -> int:
    """Storage bytes of one element (bool takes one byte)."""
    d = parse(dtype)
    return max(1, d.bits // 8) * d.lanes


def to_numpy(dtype: str) -> str:
    """The numpy dtype name for an element type."""
    e = element(dtype)
    return "bool" if e == "bool" else e


def from_numpy(np_dtype: object) -> str:
    name = str(np_dtype)
    parse(name)
    return name
