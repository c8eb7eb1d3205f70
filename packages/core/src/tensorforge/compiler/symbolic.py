"""One compile for every size within bounds: symbolic dims found by probing, kernels with
symbolic extents, a memory plan at the bounds (issue 13).

``compile(model, input_shapes={"input_ids": (1, "seq<=512")})`` comes here first. The graph
level stays static (its passes fold shapes into attributes), so the symbolic form is derived
from it: the graph is planned at the upper bounds and at two probe sizes per dynamic name,
and every dimension, attribute integer and constant that differs between the plans is fitted
as ``a * name + b`` (checked at the third plan). The plan at the bounds then gives:

- the groups and the memory plan (storages sized at the bounds; a smaller size uses a
  prefix of each storage);
- one kernel per group, its tensor expression built with the symbolic shapes (``te.size_var``
  extents; the size is a trailing scalar argument of the kernel, guards where a split does not
  divide it); the target's strategy schedules it, and when the strategy cannot take a
  symbolic extent the group gets the generic schedule (warned, `desc["kernels"][i]
  ["schedule"]` says which);
- the description at the bounds plus `desc["symbolic"]`: the dims and bounds, each value's
  symbolic shape and the names each kernel takes (`runtime.symbolic.SymbolicModel` binds them).

A constant whose shape depends on a size (a slice of the position table) must equal, at the
probes, the prefix of its bound form along those axes; the executor views that prefix.
When the plans differ in structure (a fusion that depends on the size, a concat view across
a dynamic axis, a non-affine dimension), the model is not symbolic: `compile` falls back to
per-size static specializations (`compiler.dynamic.DynamicModel`) with a warning saying why.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import TensorforgeError
from ..graph.ir import Value, freeze
from .dynamic import DimBound

#: graph passes whose result needs static extents; a symbolic compile plans without them
STATIC_ONLY_PASSES: frozenset[str] = frozenset()
#: (op, attribute): a tuning choice made from a size that the compute takes for any size; the
#: one of the plan at the bounds is kept (attention's key block: keys past the last score
#: -inf in a symbolic attention, `ops.attention`)
PINNED_ATTRS = frozenset({("attention", "key_block")})


class NotSymbolic(TensorforgeError):
    """The model's plans differ between sizes in a way the symbolic compile cannot express."""


#: a symbolic dimension: an int, or (name, a, b) meaning a * name + b
Dim = Any


