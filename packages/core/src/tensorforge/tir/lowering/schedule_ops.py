"""Loop-nest generation: every stage becomes loops over its leaf axes around a store, attached
stages are spliced into their consumer's loop, and intermediate tensors get buffers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...arith import Analyzer
from ...expr import (
    EQ,
    Buffer,
    BufferLoad,
    Call,
    ExprMutator,
    IntImm,
    PrimExpr,
    ProducerLoad,
    Reduce,
    Var,
    const,
    substitute,
    uses_var,
)
from ...expr import construct as _c
from ...schedule import Schedule, ScheduleError, Stage
from ...te.tensor import REDUCE, ComputeOp, IterVar, PlaceholderOp, Tensor
from ..stmt import (
    Allocate,
    AttrStmt,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    PrimFunc,
    Stmt,
    seq,
)
from ..thread_scope import is_launch_tag
from .bound import StageBounds, bound_tag, effective_scope, infer_bounds

_FOR_KIND = {"vectorize": "vectorized", "unroll": "unrolled", "parallel": "parallel",
             "bind": "thread_binding"}


class _InlineExpander(ExprMutator):
    """Replace reads of inlined tensors by their (already expanded) bodies."""

    def __init__(self, inlined: dict[Tensor, tuple[list[Var], PrimExpr]]):
        self.inlined = inlined

    def visit_ProducerLoad(self, e: ProducerLoad) -> PrimExpr:
        idx = tuple(self.visit(i) for i in e.indices)
        hit = self.inlined.get(e.producer)
        if hit is None:
            if all(a is b for a, b in zip(idx, e.indices)):
                return e
            return ProducerLoad(e.producer, idx)
        params, body = hit
        return substitute(body, dict(zip(params, idx)))


def expand_inline(sch: Schedule) -> dict[Stage, tuple[PrimExpr, ...]]:
    inlined: dict[Tensor, tuple[list[Var], PrimExpr]] = {}
    bodies: dict[Stage, tuple[PrimExpr, ...]] = {}
    mut = _InlineExpander(inlined)
    for st in sch.stages:
        op = st.op
        if not isinstance(op, ComputeOp):
            continue
        b = tuple(mut.visit(x) for x in op.body) if inlined else op.body
        if st.attach_type == "inline":
            for i, x in enumerate(b):
                inlined[op.output(i)] = ([iv.var for iv in op.axis], x)
        else:
            bodies[st] = b
    return bodies


class _LoadsToBuffers(ExprMutator):
    def __init__(self, lowering: _Lowering):
        self.lw = lowering

    def visit_ProducerLoad(self, e: ProducerLoad) -> PrimExpr:
        idx = [self.visit(i) for i in e.indices]
        t = e.producer
        buf = self.lw.buffer_of(t)
        mins = self.lw.region_min.get(t)
        if mins is not None:
            idx = [_c.sub(i, m) for i, m in zip(idx, mins)]
        return BufferLoad(buf, tuple(self.lw.ana.simplify(i) for i in idx))


class _Lowering:
    def __init__(self, sch: Schedule, args: Sequence[Any], name: str):
        self.sch = sch
        self.name = name
        self.ana = Analyzer()
        self.args = [sch.current(a) if isinstance(a, Tensor) else a for a in args]
        self.buffers: dict[Tensor, Buffer] = {}
        self.region_min: dict[Tensor, list[PrimExpr]] = {}
        self.params: list[Buffer | Var] = []
        self.align: dict[Buffer, list[tuple[int, int, int]]] = {}
        for a in self.args:
            if isinstance(a, Tensor):
                if a in self.buffers:
                    raise ScheduleError(f"lower: tensor {a.name} appears twice in the arguments")
                buf = Buffer(a.name, a.shape, a.dtype)
                self.buffers[a] = buf
                self.params.append(buf)
            elif isinstance(a, Buffer):
                self.params.append(a)
            elif isinstance(a, Var):
                self.params.append(a)
            else:
                raise TypeError(f"lower: argument {a!r} is not a tensor, buffer or variable")
        self.bodies = expand_inline(sch)
        self.bounds: dict[Stage, StageBounds] = infer_bounds(sch, self.bodies, self.ana)
        self.attached: dict[tuple[int, int], list[Stage]] = {}
        for st in sch.stages:
            if st.attach_type == "scope":
                key = (id(st.attach_stage), id(st.attach_ivar))
                self.attached.setdefault(key, []).append(st)
        self._check_inputs()
        # declare every buffer first: consumers' loads need producers' region offsets
        self.allocs: dict[Stage, list[Buffer]] = {}
        for st in sch.stages:
            if isinstance(st.op, ComputeOp) and st.attach_type != "inline":
                self.allocs[st] = self._declare(st)

    def _check_inputs(self) -> None:
        missing = []
        for st in self.sch.stages:
            if isinstance(st.op, PlaceholderOp) and st.op.output(0) not in self.buffers:
                used = any(st.op.output(0) in s.op.input_tensors for s in self.sch.stages)
                if used:
                    missing.append(st.op.name)
        if missing:
            raise ScheduleError(
                f"lower: input placeholder(s) {', '.join(missing)} are read but not in the "
                "argument list; pass every input and output tensor in args"
            )

    def buffer_of(self, t: Tensor) -> Buffer:
        buf = self.buffers.get(t)
        if buf is None:
            raise ScheduleError(f"lower: no buffer for tensor {t.name} (internal error)")
        return buf

    # buffers for intermediate stages ---------------------------------------------------
    def _declare(self, st: Stage) -> list[Buffer]:
        """Buffers a non-argument stage needs; returns those to allocate."""
        op = st.op
        sb = self.bounds[st]
        allocs = []
        for i in range(op.num_outputs):
            t = op.output(i)
            if st.attach_type == "scope":
                self.region_min[t] = [sb.ranges[iv].min for iv in op.axis]
                shape = [sb.ranges[iv].extent for iv in op.axis]
            else:
                shape = list(t.shape)
            if t in self.buffers:
                if st.attach_type == "scope":
                    raise ScheduleError(
                        f"lower: {t.name} is an argument but attached with compute_at; "
                        "arguments must be computed at root"
                    )
                continue
            scope = effective_scope(st)
            buf = Buffer(t.name, shape, t.dtype, scope)
            if st.align_specs:
                dims = list(op.axis)  # type: ignore[attr-defined]
                self.align[buf] = [(dims.index(iv), f, o) for iv, f, o in st.align_specs]
            self.buffers[t] = buf
            allocs.append(buf)
        return allocs

    # nests -------------------------------------------------------------------------------
    def stage_nest(self, st: Stage) -> Stmt:
        op = st.op
        assert isinstance(op, ComputeOp)
        sb = self.bounds[st]
        vmap = {iv.var: sb.root_value[iv] for iv in sb.root_value}
        loads = _LoadsToBuffers(self)
        bodies = [loads.visit(substitute(b, vmap)) for b in self.bodies[st]]
        out_idx = []
        for iv in op.axis:
            v = _c.sub(sb.root_value[iv], sb.ranges[iv].min)
            out_idx.append(self.ana.simplify(v))
        out_idx_t = tuple(out_idx)
        outs = [self.buffer_of(op.output(i)) for i in range(op.num_outputs)]
        leaves = st.leaf_iter_vars
        t_pos = next((i for i, iv in enumerate(leaves)
                      if getattr(st.iter_var_attrs.get(iv), "kind", "") == "tensorize"), None)
        if t_pos is not None:
            return self._tensorized_nest(st, t_pos, bodies, out_idx_t, outs)
        if not op.reduce_axis:
            store = seq(*[BufferStore(b, v, out_idx_t) for b, v in zip(outs, bodies)])
            store = self._guard(store, sb.predicates)
            return self._loops(st, leaves, store)
        reduce_leaf = {iv.var for iv in leaves if iv.kind == REDUCE}
        p = next(i for i, iv in enumerate(leaves) if iv.kind == REDUCE)
        red: Reduce = bodies[0]  # type: ignore[assignment]
        if any(iv.kind == REDUCE and is_launch_tag(bound_tag(st, iv)) for iv in leaves):
            body = self._cross_thread_reduce(st, leaves[p:], red, out_idx_t, outs, reduce_leaf)
            return self._loops(st, leaves[:p], body)
        init_vals = red.init if red.init else red.combiner.identity
        dp_preds = [c for c in sb.predicates if not uses_var(c, lambda v: v in reduce_leaf)]
        init = seq(*[BufferStore(b, v, out_idx_t) for b, v in zip(outs, init_vals)])
        init = self._guard(init, dp_preds)
        init_nest = self._loops(st, [iv for iv in leaves[p:] if iv.kind != REDUCE], init,
                                attach=False)
        olds = tuple(BufferLoad(b, out_idx_t) for b in outs)
        new = red.combiner.combine(olds, red.source)
        if len(outs) == 1:
            update: Stmt = BufferStore(outs[0], new[0], out_idx_t)
        else:
            tmps = [Var(f"{b.name}_v{i}", b.dtype) for i, b in enumerate(outs)]
            update = seq(*[BufferStore(b, t, out_idx_t) for b, t in zip(outs, tmps)])
            for t, v in reversed(list(zip(tmps, new))):
                update = LetStmt(t, v, update)
        cond = red.condition
        if not (isinstance(cond, IntImm) and cond.value):
            update = IfThenElse(cond, update)
        update = self._guard(update, sb.predicates)
        update_nest = self._loops(st, leaves[p:], update)
        return self._loops(st, leaves[:p], seq(init_nest, update_nest))

    def _cross_thread_reduce(self, st: Stage, leaves: Sequence[IterVar], red: Reduce,
                             out_idx: tuple[PrimExpr, ...], outs: list[Buffer],
                             reduce_leaf: set[Var]) -> Stmt:
        """A reduction axis bound to GPU threads: each thread folds its share into a local
        accumulator, `tir.thread_allreduce` combines the accumulators of the bound threads
        (lowered to a shared-memory tree or warp shuffles by `lower_thread_allreduce`), and
        the first thread stores the result. The thread-bound loops go outermost: they are
        not loops on the device, so their position does not change the computation."""
        sb = self.bounds[st]
        bound = [iv for iv in leaves if iv.kind == REDUCE and is_launch_tag(bound_tag(st, iv))]
        serial = [iv for iv in leaves if iv not in bound]
        if any(iv.kind != REDUCE for iv in serial):
            names = ", ".join(iv.name for iv in serial if iv.kind != REDUCE)
            raise ScheduleError(
                f"stage {st.name}: a reduction bound to GPU threads must be the innermost "
                f"part of the nest, but data-parallel axes {names} follow the first reduction "
                "axis; reorder them before it")
        accs = [Buffer(f"{b.name}.red", (1,), b.dtype, "local") for b in outs]
        zero = (const(0),)
        acc_loads = tuple(BufferLoad(a, zero) for a in accs)
        new = red.combiner.combine(acc_loads, red.source)
        update = self._store_all(accs, new, zero)
        cond = red.condition
        if not (isinstance(cond, IntImm) and cond.value):
            update = IfThenElse(cond, update)
        update = self._guard(update, sb.predicates)
        init = seq(*[BufferStore(a, v, zero) for a, v in zip(accs, red.combiner.identity)])
        call = Call("int32", "tir.thread_allreduce", acc_loads + tuple(iv.var for iv in bound))
        allreduce = AttrStmt(red.combiner, "reduce_scope", const(0), Evaluate(call))
        result = red.combiner.combine(tuple(red.init), acc_loads) if red.init else acc_loads
        head = _c.cmp(EQ, bound[0].var, 0)
        for iv in bound[1:]:
            head = _c.logical_and(head, _c.cmp(EQ, iv.var, 0))
        dp_preds = [c for c in sb.predicates if not uses_var(c, lambda v: v in reduce_leaf)]
        store = self._guard(self._store_all(outs, result, out_idx), dp_preds)
        if any(b.scope != "local" for b in outs):  # one write; a local copy in every thread
            store = IfThenElse(head, store)
        body = seq(init, self._loops(st, serial, update), allreduce, store)
        for a in reversed(accs):
            body = Allocate(a, body)
        return self._loops(st, bound, body)

    @staticmethod
    def _store_all(bufs: Sequence[Buffer], values: Sequence[PrimExpr],
                   idx: tuple[PrimExpr, ...]) -> Stmt:
        if len(bufs) == 1:
            return BufferStore(bufs[0], values[0], idx)
        tmps = [Var(f"{b.name}_v{i}", b.dtype) for i, b in enumerate(bufs)]
        out: Stmt = seq(*[BufferStore(b, t, idx) for b, t in zip(bufs, tmps)])
        for t, v in reversed(list(zip(tmps, values))):
            out = LetStmt(t, v, out)
        return out

    def _tensorized_nest(self, st: Stage, t_pos: int, bodies: list[PrimExpr],
                         out_idx: tuple[PrimExpr, ...], outs: list[Buffer]) -> Stmt:
        from .tensorize import tensorize_stmts

        leaves = st.leaf_iter_vars
        name = leaves[t_pos].name
        if self.bounds[st].predicates:
            raise ScheduleError(
                f"tensorize on stage {st.name}, axis {name}: the splits around it do not divide "
                "the loop extents; choose factors that divide them"
            )
        body, reset, update = tensorize_stmts(self, st, t_pos, bodies, out_idx, outs)
        red = [i for i, iv in enumerate(leaves) if iv.kind == REDUCE]
        if not red or red[0] >= t_pos:
            return self._loops(st, leaves[:t_pos], body)
        if reset is None or update is None:
            raise ScheduleError(
                f"tensorize on stage {st.name}, axis {name}: reduction loops stay outside the "
                "tensorized nest, so the intrinsic must return (body, reset, update)"
            )
        p = red[0]
        init_leaves = [iv for iv in leaves[p:t_pos] if iv.kind != REDUCE]
        init_nest = self._loops(st, init_leaves, reset, attach=False)
        update_nest = self._loops(st, leaves[p:t_pos], update)
        return self._loops(st, leaves[:p], seq(init_nest, update_nest))

    def _guard(self, stmt: Stmt, preds: list[PrimExpr]) -> Stmt:
        if not preds:
            return stmt
        cond = preds[0]
        for c in preds[1:]:
            cond = _c.logical_and(cond, c)
        return IfThenElse(_c.call("bool", "likely", cond), stmt)

    def _loops(self, st: Stage, leaves: Sequence[IterVar], body: Stmt, attach: bool = True) -> Stmt:
        sb = self.bounds[st]
        for iv in reversed(leaves):
            if attach:
                body = self._splice(st, iv, body)
            attr = st.iter_var_attrs.get(iv)
            kind = _FOR_KIND.get(attr.kind, "serial") if attr else "serial"
            tag = ""
            if attr is not None and attr.kind == "bind":
                tag = attr.bind_thread.thread_tag  # type: ignore[union-attr]
            ext = sb.ranges[iv].extent
            notes = (("stage", st.name),) if tag else ()
            body = For(iv.var, const(0), ext, kind, body, tag, notes)
            if attr is not None:
                for key, val in reversed(attr.pragmas):
                    body = AttrStmt(iv.var, f"pragma_{key}", val, body)
        return body

    def _splice(self, st: Stage, iv: IterVar, inner: Stmt) -> Stmt:
        stages = self.attached.get((id(st), id(iv)))
        if not stages:
            return inner
        allocs: list[Buffer] = []
        nests = []
        for a in stages:
            allocs += self.allocs[a]
            nests.append(self.stage_nest(a))
        body = seq(*nests, inner)
        double = {id(b) for a in stages if a.is_double_buffer for b in self.allocs[a]}
        for b in reversed(allocs):
            body = Allocate(b, body)
            if id(b) in double:
                body = AttrStmt(b.data, "double_buffer_scope", const(1), body)
        return body

    def run(self) -> PrimFunc:
        roots = [s for s in self.sch.stages
                 if isinstance(s.op, ComputeOp) and s.attach_type == "root"]
        allocs = [b for st in roots for b in self.allocs[st]]
        nests = [self.stage_nest(st) for st in roots]
        body = seq(*nests)
        for b in reversed(allocs):
            body = Allocate(b, body)
        attrs: dict[str, Any] = {"global_symbol": self.name}
        if self.align:
            attrs["storage_align"] = self.align
        return PrimFunc(self.name, tuple(self.params), body, attrs)


def schedule_to_primfunc(sch: Schedule, args: Sequence[Any], name: str = "main") -> PrimFunc:
    """Lower a schedule to a PrimFunc with multi-dimensional buffers (before flattening)."""
    return _Lowering(sch, args, name).run()
