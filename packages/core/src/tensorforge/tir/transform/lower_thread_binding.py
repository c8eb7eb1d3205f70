"""Thread-binding lowering: loops bound to `blockIdx.*` / `threadIdx.*` become the launch
dimensions of a kernel.

A kernel is the subtree under an outermost thread-bound loop. Inside it:

- every loop of one tag reads one variable (`threadIdx.x` ...), so the consumer's loop and the
  cooperative fetch loops of its shared tiles are the same hardware index;
- the launch extent of a tag is the largest extent of its outermost loops; a loop nested in
  another of the same tag may be shorter (a fetch stage covering fewer threads: its body gets
  a guard `if threadIdx.x < extent`) but not longer (an error naming its stage and axis);
- the loops disappear; `attr [threadIdx.x] thread_extent = 16` statements at the top of the
  kernel carry the launch shape (grid tags first, then block tags, x y z);
- `shared` allocations are hoisted to the kernel top: a block allocates them once.
"""

from __future__ import annotations

from ...errors import TensorforgeError
from ...expr import (
    LT,
    ExprMutator,
    IntImm,
    Var,
    post_order_collect,
    substitute,
)
from ...expr import construct as _c
from ..stmt import Allocate, AttrStmt, For, IfThenElse, PrimFunc, SeqStmt, Stmt, seq
from ..thread_scope import LAUNCH_TAGS, is_launch_tag


class ThreadBindingError(TensorforgeError):
    """A thread binding that cannot become a launch dimension."""


def _stage_of(loop: For) -> str:
    return dict(loop.annotations).get("stage", "?")


def _is_thread_loop(s: object) -> bool:
    return isinstance(s, For) and s.kind == "thread_binding" and is_launch_tag(s.thread_tag)


def _const_extent(loop: For, func: PrimFunc) -> int:
    if not isinstance(loop.extent, IntImm):
        raise ThreadBindingError(
            f"{func.name}: stage {_stage_of(loop)}, axis {loop.loop_var.name} is bound to "
            f"{loop.thread_tag} with extent {loop.extent}, which is not a constant; a launch "
            "dimension must be known at compile time (split by a constant factor first)")
    return loop.extent.value


class _Extents(ExprMutator):
    """First walk of a kernel: launch extent per tag; nested loops no longer than theirs."""

    def __init__(self, func: PrimFunc):
        self.func = func
        self.launch: dict[str, int] = {}
        self.outer: dict[str, For] = {}  # the enclosing loop of each tag

    def visit_For(self, s: For) -> Stmt:
        if not _is_thread_loop(s):
            self.visit(s.body)
            return s
        ext = _const_extent(s, self.func)
        tag = s.thread_tag
        enclosing = self.outer.get(tag)
        if enclosing is None:
            self.launch[tag] = max(self.launch.get(tag, 0), ext)
        elif ext > enclosing.extent.value:  # type: ignore[union-attr]
            raise ThreadBindingError(
                f"{self.func.name}: stage {_stage_of(s)}, axis {s.loop_var.name} is bound to "
                f"{tag} with extent {ext}, but it runs inside axis {enclosing.loop_var.name} of "
                f"stage {_stage_of(enclosing)}, bound to {tag} with extent "
                f"{enclosing.extent}; split axis {s.loop_var.name} so that its {tag} part has "
                f"at most {enclosing.extent} iterations")
        self.outer[tag] = s if enclosing is None else enclosing
        self.visit(s.body)
        if enclosing is None:
            del self.outer[tag]
        return s


