"""The converter table: ONNX op_type -> converter(ctx, node) -> output values, with the range
of op versions (the `since_version` of the op's schema at the model's opset) it handles."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import onnx

ConvertFn = Callable[[Any, onnx.NodeProto], list[Any]]


@dataclass(frozen=True)
class Converter:
    op_type: str
    fn: ConvertFn
    min_version: int
    max_version: int


TABLE: dict[str, Converter] = {}


def converter(*op_types: str, versions: tuple[int, int] = (1, 25)) -> Callable[[ConvertFn],
                                                                                 ConvertFn]:
    """Register `fn` for `op_types`, handling op versions in `versions` (inclusive)."""

    def deco(fn: ConvertFn) -> ConvertFn:
        for op in op_types:
            if op in TABLE:
                raise ValueError(f"ONNX converter for {op} registered twice")
            TABLE[op] = Converter(op, fn, *versions)
        return fn

    return deco


_LOADED = False


def table() -> dict[str, Converter]:
    """The full table (importing the converter modules on first use)."""
    global _LOADED
    if not _LOADED:
        _LOADED = True
        from . import (  # noqa: F401
            convert_attention,
            convert_elementwise,
            convert_index,
            convert_loss,
            convert_math,
            convert_nn,
            convert_norm,
            convert_pool,
            convert_positions,
            convert_quant,
            convert_recurrent,
            convert_rnn,
            convert_select,
            convert_shape,
            convert_spatial,
        )
    return TABLE


def op_version(op_type: str, opset: int) -> int | None:
    """The since_version of op_type's schema at `opset`, or None if ONNX does not know it."""
    try:
        return onnx.defs.get_schema(op_type, opset, "").since_version
    except Exception:  # noqa: BLE001  (onnx raises SchemaError, a RuntimeError subclass)
        return None


def supported_ops() -> dict[str, tuple[int, int]]:
    """op_type -> (min, max) supported op version."""
    return {k: (c.min_version, c.max_version) for k, c in sorted(table().items())}
