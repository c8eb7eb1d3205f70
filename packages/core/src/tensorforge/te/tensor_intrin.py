"""Tensor intrinsics for `tensorize`: a description of the semantics in TE (`op`) and an
implementation (`fimpl`) that emits the hardware call over buffers bound to the regions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..expr import Buffer, Var
from .tensor import ComputeOp, Tensor


@dataclass(eq=False)
class TensorIntrin:
    """`fimpl(ins, outs)` returns a Stmt, or a tuple (body, reset, update) for reductions,
    where `ins`/`outs` are Buffers whose `elem_offset`/`strides` are bound to the matched
    region at tensorize time."""

    name: str
    op: ComputeOp
    fimpl: Callable[..., Any]
    inputs: list[Tensor]
    buffers: dict[Tensor, Buffer] = field(default_factory=dict)
    scope: str = "global"


def decl_tensor_intrin(
    out: Tensor,
    fimpl: Callable[..., Any],
    name: str = "tensor_intrin",
    binds: dict[Tensor, Buffer] | None = None,
    scope: str = "global",
) -> TensorIntrin:
    """Declare an intrinsic whose semantics are the compute that produces `out`."""
    op = out.op
    if not isinstance(op, ComputeOp):
        raise TypeError(f"decl_tensor_intrin needs a compute tensor, got {out!r}")
    binds = dict(binds or {})
    for t in [*op.input_tensors, out]:
        if t not in binds:
            strides = [Var(f"{t.name}_s{i}") for i in range(len(t.shape) - 1)] + [1]
            binds[t] = Buffer(t.name, t.shape, t.dtype, scope, strides=strides,
                              elem_offset=Var(f"{t.name}_elem_offset"))
    return TensorIntrin(name, op, fimpl, list(op.input_tensors), binds, scope)
