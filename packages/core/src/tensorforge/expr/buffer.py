"""Buffers: named regions of memory with a shape, dtype and memory scope.

Identity matters (two buffers with equal fields are still two allocations), so this is a plain
class, not a value dataclass."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .construct import convert
from .nodes import BufferLoad, IntImm, PrimExpr, Var

SCOPES = ("global", "shared", "local", "warp", "acc_buffer", "inp_buffer", "wgt_buffer")


class Buffer:
    """`data` is the pointer variable; `scope` is "global", "shared", "local" or an
    accelerator scope; `offset_factor`/`data_alignment` describe what codegen may assume."""

    __slots__ = ("name", "shape", "dtype", "data", "scope", "strides", "elem_offset",
                 "data_alignment", "axis_separators")

    def __init__(
        self,
        name: str,
        shape: Sequence[Any],
        dtype: str = "float32",
        scope: str = "global",
        data: Var | None = None,
        strides: Sequence[Any] = (),
        elem_offset: Any = 0,
        data_alignment: int = 64,
    ):
        self.name = name
        self.shape: tuple[PrimExpr, ...] = tuple(convert(s) for s in shape)
        self.dtype = dtype
        self.scope = scope
        self.data = data if data is not None else Var(name, "handle")
        self.strides: tuple[PrimExpr, ...] = tuple(convert(s) for s in strides)
        self.elem_offset = convert(elem_offset)
        self.data_alignment = data_alignment

    def vload(self, *indices: Any) -> BufferLoad:
        return BufferLoad(self, tuple(convert(i) for i in indices))

    def __getitem__(self, idx: Any) -> BufferLoad:
        if not isinstance(idx, tuple):
            idx = (idx,)
        return self.vload(*idx)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def const_shape(self) -> tuple[int, ...] | None:
        if all(isinstance(s, IntImm) for s in self.shape):
            return tuple(s.value for s in self.shape)  # type: ignore[union-attr]
        return None

    def __repr__(self) -> str:
        shape = ", ".join(str(s) for s in self.shape)
        scope = "" if self.scope == "global" else f", scope={self.scope!r}"
        return f"Buffer({self.name}, [{shape}], {self.dtype}{scope})"
