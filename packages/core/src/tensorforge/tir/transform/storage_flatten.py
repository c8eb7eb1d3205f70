"""Flatten multi-dimensional buffers to 1-D: every access gets one row-major index.

Strides come from the shape, padded where `storage_align` asked for it (recorded in
`func.attrs["storage_align"]` as {buffer: [(dim, factor, offset)]})."""

from __future__ import annotations

from typing import Any

from ...expr import Buffer, BufferLoad, ExprMutator, IntImm, PrimExpr, const
from ...expr import construct as _c
from ..stmt import Allocate, BufferStore, PrimFunc, Stmt


def _strides(buf: Buffer, align: list[tuple[int, int, int]]) -> list[PrimExpr]:
    if buf.strides:
        return list(buf.strides)
    n = len(buf.shape)
    strides: list[PrimExpr] = [const(1)] * n
    acc: PrimExpr = const(1)
    pads = {d: (f, o) for d, f, o in align}
    for d in range(n - 1, -1, -1):
        if d in pads and d < n - 1 and isinstance(acc, IntImm):
            f, o = pads[d]
            # pad the stride of dimension d so that stride % factor == offset
            s = acc.value
            s = s + ((o - s % f) % f)
            acc = const(s)
        strides[d] = acc
        acc = _c.mul(acc, buf.shape[d])
    return strides


class _Flatten(ExprMutator):
    def __init__(self, align: dict[Buffer, list[tuple[int, int, int]]]):
        self.align = align
        self.flat: dict[Buffer, tuple[Buffer, list[PrimExpr]]] = {}

    def flat_of(self, buf: Buffer) -> tuple[Buffer, list[PrimExpr]]:
        hit = self.flat.get(buf)
        if hit is None:
            strides = _strides(buf, self.align.get(buf, []))
            if buf.shape:
                size = _c.mul(strides[0], buf.shape[0])
            else:
                size = const(1)
            flat = Buffer(buf.name, (size,), buf.dtype, buf.scope, data=buf.data,
                          data_alignment=buf.data_alignment)
            hit = self.flat[buf] = (flat, strides)
        return hit

    def index(self, buf: Buffer, indices: tuple[PrimExpr, ...]) -> tuple[Buffer, PrimExpr]:
        flat, strides = self.flat_of(buf)
        if len(indices) != len(strides):
            raise ValueError(
                f"buffer {buf.name} has {len(strides)} dimensions, accessed with {len(indices)}"
            )
        idx: PrimExpr = buf.elem_offset
        for i, s in zip(indices, strides):
            idx = _c.add(idx, _c.mul(i, s))
        return flat, idx

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        idx = tuple(self.visit(i) for i in e.indices)
        flat, i = self.index(e.buffer, idx)
        return BufferLoad(flat, (i,))

    def visit_BufferStore(self, s: BufferStore) -> Stmt:
        idx = tuple(self.visit(i) for i in s.indices)
        flat, i = self.index(s.buffer, idx)
        return BufferStore(flat, self.visit(s.value), (i,))

    def visit_Allocate(self, s: Allocate) -> Stmt:
        flat, _ = self.flat_of(s.buffer)
        return Allocate(flat, self.visit(s.body))


def storage_flatten(func: PrimFunc) -> PrimFunc:
    align: dict[Buffer, Any] = func.attrs.get("storage_align", {})
    f = _Flatten(align)
    params = []
    # logical (pre-flattening) shape of each parameter, by position: names need not be unique
    shapes: list[tuple[Any, ...] | None] = list(
        func.attrs.get("buffer_shapes") or [None] * len(func.params))
    for k, p in enumerate(func.params):
        if isinstance(p, Buffer):
            if shapes[k] is None:
                shapes[k] = tuple(d.value if isinstance(d, IntImm) else getattr(d, "name", None)
                                  for d in p.shape)
            params.append(f.flat_of(p)[0])
        else:
            params.append(p)
    body = f.visit(func.body)
    attrs = {k: v for k, v in func.attrs.items() if k != "storage_align"}
    attrs["buffer_shapes"] = shapes
    return PrimFunc(func.name, tuple(params), body, attrs)