def _probe_sizes(b: DimBound) -> tuple[int, int] | None:
    """Two sizes below the bound to fit and check ``a * n + b``, or None when the bound is the
    only size (nothing is dynamic)."""
    if b.high - b.low < 2:
        return None
    return b.high - 1, max(b.low, (b.high + b.low) // 2 - 1)


def _fit(name: str, hi: int, at_hi: int, p1: int, at_p1: int, p2: int, at_p2: int) -> Dim:
    if at_hi == at_p1 == at_p2:
        return at_hi
    a, rem = divmod(at_hi - at_p1, hi - p1)
    b = at_hi - a * hi
    if rem or a * p2 + b != at_p2 or a <= 0:
        raise NotSymbolic(f"a dimension is {at_hi}, {at_p1}, {at_p2} at {name} = {hi}, {p1}, "
                          f"{p2}: not a * {name} + b")
    return (name, a, b)


def _merge(d1: Dim, d2: Dim) -> Dim:
    """Two names' fits of one dimension: static in both, or symbolic in exactly one."""
    if isinstance(d1, int):
        return d2
    if isinstance(d2, int):
        return d1
    raise NotSymbolic(f"a dimension depends on both {d1[0]!r} and {d2[0]!r}")


class _Plans:
    """The plan at the bounds and, per dynamic name, the plans at its two probes."""

    def __init__(self, make_plan: Any, dims: Mapping[str, DimBound]):
        self.dims = dict(dims)
        self.high = {n: b.high for n, b in dims.items()}
        self.hi = make_plan(self.high)
        self.probes: dict[str, tuple[int, int, Any, Any]] = {}
        for n, b in dims.items():
            ps = _probe_sizes(b)
            if ps is None and b.high > b.low:
                raise NotSymbolic(f"{b} holds {b.high - b.low + 1} sizes; fitting a symbolic "
                                  "dim needs three")
            if ps is not None:
                self.probes[n] = (ps[0], ps[1], make_plan({**self.high, n: ps[0]}),
                                  make_plan({**self.high, n: ps[1]}))
        self.sym: dict[int, tuple[Dim, ...]] = {}  # id(value of hi) -> symbolic shape
        self.attrs: dict[int, dict[str, Any]] = {}  # id(node of hi) -> symbolic attrs
        self.const_axes: dict[int, tuple[int, ...]] = {}  # id(const) -> its dynamic axes
        self._match()

    # matching the plans value by value ------------------------------------------------------
    def _match(self) -> None:
        hi = self.hi
        others = [(n, p1, p2, a, b) for n, (p1, p2, a, b) in self.probes.items()]
        for name, _, _, a, b in others:
            for plan in (a, b):
                if len(plan.groups) != len(hi.groups) or \
                        [len(g.nodes) for g in plan.groups] != [len(g.nodes) for g in hi.groups]:
                    raise NotSymbolic(f"the fused groups differ between sizes of {name!r}")
        vals: dict[int, Value] = {}
        pairs: dict[int, list[tuple[str, int, int, Value, Value]]] = {}

        def pair(v: Value, per: list[Value]) -> None:
            vals[id(v)] = v
            pairs.setdefault(id(v), [(o[0], o[1], o[2], w1, w2)
                                     for o, (w1, w2) in zip(others, zip(per[::2], per[1::2]))])

        graphs = [hi.graph] + [p.graph for o in others for p in (o[3], o[4])]
        for vs in zip(*(g.inputs for g in graphs)):
            pair(vs[0], list(vs[1:]))
        for k, grp in enumerate(hi.groups):
            twins = [p.groups[k] for o in others for p in (o[3], o[4])]
            if any(t.view != grp.view for t in twins):
                raise NotSymbolic("a zero-copy concat differs between sizes")
            for j, node in enumerate(grp.nodes):
                tn = [t.nodes[j] for t in twins]
                if any(t.op != node.op or len(t.inputs) != len(node.inputs) for t in tn):
                    raise NotSymbolic(f"node {node.name} ({node.op}) differs between sizes")
                for i, v in enumerate(node.inputs):
                    pair(v, [t.inputs[i] for t in tn])
                for i, v in enumerate(node.outputs):
                    pair(v, [t.outputs[i] for t in tn])
                self._fit_attrs(node, tn, others)
        for vid, v in vals.items():
            self.sym[vid] = self._fit_shape(v, pairs[vid])
            if v.is_const and any(not isinstance(d, int) for d in self.sym[vid]):
                self._check_prefix(v, pairs[vid])
        for grp in hi.groups:
            if grp.view and any(self.symbolic(v) for v in grp.inputs + grp.outputs):
                raise NotSymbolic("a zero-copy concat along a dynamic axis")
        for v, off in hi.memory.offset_of.items():
            if off and self.symbolic(v):
                raise NotSymbolic(f"value {v.name} lies at an offset in its storage")

    def _fit_shape(self, v: Value, per: list[tuple[str, int, int, Value, Value]]
                   ) -> tuple[Dim, ...]:
        dims: list[Dim] = list(v.shape)
        for name, p1, p2, w1, w2 in per:
            if len(w1.shape) != len(v.shape) or len(w2.shape) != len(v.shape) or \
                    w1.dtype != v.dtype:
                raise NotSymbolic(f"value {v.name} changes rank or dtype between sizes")
            hi = self.high[name]
            dims = [_merge(d, _fit(name, hi, s, p1, s1, p2, s2)) for d, s, s1, s2
                    in zip(dims, v.shape, w1.shape, w2.shape)]
        return tuple(dims)

    def _check_prefix(self, v: Value, per: list[tuple[str, int, int, Value, Value]]) -> None:
        axes = tuple(k for k, d in enumerate(self.sym[id(v)]) if not isinstance(d, int))
        for _, _, _, w1, w2 in per:
            for w in (w1, w2):
                idx = tuple(slice(0, s) for s in w.shape)
                if w.const is None or not np.array_equal(v.const[idx], w.const):
                    raise NotSymbolic(f"constant {v.name} at a smaller size is not a prefix "
                                      "of its form at the bounds")
        self.const_axes[id(v)] = axes

    def _fit_attrs(self, node: Any, twins: list[Any], others: list[Any]) -> None:
        """Attributes equal at every size, or integers (in lists) fitting ``a * n + b``."""
        if all(freeze(t.attrs) == freeze(node.attrs) for t in twins):
            return
        out = {}
        for key, val in node.attrs.items():
            vs = [t.attrs.get(key) for t in twins]
            if all(freeze(x) == freeze(val) for x in vs) or (node.op, key) in PINNED_ATTRS:
                out[key] = val
            elif isinstance(val, Mapping) and all(isinstance(x, Mapping) and set(x) == set(val)
                                                  for x in vs):
                out[key] = ("__sym__", "dict", {
                    k: val[k] if all(freeze(x[k]) == freeze(val[k]) for x in vs)
                    else self._fit_value(node, f"{key}[{k!r}]", val[k], [x[k] for x in vs],
                                         others) for k in val})
            else:
                out[key] = self._fit_value(node, key, val, vs, others)
        self.attrs[id(node)] = out

    def _fit_value(self, node: Any, key: str, val: Any, vs: list[Any], others: list[Any]) -> Any:
        flat = isinstance(val, (list, tuple)) and all(isinstance(x, (int, np.integer))
                                                        for x in val)
        if not (flat or isinstance(val, (int, np.integer))) or \
                any(np.shape(x) != np.shape(val) for x in vs):
            raise NotSymbolic(f"attribute {key!r} of node {node.name} ({node.op}) depends on "
                              "the size")
        row = list(val) if flat else [val]
        rows = [list(x) if flat else [x] for x in vs]
        fitted: list[Dim] = list(map(int, row))
        for k, (name, p1, p2, _, _) in enumerate(others):
            r1, r2 = rows[2 * k], rows[2 * k + 1]
            fitted = [_merge(f, _fit(name, self.high[name], int(h), p1, int(a), p2, int(b)))
                      for f, h, a, b in zip(fitted, row, r1, r2)]
        return ("__sym__", flat, tuple(fitted))

    def symbolic(self, v: Value) -> bool:
        return any(not isinstance(d, int) for d in self.sym.get(id(v), ()))


def dim_expr(d: Dim, var_of: Mapping[str, Any]) -> Any:
    """A te expression (or int) for a symbolic dimension."""
    if isinstance(d, int):
        return d
    name, a, b = d
    e = var_of[name] if a == 1 else var_of[name] * a
    return e + b if b else e


def dim_json(d: Dim) -> Any:
    return d if isinstance(d, int) else list(d)


def attrs_expr(attrs: Mapping[str, Any], var_of: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in attrs.items():
        if isinstance(v, tuple) and len(v) == 3 and v[0] == "__sym__" and v[1] == "dict":
            out[k] = attrs_expr(v[2], var_of)
        elif isinstance(v, tuple) and len(v) == 3 and v[0] == "__sym__":
            row = [dim_expr(x, var_of) for x in v[2]]
            out[k] = row if v[1] else row[0]
        else:
            out[k] = v
    return out


def compile_symbolic(model: Any, target: Any, template: Mapping[str, tuple[Any, ...]],
                     dims: Mapping[str, DimBound], opt_level: int = 3,
                     progress: Any = None, model_format: str | None = None,
                     host: Any = None, tuning_db: Any = None) -> Any:
    """A `runtime.symbolic.SymbolicModel` (see the module docstring); raises `NotSymbolic`
    when the model's plans differ between sizes."""
    from .. import te
    from ..plugins import get_registry
    from ..progress import NullProgress
    from ..runtime.symbolic import SymbolicModel
    from ..target import Target
    from .compile import build_modules, check_pass_switches, describe, plan, workload_key
    from .kernels import lower_group

    tgt = Target.coerce(target)
    if tgt.kind.device_type != "cpu":
        raise NotSymbolic(f"symbolic kernels are built for CPU targets only, not {tgt.kind.name}")
    if tuning_db is not None:
        raise NotSymbolic("tuning records are per static workload")
    tgt.kind.load_build()
    check_pass_switches()
    progress = progress or NullProgress()

    def make_plan(sizes: Mapping[str, int]) -> Any:
        from ..graph.passes.pipeline import GraphPassContext

        shapes = {inp: tuple(sizes[d.name] if isinstance(d, DimBound) else d for d in row)
                  for inp, row in template.items()}
        cur = GraphPassContext.current()
        with GraphPassContext(cur.before, cur.after, cur.disabled | STATIC_ONLY_PASSES):
            return plan(model, tgt, shapes, opt_level, None, model_format, host)

    plans = _Plans(make_plan, dims)
    p = plans.hi
    var_of = {n: te.size_var(n) for n in dims}
    at_bounds = _AllocateAtBounds({var_of[n]: b.high for n, b in dims.items()})
    strategies = get_registry().strategies(tgt)

    def shape_of(v: Value) -> tuple[Any, ...]:
        return tuple(dim_expr(d, var_of) for d in plans.sym.get(id(v), v.shape))

    def attrs_of(node: Any) -> dict[str, Any]:
        sym = plans.attrs.get(id(node))
        return node.attrs if sym is None else attrs_expr(sym, var_of)

    funcs: list[Any] = []
    how: dict[str, str] = {}
    func_of: dict[str, str] = {}
    by_key: dict[Any, str] = {}
    names_of: dict[str, list[str]] = {}
    progress.stage("lowering", len(p.groups), "kernel")
    for grp in p.groups:
        if grp.view:
            continue
        used = sorted({d[0] for v in _group_values(grp) for d in plans.sym.get(id(v), ())
                       if not isinstance(d, int)})
        key = (workload_key(grp), tuple(plans.sym.get(id(v)) for v in _group_values(grp)),
               tuple(freeze(plans.attrs.get(id(n))) for n in grp.nodes))
        if key in by_key:
            func_of[grp.name] = by_key[key]
            how[grp.name] = how[by_key[key]]
            names_of[grp.name] = used
            continue
        te_args = dict(shape_of=shape_of, attrs_of=attrs_of,
                       scalars=[var_of[n] for n in used]) if used else None
        f, how[grp.name] = lower_group(grp, tgt, strategies, None, te_args=te_args)
        funcs.append(at_bounds(f))
        by_key[key] = func_of[grp.name] = grp.name
        names_of[grp.name] = used
        progress.advance()
    progress.stage(f"code generation ({tgt.kind.name})")
    modules = build_modules(p, {tgt.kind.name: funcs}, func_of, how, lambda _: tgt,
                            lambda _: (strategies, None))
    progress.finish()
    module = next(iter(modules.values())) if modules else None
    desc, params, derived = describe(p, tgt, how, func_of)
    desc["opt_level"] = opt_level
    desc["symbolic"] = symbolic_section(p, plans, desc, names_of)
    return SymbolicModel(module, desc, params, derived=derived)


#: an internal buffer with a symbolic size is allocated at its size at the bounds when that
#: is at most this many bytes (the llvm target keeps it on the stack: no aligned_alloc/free
#: per call, which cost a LayerNorm twice its static time at sequence 32)
ALLOC_AT_BOUND_BYTES = 64 * 1024


class _AllocateAtBounds:
    """Allocations whose shape holds size variables, sized at the bounds (small ones)."""

    def __init__(self, at_bounds: Mapping[Any, int]):
        from ..expr import ExprMutator

        self.at_bounds = dict(at_bounds)

        outer = self

        class Mutator(ExprMutator):
            def visit_Allocate(self, s: Any) -> Any:
                return outer.allocate(s, self.visit(s.body))

        self.mutator = Mutator()

    def allocate(self, s: Any, body: Any) -> Any:
        from ..arith import Analyzer
        from ..expr import Buffer, substitute
        from ..expr.dtype import nbytes
        from ..tir.stmt import Allocate

        buf = s.buffer
        shape = [Analyzer().simplify(substitute(d, self.at_bounds)) for d in buf.shape]
        if any(not hasattr(d, "value") for d in shape) or \
                all(hasattr(d, "value") for d in buf.shape):
            return Allocate(buf, body) if body is not s.body else s
        if int(np.prod([d.value for d in shape])) * nbytes(buf.dtype) > ALLOC_AT_BOUND_BYTES:
            return Allocate(buf, body) if body is not s.body else s
        bound = Buffer(buf.name, [d.value for d in shape], buf.dtype, buf.scope, buf.data,
                       data_alignment=buf.data_alignment)
        return Allocate(bound, body)

    def __call__(self, func: Any) -> Any:
        return func.with_body(self.mutator.visit(func.body))


def _group_values(grp: Any) -> list[Value]:
    seen: dict[int, Value] = {id(v): v for v in grp.inputs}
    for n in grp.nodes:
        for v in n.outputs:
            seen.setdefault(id(v), v)
    return list(seen.values())


def symbolic_section(p: Any, plans: _Plans, desc: dict[str, Any],
                     names_of: Mapping[str, list[str]]) -> dict[str, Any]:
    """`desc["symbolic"]`: dims with bounds, value index -> symbolic shape (only the values
    with a dynamic dim), kernel index -> the size names it takes after its buffers."""
    by_name = {}
    for grp in p.groups:
        for v in list(grp.inputs) + list(grp.outputs):
            by_name[v.name] = v
    for v in list(p.graph.inputs) + list(p.graph.outputs):
        by_name[v.name] = v
    shapes = {}
    for i, entry in enumerate(desc["values"]):
        v = by_name.get(entry["name"])
        if v is not None and plans.symbolic(v):
            shapes[str(i)] = [dim_json(d) for d in plans.sym[id(v)]]
    return {
        "dims": {n: [b.low, b.high] for n, b in plans.dims.items()},
        "shapes": shapes,
        "kernel_sizes": {str(i): names_of.get(k["group"], []) for i, k in
                         enumerate(desc["kernels"]) if names_of.get(k["group"])},
    }


def warn_fallback(exc: Exception) -> None:
    warnings.warn(f"this model cannot be compiled once for all sizes ({exc}); compiling a "
                  "static specialization per size instead (compiler.dynamic)", stacklevel=3)
