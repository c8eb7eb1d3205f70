"""Features of a candidate for the cost model: a fixed-length vector from its loop IR and knobs.

The loop IR is the lowered function before the pass pipeline (``lower(simple_mode=True)``:
multi-dimensional buffers, loop kinds still annotated), which is cheap enough to compute for
every candidate simulated annealing visits. The vector is task-independent in meaning (no
buffer or knob names), so records of other tasks can train a model for a new one:

* global (12): float and integer operations, statement instances, loops, depth, the parallel
  extent, vector width, vectorized and unrolled loops, local and global allocation bytes;
* the loops around the dominant statement, innermost first (6 x 4): extent, parallel,
  vectorized, unrolled;
* per buffer, the 4 most accessed (4 x 9): accesses, bytes touched by the whole nest, reuse
  (accesses / elements touched), stride of the innermost loop, contiguous vector access,
  bytes touched inside the innermost 2 and 4 loops, store, local scope;
* GPU (4): threads per block (the product of the threadIdx-bound loops), blocks, virtual
  threads, shared-memory bytes per block (zero on CPUs);
* knob values (16): log2 of split sizes, annotation codes, option and order positions.

All counts are ``log2(1 + x)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..expr import BufferLoad, post_order_collect
from ..expr import dtype as dt
from ..expr import nodes as n
from ..tir import stmt as s

__all__ = ["FEATURE_LENGTH", "feature_names", "features_of", "loop_features", "knob_features"]

N_GLOBAL, N_LOOPS, N_LOOP_F, N_BUFS, N_BUF_F, N_GPU, N_KNOBS = 12, 6, 4, 4, 9, 4, 16
FEATURE_LENGTH = N_GLOBAL + N_LOOPS * N_LOOP_F + N_BUFS * N_BUF_F + N_GPU + N_KNOBS
_ANN_CODE = {"none": 0.0, "unroll": 1.0, "vec": 2.0, "parallel": 3.0}
_FLOAT_OPS = (n.Add, n.Sub, n.Mul, n.Div, n.Min, n.Max, n.Call, n.Select)


def feature_names() -> list[str]:
    g = ["flops", "int_ops", "instances", "loops", "depth", "par_extent", "vec_width", "n_vec",
         "n_unroll", "unroll_extent", "local_bytes", "global_bytes"]
    loops = [f"loop{i}_{f}" for i in range(N_LOOPS) for f in ("extent", "par", "vec", "unroll")]
    bufs = [f"buf{i}_{f}" for i in range(N_BUFS)
            for f in ("accesses", "bytes", "reuse", "stride", "contig_vec", "bytes_in2",
                      "bytes_in4", "store", "local")]
    gpu = ["gpu_threads", "gpu_blocks", "gpu_vthreads", "gpu_shared_bytes"]
    return g + loops + bufs + gpu + [f"knob{i}" for i in range(N_KNOBS)]


def _log(x: float) -> float:
    return math.log2(1.0 + max(0.0, float(x)))


@dataclass
class _Loop:
    var: n.Var
    extent: int
    kind: str


@dataclass
class _Access:
    buffer: Any
    index: n.PrimExpr | None  # flattened, None if not affine-evaluable
    is_store: bool
    loops: list[_Loop]


@dataclass
class _Walk:
    loops: list[_Loop] = field(default_factory=list)
    accesses: list[_Access] = field(default_factory=list)
    stmts: list[tuple[list[_Loop], int]] = field(default_factory=list)  # (loops, ops)
    flops: float = 0.0
    int_ops: float = 0.0
    n_loops: int = 0
    depth: int = 0
    local_bytes: float = 0.0
    global_bytes: float = 0.0
    shared_bytes: float = 0.0
    thread_extent: dict[str, int] = field(default_factory=dict)  # tag -> largest extent
    vthreads: dict[int, int] = field(default_factory=dict)  # loop -> extent

    def visit(self, st: Any) -> None:
        if isinstance(st, s.For):
            ext = getattr(st.extent, "value", 1)
            tag = st.thread_tag
            if tag.startswith(("threadIdx", "blockIdx")):
                self.thread_extent[tag] = max(self.thread_extent.get(tag, 1), int(ext))
            elif tag.startswith(("vthread", "cthread")):
                self.vthreads[id(st.loop_var)] = int(ext)
            self.loops.append(_Loop(st.loop_var, int(ext), st.kind))
            self.n_loops += 1
            self.depth = max(self.depth, len(self.loops))
            self.visit(st.body)
            self.loops.pop()
        elif isinstance(st, s.SeqStmt):
            for x in st.seq:
                self.visit(x)
        elif isinstance(st, s.BufferStore):
            self.store(st)
        elif isinstance(st, s.Allocate):
            shape = st.buffer.const_shape() or (0,)
            size = math.prod(shape) * dt.nbytes(st.buffer.dtype) * self.trip()
            if st.buffer.scope == "global":
                self.global_bytes += size
            elif st.buffer.scope == "shared":  # once per block, whatever loops surround it
                self.shared_bytes += math.prod(shape) * dt.nbytes(st.buffer.dtype)
            else:
                self.local_bytes += size
            self.visit(st.body)
        elif isinstance(st, s.IfThenElse):
            self.visit(st.then_case)
            if st.else_case is not None:
                self.visit(st.else_case)
        elif isinstance(st, (s.LetStmt, s.AttrStmt, s.AssertStmt)):
            self.visit(st.body)

    def trip(self) -> int:
        return math.prod(lp.extent for lp in self.loops)

    def store(self, st: s.BufferStore) -> None:
        trip = self.trip()
        loops = list(self.loops)
        fl = post_order_collect(st.value, lambda x: isinstance(x, _FLOAT_OPS)
                                and dt.is_float(x.dtype))
        io = sum(len(post_order_collect(i, lambda x: isinstance(x, n.BinaryOp)))
                 for i in st.indices)
        ops = len(fl)
        self.flops += ops * trip
        self.int_ops += io * trip
        self.stmts.append((loops, ops))
        self.accesses.append(_Access(st.buffer, _flat(st.buffer, st.indices), True, loops))
        for ld in post_order_collect(st.value, lambda x: isinstance(x, BufferLoad)):
            self.accesses.append(_Access(ld.buffer, _flat(ld.buffer, ld.indices), False, loops))
            self.int_ops += trip * sum(
                len(post_order_collect(i, lambda x: isinstance(x, n.BinaryOp)))
                for i in ld.indices)


def _flat(buffer: Any, indices: tuple[n.PrimExpr, ...]) -> n.PrimExpr | None:
    shape = buffer.const_shape()
    if shape is None or len(shape) != len(indices):
        return indices[0] if len(indices) == 1 else None
    flat: Any = None
    for i, extent in zip(indices, shape):
        flat = i if flat is None else flat * extent + i
    return flat


def _coeffs(acc: _Access) -> list[int]:
    """d index / d loop var for each loop around the access (0: not used)."""
    if acc.index is None:
        return [1] * len(acc.loops)
    from ..arith import EvaluationError, evaluate

    env = {v: 0 for v in post_order_collect(acc.index, lambda x: isinstance(x, n.Var))}
    try:
        base = evaluate(acc.index, env)
        out = []
        for lp in acc.loops:
            if lp.var not in env:
                out.append(0)
                continue
            env[lp.var] = 1
            out.append(int(evaluate(acc.index, env)) - int(base))
            env[lp.var] = 0
        return out
    except (EvaluationError, TypeError, ValueError):
        return [1] * len(acc.loops)


def _touched(loops: list[_Loop], coeffs: list[int], start: int) -> int:
    return math.prod(lp.extent for lp, c in zip(loops[start:], coeffs[start:]) if c)


def loop_features(func: Any) -> np.ndarray:
    """The loop-IR part of the vector for a (simple-mode) lowered ``PrimFunc``."""
    w = _Walk()
    w.visit(func.body)
    out: list[float] = []
    par = [lp for acc in w.accesses for lp in acc.loops if lp.kind == "parallel"]
    all_loops = {id(lp.var): lp for a in w.accesses for lp in a.loops}.values()
    vec = [lp.extent for lp in all_loops if lp.kind == "vectorized"]
    unr = [lp.extent for lp in all_loops if lp.kind == "unrolled"]
    instances = sum(math.prod(lp.extent for lp in loops) for loops, _ in w.stmts)
    out += [_log(w.flops), _log(w.int_ops), _log(instances), float(w.n_loops), float(w.depth),
            _log(par[0].extent if par else 0), _log(max(vec, default=0)), float(len(vec)),
            float(len(unr)), _log(math.prod(unr) if unr else 0), _log(w.local_bytes),
            _log(w.global_bytes)]
    # the loops around the statement doing the most work
    dom = max(w.stmts, key=lambda t: (t[1] + 1) * math.prod(lp.extent for lp in t[0]),
              default=([], 0))[0]
    inner = list(reversed(dom))[:N_LOOPS]
    for i in range(N_LOOPS):
        if i < len(inner):
            lp = inner[i]
            out += [_log(lp.extent), float(lp.kind == "parallel"),
                    float(lp.kind == "vectorized"), float(lp.kind == "unrolled")]
        else:
            out += [0.0] * N_LOOP_F
    # per buffer
    per: dict[int, list[float]] = {}
    order: dict[int, float] = {}
    for acc in w.accesses:
        c = _coeffs(acc)
        count = math.prod(lp.extent for lp in acc.loops)
        nbytes = dt.nbytes(acc.buffer.dtype)
        d = len(acc.loops)
        touched = _touched(acc.loops, c, 0)
        stride = abs(c[-1]) if c else 0
        contig = float(bool(acc.loops) and acc.loops[-1].kind == "vectorized" and stride == 1)
        f = [count, touched * nbytes, count / max(1, touched), stride, contig,
             _touched(acc.loops, c, max(0, d - 2)) * nbytes,
             _touched(acc.loops, c, max(0, d - 4)) * nbytes,
             float(acc.is_store), float(acc.buffer.scope != "global")]
        key = id(acc.buffer)
        if key in per and order[key] >= count:
            per[key][0] += count
            order[key] += count
            continue
        if key in per:
            f[0] += per[key][0]
        per[key], order[key] = f, f[0]
    ranked = sorted(per.values(), key=lambda f: -f[0])[:N_BUFS]
    for i in range(N_BUFS):
        if i < len(ranked):
            f = ranked[i]
            out += [_log(f[0]), _log(f[1]), _log(f[2]), _log(f[3]), f[4], _log(f[5]),
                    _log(f[6]), f[7], f[8]]
        else:
            out += [0.0] * N_BUF_F
    te = w.thread_extent
    out += [_log(math.prod(e for t, e in te.items() if t.startswith("threadIdx"))),
            _log(math.prod(e for t, e in te.items() if t.startswith("blockIdx"))),
            _log(math.prod(w.vthreads.values())), _log(w.shared_bytes)]
    return np.asarray(out, dtype=np.float32)


def knob_features(config: Any) -> np.ndarray:
    """The knob part of the vector (``N_KNOBS`` values, zero-padded)."""
    vals: list[float] = []
    for name, knob in config.space.knobs.items():
        e = config[name]
        if knob.kind == "split":
            vals += [_log(x) for x in e.size[1:]]
        elif knob.kind == "annotate":
            vals += [_ANN_CODE.get(a, 4.0) for a in e.anns]
        else:
            vals.append(float(knob.position(e.json())))
    vals = (vals + [0.0] * N_KNOBS)[:N_KNOBS]
    return np.asarray(vals, dtype=np.float32)


def features_of(task: Any, index: int) -> np.ndarray | None:
    """The full feature vector of config ``index`` of ``task``; None if it does not lower."""
    from ..driver import lower

    try:
        cfg = task.config(index)
        sch, args = task.instantiate(cfg)
        func = sch if isinstance(sch, s.PrimFunc) else lower(sch, args, simple_mode=True)
        return np.concatenate([loop_features(func), knob_features(cfg)])
    except Exception:  # noqa: BLE001 - a template may refuse a config: no features
        return None
