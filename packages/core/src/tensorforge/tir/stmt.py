"""Loop-IR statements and `PrimFunc`, the unit that target code generators consume.

Conventions every pass and backend relies on:
- Before `storage_flatten` buffers are multi-dimensional; after it every BufferLoad/BufferStore
  has exactly one index into a 1-D buffer and `Allocate` shapes are 1-D.
- A vector access has a `Ramp` index (contiguous when the stride is 1) and a vector value.
- `For.kind` is "serial", "parallel" (one OpenMP region on CPU), "vectorized" (removed by the
  vectorize pass), "unrolled", or "thread_binding" (GPU; `thread_tag` names the axis).
- `AttrStmt` carries scoped annotations: "thread_extent", "virtual_thread", "pragma_<name>",
  "double_buffer_scope", "storage_alignment", "tensorize".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..expr import Buffer, IntImm, PrimExpr, Var
from ..expr.functor import register_node_base


class Stmt:
    __slots__ = ()

    def __str__(self) -> str:
        from .printer import stmt_str

        return stmt_str(self)

    __repr__ = __str__


register_node_base(Stmt)

_node = dataclass(frozen=True, eq=False, slots=True, repr=False)

FOR_KINDS = ("serial", "parallel", "vectorized", "unrolled", "thread_binding")


@_node
class LetStmt(Stmt):
    var: Var
    value: PrimExpr
    body: Stmt


@_node
class AttrStmt(Stmt):
    node: Any
    key: str
    value: PrimExpr
    body: Stmt


@_node
class AssertStmt(Stmt):
    condition: PrimExpr
    message: str
    body: Stmt


@_node
class BufferStore(Stmt):
    buffer: Buffer
    value: PrimExpr
    indices: tuple[PrimExpr, ...]


@_node
class Allocate(Stmt):
    """Allocate `buffer` (its shape, dtype and scope) for the duration of `body`."""

    buffer: Buffer
    body: Stmt


@_node
class For(Stmt):
    loop_var: Var
    min: PrimExpr
    extent: PrimExpr
    kind: str
    body: Stmt
    thread_tag: str = ""
    annotations: tuple[tuple[str, Any], ...] = ()


@_node
class IfThenElse(Stmt):
    condition: PrimExpr
    then_case: Stmt
    else_case: Stmt | None = None


@_node
class SeqStmt(Stmt):
    seq: tuple[Stmt, ...]


@_node
class Evaluate(Stmt):
    value: PrimExpr


def seq(*stmts: Stmt | None) -> Stmt:
    """A flat SeqStmt of the non-empty statements (a single one is returned as is)."""
    out: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, SeqStmt):
            out.extend(s.seq)
        elif is_noop(s):
            continue
        else:
            out.append(s)
    if not out:
        return NOOP
    return out[0] if len(out) == 1 else SeqStmt(tuple(out))


def is_noop(s: Stmt) -> bool:
    """An evaluated constant: a statement with no effect (what `seq` drops)."""
    return isinstance(s, Evaluate) and isinstance(s.value, IntImm)


@dataclass(eq=False, repr=False)
class PrimFunc:
    """A kernel: `params` are Buffers (passed as pointers) or scalar Vars, in call order."""

    name: str
    params: tuple[Buffer | Var, ...]
    body: Stmt
    attrs: dict[str, Any] = field(default_factory=dict)

    def with_body(self, body: Stmt) -> PrimFunc:
        return PrimFunc(self.name, self.params, body, dict(self.attrs))

    def __str__(self) -> str:
        from .printer import func_str

        return func_str(self)

    __repr__ = __str__


NOOP: Stmt = Evaluate(IntImm(0))
