"""The GPU verifier: what a kernel must satisfy before code generation.

For every kernel (a chain of `thread_extent` attributes):

- threads per block (the product of the `threadIdx` extents) within the target's
  `max-threads-per-block`, and bytes of `shared` allocations within its
  `max-shared-memory-per-block`;
- no barrier under a condition or loop that depends on `threadIdx` (threads that skip a
  barrier the others wait at hang the block);
- no shared buffer written by one statement and read by another (or read, then overwritten)
  with no barrier between: a race (`thread_sync` inserts those barriers; with it disabled the
  verifier names the buffer).
"""

from __future__ import annotations

from typing import Any

from ...errors import TensorforgeError
from ...expr import ExprVisitor, IntImm, Var, post_order_collect, uses_var
from ...expr import dtype as dt
from ..stmt import Allocate, AttrStmt, For, IfThenElse, PrimFunc, Stmt
from ..thread_scope import BLOCK_TAGS
from .thread_sync import is_sync, shared_hazards


class GPUVerifyError(TensorforgeError):
    """A kernel breaks a rule of GPU execution (limits, barriers, races)."""


def _limit(target: Any, name: str, default: int) -> int:
    opts = getattr(target, "options", None) or {}
    try:
        return int(opts.get(name, default) or default)
    except (TypeError, ValueError):
        return default


class _Barriers(ExprVisitor):
    """Barriers under thread-dependent control flow."""

    def __init__(self, tvars: set[Var]):
        self.tvars = tvars
        self.conds: list[str] = []
        self.bad: list[str] = []

    def _dep(self, e: Any) -> bool:
        return uses_var(e, lambda v: v in self.tvars)

    def visit_IfThenElse(self, s: IfThenElse) -> None:
        self.visit(s.condition)
        dep = self._dep(s.condition)
        if dep:
            self.conds.append(f"if {s.condition}")
        self.visit(s.then_case)
        if s.else_case is not None:
            self.visit(s.else_case)
        if dep:
            self.conds.pop()

    def visit_For(self, s: For) -> None:
        dep = self._dep(s.min) or self._dep(s.extent)
        if dep:
            self.conds.append(f"for {s.loop_var.name} in range({s.min}, +{s.extent})")
        self.visit(s.body)
        if dep:
            self.conds.pop()

    def visit_Evaluate(self, s: Any) -> None:
        if is_sync(s) and self.conds:
            self.bad.append(self.conds[-1])


def kernel_roots(body: Stmt) -> list[AttrStmt]:
    """The outermost thread_extent attribute of every kernel in a function body."""
    out: list[AttrStmt] = []

    class _Find(ExprVisitor):
        def visit_AttrStmt(self, s: AttrStmt) -> None:
            if s.key == "thread_extent":
                out.append(s)
                return
            self.generic_visit(s)

    _Find().visit(body)
    return out


def verify_kernel(func_name: str, kernel: AttrStmt, target: Any = None) -> None:
    """Raise `GPUVerifyError` if `kernel` breaks a rule (see the module docstring)."""
    ext: dict[str, int] = {}
    tvars: set[Var] = set()
    s: Stmt = kernel
    while isinstance(s, AttrStmt) and s.key == "thread_extent":
        ext[s.node.name] = s.value.value  # type: ignore[union-attr]
        if s.node.name in BLOCK_TAGS:
            tvars.add(s.node)
        s = s.body
    threads = 1
    for tag in BLOCK_TAGS:
        threads *= ext.get(tag, 1)
    max_threads = _limit(target, "max-threads-per-block", 1024)
    if threads > max_threads:
        shape = " x ".join(f"{t}={ext[t]}" for t in BLOCK_TAGS if t in ext)
        raise GPUVerifyError(
            f"{func_name}: a block of {threads} threads ({shape}) exceeds the target's "
            f"max-threads-per-block {max_threads}; use smaller thread splits")
    shared = 0
    for a in post_order_collect(kernel, lambda n: isinstance(n, Allocate)):
        if a.buffer.scope == "shared":
            size = a.buffer.shape[0]
            if isinstance(size, IntImm):
                shared += size.value * dt.nbytes(a.buffer.dtype)
    max_shared = _limit(target, "max-shared-memory-per-block", 48 * 1024)
    if shared > max_shared:
        raise GPUVerifyError(
            f"{func_name}: the kernel's shared buffers take {shared} bytes, more than the "
            f"target's max-shared-memory-per-block {max_shared}; use smaller tiles")
    bar = _Barriers(tvars)
    bar.visit(kernel)
    if bar.bad:
        raise GPUVerifyError(
            f"{func_name}: a barrier runs under `{bar.bad[0]}`, which depends on the thread "
            "index: threads that skip it would hang the block. Keep barriers outside "
            "thread-dependent conditions (make the extents divide, or guard the body instead)")
    races = shared_hazards(kernel)
    if races:
        raise GPUVerifyError(
            f"{func_name}: race on shared memory: {'; '.join(races)}. The thread_sync pass "
            "inserts the barriers; is it disabled?")


def verify_gpu(func: PrimFunc, target: Any = None) -> PrimFunc:
    """The pass: check every kernel of `func`; returns it unchanged."""
    for k in kernel_roots(func.body):
        verify_kernel(func.name, k, target)
    return func
