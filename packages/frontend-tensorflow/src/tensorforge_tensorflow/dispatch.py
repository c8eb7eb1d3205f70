"""The converter table: TensorFlow op type -> converter(ctx, node) -> output entries (one per
output tensor of the node, in order)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ConvertFn = Callable[[Any, Any], list[Any]]

TABLE: dict[str, ConvertFn] = {}


def converter(*op_types: str) -> Callable[[ConvertFn], ConvertFn]:
    """Register `fn` for `op_types`."""

    def deco(fn: ConvertFn) -> ConvertFn:
        for op in op_types:
            if op in TABLE:
                raise ValueError(f"TensorFlow converter for {op} registered twice")
            TABLE[op] = fn
        return fn

    return deco


_LOADED = False


def table() -> dict[str, ConvertFn]:
    """The full table (importing the converter modules on first use)."""
    global _LOADED
    if not _LOADED:
        _LOADED = True
        from . import control_flow, convert_math, convert_nn, convert_shape  # noqa: F401
    return TABLE


def supported_ops() -> list[str]:
    """The TensorFlow op types the frontend converts."""
    return sorted(table())
