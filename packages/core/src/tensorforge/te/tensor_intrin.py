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


def get_intrin(name: str, target: Any) -> TensorIntrin:
    """The tensor intrinsic `name` a plugin registered for `target` (`register_intrinsics`).

    The registry's `Intrinsic` names two callables: `desc(target)` returns the output tensor
    of the intrinsic's TE compute, or `(tensor, binds)` with `binds` mapping its tensors to
    Buffers (scope, shape, strides); `impl(ins, outs, target)` is the `fimpl` that emits the
    hardware call (a Stmt, or (body, reset, update))."""
    from ..errors import TensorforgeError
    from ..plugins import get_registry
    from ..target import Target

    tgt = Target.coerce(target)
    found = get_registry().intrinsics(tgt)
    desc = found.get(name)
    if desc is None:
        have = ", ".join(sorted(found)) or "none"
        raise TensorforgeError(f"no tensor intrinsic {name!r} for target {tgt}; it has: {have}")
    out = desc.load_desc()(tgt)
    binds = None
    if isinstance(out, tuple):
        out, binds = out
    impl = desc.load_impl()

    def fimpl(ins: Any, outs: Any) -> Any:
        return impl(ins, outs, tgt)

    return decl_tensor_intrin(out, fimpl, name=name, binds=binds)