class _Rewrite(ExprMutator):
    """Second walk: thread loops -> the tag's variable, guarded where shorter."""

    def __init__(self, launch: dict[str, int], tvars: dict[str, Var]):
        self.launch = launch
        self.tvars = tvars
        self.within: dict[str, int] = {}  # extent of the enclosing loop of each tag

    def visit_For(self, s: For) -> Stmt:
        if not _is_thread_loop(s):
            return super().generic_visit(s)
        tag = s.thread_tag
        ext = s.extent.value  # type: ignore[union-attr]
        limit = self.within.get(tag, self.launch[tag])
        tv = self.tvars[tag]
        value = tv if isinstance(s.min, IntImm) and s.min.value == 0 else _c.add(tv, s.min)
        body = substitute(s.body, {s.loop_var: value})
        outer = tag not in self.within
        if outer:
            self.within[tag] = ext
        body = self.visit(body)
        if outer:
            del self.within[tag]
        if ext < limit:
            body = IfThenElse(_c.call("bool", "likely", _c.cmp(LT, tv, ext)), body)
        return body


def _strip_shared(s: Stmt, found: list[Allocate]) -> Stmt:
    class _Strip(ExprMutator):
        def visit_Allocate(self, a: Allocate) -> Stmt:
            if a.buffer.scope == "shared":
                found.append(a)
                return self.visit(a.body)
            body = self.visit(a.body)
            return a if body is a.body else Allocate(a.buffer, body)

    return _Strip().visit(s)


def hoist_shared(kernel: Stmt) -> Stmt:
    """Move every `shared` allocation of a kernel (a chain of thread_extent attributes around
    its body) to just inside the attributes."""
    attrs: list[AttrStmt] = []
    body = kernel
    while isinstance(body, AttrStmt) and body.key == "thread_extent":
        attrs.append(body)
        body = body.body
    found: list[Allocate] = []
    body = _strip_shared(body, found)
    if not found:
        return kernel
    # virtual threads may have copied an allocation (one buffer, disjoint slices): keep one
    unique: dict[Var, Allocate] = {}
    for a in found:
        unique.setdefault(a.buffer.data, a)
    found = list(unique.values())
    from ...expr import free_vars

    bound = {a.node for a in attrs}
    for a in found:
        for d in a.buffer.shape:
            if any(v not in bound for v in free_vars(d)):
                raise ThreadBindingError(
                    f"shared buffer {a.buffer.name} has size {d}, which depends on a loop "
                    "inside the kernel; shared memory is allocated once per block, so its "
                    "size must be a constant")
    for a in reversed(found):
        body = Allocate(a.buffer, body)
    for a in reversed(attrs):
        body = AttrStmt(a.node, a.key, a.value, body)
    return body


def _kernel(root: For, func: PrimFunc) -> Stmt:
    ext = _Extents(func)
    ext.visit(root)
    tvars = {tag: Var(tag, "int32") for tag in ext.launch}
    body = _Rewrite(ext.launch, tvars).visit(root)
    for tag in reversed([t for t in LAUNCH_TAGS if t in ext.launch]):
        body = AttrStmt(tvars[tag], "thread_extent", IntImm(ext.launch[tag]), body)
    return hoist_shared(body)


class _Kernels(ExprMutator):
    def __init__(self, func: PrimFunc):
        self.func = func

    def visit_For(self, s: For) -> Stmt:
        if _is_thread_loop(s):
            return _kernel(s, self.func)
        return super().generic_visit(s)

    def visit_SeqStmt(self, s: SeqStmt) -> Stmt:
        return seq(*[self.visit(x) for x in s.seq])


def has_thread_loops(func: PrimFunc) -> bool:
    return any(_is_thread_loop(n) for n in post_order_collect(
        func.body, lambda n: isinstance(n, For)))


def lower_thread_bindings(func: PrimFunc) -> PrimFunc:
    """The pass (see the module docstring)."""
    if not has_thread_loops(func):
        return func
    return func.with_body(_Kernels(func).visit(func.body))


def kernel_extents(kernel: Stmt) -> dict[str, tuple[Var, int]]:
    """tag -> (variable, extent) from the thread_extent attributes at a kernel's top."""
    out: dict[str, tuple[Var, int]] = {}
    s = kernel
    while isinstance(s, AttrStmt) and s.key == "thread_extent":
        out[s.node.name] = (s.node, s.value.value)  # type: ignore[union-attr]
        s = s.body
    return out
