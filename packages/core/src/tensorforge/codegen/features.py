"""A pre-scan of kernels: which dtypes, vector types, calls and constructs they use.

The printer never decides a preamble while it prints (no side effects on the way); the
dialect's `preamble(features)` reads this record instead, so an extension pragma or a helper
function appears exactly when a kernel needs it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..expr import (
    BufferLoad,
    Call,
    Cast,
    ExprVisitor,
    FloorDiv,
    Max,
    PrimExpr,
    StringImm,
    post_order_collect,
)
from ..expr import dtype as dt
from ..tir.stmt import Allocate, AssertStmt, BufferStore, Stmt


@dataclass
class Features:
    """What a set of kernels uses (element dtypes, vector (dtype, lanes), call names ...)."""

    elements: set[str] = field(default_factory=set)
    vectors: set[tuple[str, int]] = field(default_factory=set)
    calls: set[tuple[str, str]] = field(default_factory=set)  # (op, element dtype)
    floor_int: set[str] = field(default_factory=set)  # int dtypes with floordiv/floormod
    #: float (dtype, lanes) of min/max (NaN-propagating: a helper function per type)
    minmax: set[tuple[str, int]] = field(default_factory=set)
    shared: bool = False
    asserts: bool = False

    @property
    def float16(self) -> bool:
        return "float16" in self.elements

    @property
    def float64(self) -> bool:
        return "float64" in self.elements

    def uses(self, op: str) -> bool:
        return any(o == op for o, _ in self.calls)


class _Scan(ExprVisitor):
    def __init__(self, f: Features):
        self.f = f

    def _dtype(self, d: str) -> None:
        p = dt.parse(d)
        if p.code == "handle":
            return
        self.f.elements.add(p.element)
        if p.lanes > 1:
            self.f.vectors.add((p.element, p.lanes))

    def generic_visit(self, node: Any) -> None:
        if isinstance(node, PrimExpr):
            self._dtype(node.dtype)
        super().generic_visit(node)

    def visit_Call(self, e: Call) -> None:
        arg = e.args[0].dtype if e.args else e.dtype
        self.f.calls.add((e.op, dt.element(arg)))
        self.generic_visit(e)

    def visit_Cast(self, e: Cast) -> None:
        self._dtype(e.value.dtype)
        self.generic_visit(e)

    def visit_FloorDiv(self, e: FloorDiv) -> None:
        if dt.is_int(e.dtype):
            self.f.floor_int.add(dt.element(e.dtype))
        self.generic_visit(e)

    visit_FloorMod = visit_FloorDiv  # type: ignore[assignment]

    def visit_Max(self, e: Max) -> None:
        p = dt.parse(e.dtype)
        if p.code == "float":
            self.f.minmax.add((p.element, p.lanes))
        self.generic_visit(e)

    visit_Min = visit_Max  # type: ignore[assignment]

    def visit_BufferLoad(self, e: BufferLoad) -> None:
        self._dtype(e.buffer.dtype)
        self.generic_visit(e)

    def visit_BufferStore(self, s: BufferStore) -> None:
        self._dtype(s.buffer.dtype)
        self.generic_visit(s)

    def visit_Allocate(self, s: Allocate) -> None:
        self._dtype(s.buffer.dtype)
        self.f.shared |= s.buffer.scope == "shared"
        self.generic_visit(s)

    def visit_AssertStmt(self, s: AssertStmt) -> None:
        self.f.asserts = True
        self.generic_visit(s)


def scan(kernels: Iterable[Any]) -> Features:
    """Features of `kernels` (objects with `.body` and `.params`)."""
    f = Features()
    sc = _Scan(f)
    for k in kernels:
        for p in k.params:
            sc._dtype(p.dtype)
        sc.visit(k.body)
    return f


def check_messages(body: Stmt) -> list[str]:
    """The messages of a kernel's assertions and data checks (`runtime_check`), each once, in
    a fixed order: status k of the kernel means message k - 1 failed."""
    found = post_order_collect(body, lambda n: isinstance(n, AssertStmt) or (
        isinstance(n, Call) and n.op == "runtime_check"))
    msgs = [n.message if isinstance(n, AssertStmt) else
            (n.args[2].value if len(n.args) > 2 and isinstance(n.args[2], StringImm) else "")
            for n in found]
    return list(dict.fromkeys(msgs))


def written_data(body: Stmt) -> set[Any]:
    """Data variables of the buffers `body` may write: stored to, or passed by address to a
    call (`address_of(buf[i])`: an intrinsic such as a tensor-core store may write there;
    `address_of(buf[i], "r")` promises a read)."""
    found = post_order_collect(body, lambda n: isinstance(n, BufferStore) or (
        isinstance(n, Call) and n.op == "address_of" and not (
            len(n.args) > 1 and isinstance(n.args[1], StringImm) and n.args[1].value == "r")))
    return {n.buffer.data if isinstance(n, BufferStore) else n.args[0].buffer.data
            for n in found}
