"""Schedule: the stages of every operation reachable from the outputs, in dataflow order,
plus the primitives that rewrite the dataflow (cache_read, cache_write, rfactor)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..expr import ExprMutator, PrimExpr, ProducerLoad, Range, Var, const, substitute
from ..te.tensor import DATA_PAR, ComputeOp, IterVar, Operation, PlaceholderOp, Tensor
from .errors import ScheduleError
from .stage import Stage


def _post_dfs(outputs: Sequence[Operation]) -> list[Operation]:
    order: list[Operation] = []
    seen: set[int] = set()

    def visit(op: Operation) -> None:
        stack: list[tuple[Operation, bool]] = [(op, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            for t in reversed(node.input_tensors):
                if id(t.op) not in seen:
                    stack.append((t.op, False))

    for op in outputs:
        visit(op)
    return order


class _ReplaceLoads(ExprMutator):
    def __init__(self, vmap: dict[Tensor, Tensor]):
        self.vmap = vmap

    def visit_ProducerLoad(self, e: ProducerLoad) -> PrimExpr:
        idx = tuple(self.visit(i) for i in e.indices)
        t = self.vmap.get(e.producer, e.producer)
        if t is e.producer and all(a is b for a, b in zip(idx, e.indices)):
            return e
        return ProducerLoad(t, idx)


class Schedule:
    """Stages in dataflow order (producers first). `s[T]` returns T's stage."""

    def __init__(self, outputs: Sequence[Operation]):
        self.outputs = list(outputs)
        self.stages: list[Stage] = []
        self.stage_map: dict[Operation, Stage] = {}
        self.tensor_map: dict[Tensor, Tensor] = {}  # original tensor -> current tensor
        for op in _post_dfs(self.outputs):
            st = Stage(op, self)
            self.stages.append(st)
            self.stage_map[op] = st
        for op in self.outputs:
            self.stage_map[op].is_output = True

    def __getitem__(self, x: Any) -> Stage:
        if isinstance(x, Stage):
            return x
        op = x.op if isinstance(x, Tensor) else x
        st = self.stage_map.get(op)
        if st is None:
            name = getattr(op, "name", repr(op))
            raise ScheduleError(
                f"{name} is not part of this schedule; create_schedule from the outputs that "
                "use it"
            )
        return st

    def current(self, t: Tensor) -> Tensor:
        """The tensor that now stands for `t` after dataflow rewrites."""
        while t in self.tensor_map:
            t = self.tensor_map[t]
        return t

    def consumers(self, stage: Stage) -> list[Stage]:
        outs = {stage.op.output(i) for i in range(stage.op.num_outputs)}
        return [s for s in self.stages if any(t in outs for t in s.op.input_tensors)]

    def _reads_through_inline(self, reader: Stage, producer: Stage,
                              transitive: bool = False) -> bool:
        """Whether `reader` reads `producer` (through inlined stages; with `transitive`,
        through any stages)."""
        targets = {producer.op.output(i) for i in range(producer.op.num_outputs)}
        todo = [reader]
        seen: set[int] = set()
        while todo:
            st = todo.pop()
            if id(st) in seen:
                continue
            seen.add(id(st))
            for t in st.op.input_tensors:
                if t in targets:
                    return True
                s2 = self.stage_map.get(t.op)
                if s2 is not None and (transitive or s2.attach_type == "inline"):
                    todo.append(s2)
        return False

    # dataflow rewriting -----------------------------------------------------------
    def _swap_op(self, st: Stage, new: Operation) -> None:
        old = st.op
        st.op = new
        self.stage_map[new] = st
        for i in range(old.num_outputs):
            self.tensor_map[old.output(i)] = new.output(i)
        self.outputs = [new if o is old else o for o in self.outputs]

    def _insert_before(self, st: Stage, new_stage: Stage) -> None:
        self.stages.insert(self.stages.index(st), new_stage)
        self.stage_map[new_stage.op] = new_stage

    def cache_read(self, tensor: Tensor, scope: str, readers: Sequence[Any]) -> Tensor:
        """Copy `tensor` into a `scope` buffer read by `readers` (tensors, ops or stages)."""
        tensor = self.current(tensor)
        reader_stages = [self[r] for r in readers]
        for r in reader_stages:
            if tensor not in r.op.input_tensors:
                raise ScheduleError(
                    f"cache_read: stage {r.name} does not read {tensor.name}; list only its "
                    "readers"
                )
        axis = [IterVar(Range(const(0), s), Var(f"ax{i}"), DATA_PAR)
                for i, s in enumerate(tensor.shape)]
        op = ComputeOp(f"{tensor.name}.{scope}", axis,
                       [tensor[tuple(a.var for a in axis)]], "cache_read")
        cache = Stage(op, self)
        cache.scope = scope
        first = min(self.stages.index(r) for r in reader_stages)
        self.stages.insert(first, cache)
        self.stage_map[op] = cache
        new_t = op.output(0)
        for r in reader_stages:
            old = r.op
            body = [_ReplaceLoads({tensor: new_t}).visit(b) for b in old.body]
            self._swap_op(r, ComputeOp(old.name, old.axis, body, old.tag, old.attrs,
                                       old.reduce_axis))
            self._propagate_from(r, old)
        return new_t

    def _propagate_from(self, st: Stage, old: Operation) -> None:
        vmap = {old.output(i): st.op.output(i) for i in range(old.num_outputs)}
        idx = self.stages.index(st)
        for other in self.stages[idx + 1 :]:
            if not isinstance(other.op, ComputeOp):
                continue
            if not any(t in vmap for t in other.op.input_tensors):
                continue
            prev = other.op
            body = [_ReplaceLoads(vmap).visit(b) for b in prev.body]
            self._swap_op(other, ComputeOp(prev.name, prev.axis, body, prev.tag, prev.attrs,
                                           prev.reduce_axis))
            for i in range(prev.num_outputs):
                vmap[prev.output(i)] = other.op.output(i)

    def cache_write(self, tensor: Tensor, scope: str) -> Tensor:
        """Compute `tensor` into a `scope` buffer; the original stage then copies it out.
        The returned tensor's stage owns the computation (and its reduction axes)."""
        tensor = self.current(tensor)
        st = self[tensor]
        op = st.op
        if not isinstance(op, ComputeOp):
            raise ScheduleError(f"cache_write: {tensor.name} is not a compute op")
        if st.relations or st.iter_var_attrs:
            raise ScheduleError(
                f"cache_write on stage {st.name}: call cache_write before splitting or annotating "
                "the stage"
            )
        new_axis = [IterVar(a.dom, Var(f"{a.name}.c"), a.kind) for a in op.axis]
        vmap = {a.var: n.var for a, n in zip(op.axis, new_axis)}
        body = [substitute(b, vmap) for b in op.body]
        cop = ComputeOp(f"{op.name}.{scope}", new_axis, body, op.tag, op.attrs, op.reduce_axis)
        cache = Stage(cop, self)
        cache.scope = scope
        self._insert_before(st, cache)
        idx = tuple(a.var for a in op.axis)
        outs = [cop.output(i)[idx] for i in range(cop.num_outputs)]
        self._swap_op(st, ComputeOp(op.name, op.axis, outs, op.tag, op.attrs))
        st.all_iter_vars = list(op.axis)
        st.leaf_iter_vars = list(op.axis)
        self._propagate_from(st, op)
        return cop.output(0) if cop.num_outputs == 1 else [cop.output(i)
                                                            for i in range(cop.num_outputs)]

    def rfactor(self, tensor: Tensor, axis: IterVar, factor_axis: int = 0) -> Tensor:
        from .rfactor import rfactor

        return rfactor(self, tensor, axis, factor_axis)


def create_schedule(ops: Any) -> Schedule:
    """A default schedule (every stage at root, loops in declaration order) for `ops`."""
    if not isinstance(ops, (list, tuple)):
        ops = [ops]
    ops = [o.op if isinstance(o, Tensor) else o for o in ops]
    for o in ops:
        if isinstance(o, PlaceholderOp):
            raise ScheduleError(f"create_schedule: {o.name} is a placeholder; pass a compute op")
    return Schedule(ops)

