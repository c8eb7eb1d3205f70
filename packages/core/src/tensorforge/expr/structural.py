"""Structural equality and hashing: same node types with equal fields; variables by identity."""

from __future__ import annotations

import dataclasses
from typing import Any

from .nodes import PrimExpr, Var


def _fields(cls: type) -> tuple[str, ...]:
    f = _FIELDS.get(cls)
    if f is None:
        f = tuple(x.name for x in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else ()
        _FIELDS[cls] = f
    return f


_FIELDS: dict[type, tuple[str, ...]] = {}


def structural_equal(a: Any, b: Any) -> bool:
    if a is b:
        return True
    ta = type(a)
    if ta is not type(b):
        return False
    if isinstance(a, Var):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(structural_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, PrimExpr) or (dataclasses.is_dataclass(a) and _is_ir(ta)):
        return all(structural_equal(getattr(a, f), getattr(b, f)) for f in _fields(ta))
    if dataclasses.is_dataclass(a) or hasattr(a, "__dict__"):
        return False  # buffers, tensors, iter vars: identity
    return bool(a == b)


def _is_ir(cls: type) -> bool:
    """Value-like IR helper dataclasses (Range, CommReducer, tir statements)."""
    return getattr(cls, "__module__", "").startswith(("tensorforge.expr", "tensorforge.tir"))


def structural_hash(a: Any) -> int:
    if isinstance(a, Var):
        return id(a)
    if isinstance(a, tuple):
        return hash(tuple(structural_hash(x) for x in a))
    ta = type(a)
    if isinstance(a, PrimExpr) or (dataclasses.is_dataclass(a) and _is_ir(ta)):
        return hash((ta.__name__, *(structural_hash(getattr(a, f)) for f in _fields(ta))))
    try:
        return hash(a)
    except TypeError:
        return id(a)
