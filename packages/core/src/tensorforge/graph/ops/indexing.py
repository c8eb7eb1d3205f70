"""Ops that index a tensor with indices read from data: take (ONNX Gather), gather_elements,
gather_nd, scatter_elements and scatter_nd.

Semantics are ONNX's (opsets 11-23): an index into an axis of size n is valid in [-n, n - 1],
negative indices count from the end; an index outside is an error, raised by the numpy
reference (a `DataCheckError`) and by the generated code (the kernel returns an error status
that the executor reports naming the node, the index and the bound; see `ops/indexing.py`).
A scatter with `reduction="none"` and repeated indices keeps the last update in index order,
as ONNX Runtime does.

Attribute `index_range` = (lo, hi), set by the graph pass `annotate_index_ranges` when it
proves the indices' values lie in [lo, hi], drops the check (and the wrap of negative
indices) where that range makes them unnecessary.

Computes: gathers are injective (one load per output element, its index checked). A scatter
is a reduction over the index positions that can land on each output element: along `axis`
for scatter_elements (cost |data| x indices.shape[axis]); for scatter_nd with
reduction="none", an inverse table (for each of the data's leading positions, the last update
that writes it) computed over the update positions, then one gather; with a reduction, a
reduction over the update positions per output element (cost |data| x updates). Their index
checks run once per index, in a stage of their own (`tag="index_check"`, computed at root).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import te
from ...errors import DataCheckError, TensorforgeError
from ...expr import const
from ...ops.indexing import data_index
from ..registry import OpPattern, TypeList, register_op

REDUCTIONS = ("none", "add", "mul", "max", "min")


def _dims(t: Any) -> list[int]:
    return [int(s.value) for s in t.shape]


def check_indices(ind: np.ndarray, bound: int, op: str, axis: int,
                  where: str = "") -> np.ndarray:
    """`ind` with negative indices wrapped; a `DataCheckError` for one outside
    [-bound, bound - 1] (`where` names the node, e.g. "Gather node 'emb'")."""
    ind = np.asarray(ind).astype("int64")
    bad = (ind < -bound) | (ind >= bound)
    if bad.any():
        v = int(ind[bad].flat[0])
        raise DataCheckError(f"{where or op}: index {v} out of range [{-bound}, {bound - 1}] "
                             f"on axis {axis}")
    return np.where(ind < 0, ind + bound, ind)


def _known(at: dict[str, Any]) -> Any:
    return at.get("index_range")


# take (ONNX Gather) -------------------------------------------------------------------------
def _take_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    (shape, dt), (ishape, _) = types[0], types[1]
    axis = at.get("axis", 0) % len(shape)
    return [((*shape[:axis], *ishape, *shape[axis + 1:]), dt)]


def _take_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x, idx = ins
    axis = at.get("axis", 0) % x.ndim
    return [np.take(x, check_indices(idx, x.shape[axis], "Gather", axis), axis=axis)]


def _take_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x, ind = ins
    axis = at.get("axis", 0) % len(x.shape)
    n = _dims(x)[axis]
    ni = len(ind.shape)

    def f(*i: Any) -> Any:
        k = data_index(ind[tuple(i[axis:axis + ni])], n, "Gather", ind, axis, _known(at))
        return x[tuple(i[:axis]) + (k,) + tuple(i[axis + ni:])]

    return [te.compute(out[0][0], f, name="take", tag="injective")]


register_op("take", OpPattern.INJECTIVE, _take_infer, _take_ref, _take_compute,
            doc="gather: take(x, indices, axis) like numpy.take; negative indices wrap, "
            "out-of-range ones are an error", index_inputs=(1,))


# gather_elements ---------------------------------------------------------------------------
def _same_rank_within(op: str, dshape: tuple[int, ...], ishape: tuple[int, ...],
                      axis: int) -> None:
    if len(ishape) != len(dshape):
        raise TensorforgeError(f"{op}: indices have rank {len(ishape)}, data rank "
                               f"{len(dshape)}; they must be equal")
    for d, (si, sd) in enumerate(zip(ishape, dshape)):
        if d != axis and si > sd:
            raise TensorforgeError(f"{op}: indices shape {list(ishape)} is larger than data "
                                   f"shape {list(dshape)} on axis {d}")


def _gather_elements_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    (shape, dt), (ishape, _) = types[0], types[1]
    axis = at["axis"] % len(shape)
    _same_rank_within("GatherElements", shape, ishape, axis)
    return [(tuple(ishape), dt)]


def _gather_elements_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x, idx = ins
    axis = at["axis"] % x.ndim
    ind = check_indices(idx, x.shape[axis], "GatherElements", axis)
    window = x[tuple(slice(0, s) if d != axis else slice(None)
                     for d, s in enumerate(ind.shape))]
    return [np.take_along_axis(window, ind, axis=axis)]


def _gather_elements_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x, ind = ins
    axis = at["axis"] % len(x.shape)
    n = _dims(x)[axis]

    def f(*i: Any) -> Any:
        k = data_index(ind[i], n, "GatherElements", ind, axis, _known(at))
        return x[tuple(k if d == axis else i[d] for d in range(len(i)))]

    return [te.compute(out[0][0], f, name="gather_elements", tag="injective")]


register_op("gather_elements", OpPattern.INJECTIVE, _gather_elements_infer,
            _gather_elements_ref, _gather_elements_compute,
            doc="ONNX GatherElements: out[i] = x[i with i[axis] = indices[i]]",
            index_inputs=(1,))


# gather_nd ---------------------------------------------------------------------------------
def _nd_parts(op: str, dshape: tuple[int, ...], ishape: tuple[int, ...],
              b: int = 0) -> int:
    """k, the length of an index tuple, after checking the shapes."""
    if not ishape:
        raise TensorforgeError(f"{op}: indices must have rank >= 1")
    k = ishape[-1]
    if k < 1 or b + k > len(dshape):
        raise TensorforgeError(f"{op}: index tuples of length {k} (indices shape "
                               f"{list(ishape)}) do not fit data of rank {len(dshape)}"
                               + (f" after {b} batch dims" if b else ""))
    if tuple(ishape[:b]) != tuple(dshape[:b]) or len(ishape) <= b:
        raise TensorforgeError(f"{op}: the first {b} (batch) dims of indices {list(ishape)} "
                               f"and data {list(dshape)} differ")
    return k


def _gather_nd_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    (shape, dt), (ishape, _) = types[0], types[1]
    b = int(at.get("batch_dims", 0))
    k = _nd_parts("GatherND", shape, ishape, b)
    return [((*ishape[:-1], *shape[b + k:]), dt)]


def _nd_check(ind: np.ndarray, dshape: tuple[int, ...], op: str, first: int) -> np.ndarray:
    ind = np.asarray(ind).astype("int64").copy()
    for c in range(ind.shape[-1]):
        ind[..., c] = check_indices(ind[..., c], dshape[first + c], op, first + c)
    return ind


def _gather_nd_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x, idx = ins
    b = int(at.get("batch_dims", 0))
    k = idx.shape[-1]
    ind = _nd_check(idx, x.shape, "GatherND", b)
    out = np.empty((*idx.shape[:-1], *x.shape[b + k:]), dtype=x.dtype)
    for pos in np.ndindex(*idx.shape[:-1]):
        out[pos] = x[pos[:b] + tuple(int(v) for v in ind[pos])]
    return [out]


def _gather_nd_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x, ind = ins
    dshape, ishape = _dims(x), _dims(ind)
    b = int(at.get("batch_dims", 0))
    k, ni = ishape[-1], len(ishape) - 1

    def f(*o: Any) -> Any:
        head = tuple(o[:ni])
        pos = tuple(data_index(ind[head + (c,)], dshape[b + c], "GatherND", ind, b + c,
                               _known(at), component=c) for c in range(k))
        return x[head[:b] + pos + tuple(o[ni:])]

    return [te.compute(out[0][0], f, name="gather_nd", tag="injective")]


register_op("gather_nd", OpPattern.INJECTIVE, _gather_nd_infer, _gather_nd_ref,
            _gather_nd_compute, doc="ONNX GatherND (attr batch_dims)", index_inputs=(1,))


# scatter: shared pieces --------------------------------------------------------------------
def _combine_np(red: str, old: Any, new: Any) -> Any:
    if red == "add":
        return old + new
    if red == "mul":
        return old * new
    if red == "max":
        return np.maximum(old, new)
    if red == "min":
        return np.minimum(old, new)
    return new


def _check_reduction(op: str, at: dict[str, Any]) -> str:
    red = at.get("reduction", "none")
    if red not in REDUCTIONS:
        raise TensorforgeError(f"{op}: reduction {red!r} is not one of {', '.join(REDUCTIONS)}")
    return red


prod = te.comm_reducer(lambda a, b: a * b, lambda t: const(1, t), name="prod")


def _last_match() -> Any:
    """A reducer over (position, value) keeping the value of the largest position."""

    def combine(lhs: Any, rhs: Any) -> tuple[Any, Any]:
        later = rhs[0] > lhs[0]
        return te.select(later, rhs[0], lhs[0]), te.select(later, rhs[1], lhs[1])

    return te.comm_reducer(combine, lambda tp, tv: (const(-1, tp), const(0, tv)),
                           name="last_match")


def _reduce_updates(red: str, match: Any, value: Any, axes: list[Any], dtype: str) -> Any:
    """The reduction over `axes` of the matching updates, with the identity elsewhere."""
    if red == "add":
        return te.sum(te.select(match, value, const(0, dtype)), axis=axes)
    if red == "mul":
        return prod(te.select(match, value, const(1, dtype)), axis=axes)
    if red == "max":
        return te.max(te.select(match, value, te.min_value(dtype)), axis=axes)
    return te.min(te.select(match, value, te.max_value(dtype)), axis=axes)


def _apply(red: str, old: Any, acc: Any) -> Any:
    if red == "add":
        return old + acc
    if red == "mul":
        return old * acc
    if red == "max":
        return te.max_expr(old, acc)
    return te.min_expr(old, acc)


# scatter_elements --------------------------------------------------------------------------
def _scatter_elements_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    (shape, dt), (ishape, _), (ushape, udt) = types[0], types[1], types[2]
    axis = at["axis"] % len(shape)
    _check_reduction("ScatterElements", at)
    _same_rank_within("ScatterElements", shape, ishape, axis)
    if tuple(ushape) != tuple(ishape) or udt != dt:
        raise TensorforgeError(f"ScatterElements: updates {udt}{list(ushape)} must have the "
                               f"indices' shape {list(ishape)} and the data's dtype {dt}")
    return [(tuple(shape), dt)]


def _scatter_elements_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x, idx, upd = ins
    axis = at["axis"] % x.ndim
    red = at.get("reduction", "none")
    ind = check_indices(idx, x.shape[axis], "ScatterElements", axis)
    out = x.copy()
    for pos in np.ndindex(*ind.shape):
        dst = tuple(int(ind[pos]) if d == axis else p for d, p in enumerate(pos))
        out[dst] = _combine_np(red, out[dst], upd[pos])
    return [out]


def _scatter_elements_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x, ind, upd = ins
    axis = at["axis"] % len(x.shape)
    red = at.get("reduction", "none")
    dshape, ishape = _dims(x), _dims(ind)
    nd = len(dshape)
    if int(np.prod(ishape)) == 0:
        return [te.compute(dshape, lambda *j: x[j], name="scatter_elements", tag="injective")]
    widx = te.compute(ishape, lambda *i: data_index(ind[i], dshape[axis], "ScatterElements",
                                                    ind, axis, _known(at)),
                      name="scatter_index", tag="index_check")
    r = te.reduce_axis((0, ishape[axis]), name="r")

    def source(j: tuple[Any, ...]) -> tuple[tuple[Any, ...], Any]:
        """The indices position that may write output j at step r, and whether it exists
        (indices may be smaller than the data on the other axes)."""
        pos, inside = [], []
        for d in range(nd):
            if d == axis:
                pos.append(r.var)
            elif ishape[d] < dshape[d]:
                pos.append(te.min_expr(j[d], const(ishape[d] - 1)))
                inside.append(j[d] < const(ishape[d]))
            else:
                pos.append(j[d])
        return tuple(pos), te.all(*inside)

    def match(j: tuple[Any, ...]) -> tuple[Any, tuple[Any, ...]]:
        pos, inside = source(j)
        return te.all(inside, widx[pos] == j[axis]), pos

    if red == "none":
        reducer = _last_match()

        def last(*j: Any) -> Any:
            m, pos = match(j)
            return reducer((te.select(m, r.var, const(-1)), upd[pos]), axis=r)

        at_, val = te.compute(dshape, last, name="scatter_last")
        return [te.compute(dshape, lambda *j: te.select(at_[j] >= 0, val[j], x[j]),
                           name="scatter_elements", tag="scatter")]

    def acc_f(*j: Any) -> Any:
        m, pos = match(j)
        return _reduce_updates(red, m, upd[pos], [r], x.dtype)

    acc = te.compute(dshape, acc_f, name="scatter_acc")
    return [te.compute(dshape, lambda *j: _apply(red, x[j], acc[j]), name="scatter_elements",
                       tag="scatter")]


register_op("scatter_elements", OpPattern.OPAQUE, _scatter_elements_infer,
            _scatter_elements_ref, _scatter_elements_compute,
            doc="ONNX ScatterElements (attrs axis, reduction none|add|mul|max|min)",
            index_inputs=(1,))


# scatter_nd --------------------------------------------------------------------------------
def _scatter_nd_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    (shape, dt), (ishape, _), (ushape, udt) = types[0], types[1], types[2]
    _check_reduction("ScatterND", at)
    k = _nd_parts("ScatterND", shape, ishape)
    want = (*ishape[:-1], *shape[k:])
    if tuple(ushape) != want or udt != dt:
        raise TensorforgeError(f"ScatterND: updates {udt}{list(ushape)} must be "
                               f"{dt}{list(want)} (indices.shape[:-1] + data.shape[k:])")
    return [(tuple(shape), dt)]


def _scatter_nd_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x, idx, upd = ins
    red = at.get("reduction", "none")
    ind = _nd_check(idx, x.shape, "ScatterND", 0)
    out = x.copy()
    for pos in np.ndindex(*idx.shape[:-1]):
        dst = tuple(int(v) for v in ind[pos])
        out[dst] = _combine_np(red, out[dst], upd[pos])
    return [out]


def _scatter_nd_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x, ind, upd = ins
    red = at.get("reduction", "none")
    dshape, ishape = _dims(x), _dims(ind)
    k = ishape[-1]
    mshape = ishape[:-1] or [1]  # update positions (one when indices is a single tuple)
    lead = len(ishape) - 1
    if int(np.prod(ishape)) == 0:
        return [te.compute(dshape, lambda *j: x[j], name="scatter_nd", tag="injective")]

    def at_m(m: tuple[Any, ...], c: int) -> tuple[Any, ...]:
        return tuple(m[:lead]) + (const(c),)

    widx = [te.compute(mshape, lambda *m, c=c: data_index(
                ind[at_m(m, c)], dshape[c], "ScatterND", ind, c, _known(at), component=c),
                name=f"scatter_index{c}", tag="index_check") for c in range(k)]

    def match(m: tuple[Any, ...], p: tuple[Any, ...]) -> Any:
        return te.all(*(widx[c][m] == p[c] for c in range(k)))

    def upd_at(m: tuple[Any, ...], rest: tuple[Any, ...]) -> Any:
        return upd[tuple(m[:lead]) + tuple(rest)]

    rax = [te.reduce_axis((0, s), name=f"m{d}") for d, s in enumerate(mshape)]
    mvars = tuple(a.var for a in rax)
    if red == "none":
        flat = const(0)
        for a, s in zip(rax, mshape):
            flat = flat * const(s) + a.var
        inv = te.compute(dshape[:k], lambda *p: te.max(
            te.select(match(mvars, p), flat, const(-1)), axis=rax), name="scatter_nd_inverse")

        def unflat(m: Any) -> tuple[Any, ...]:
            idx = []
            for s in reversed(mshape):
                idx.append(te.floormod(m, const(s)))
                m = te.floordiv(m, const(s))
            return tuple(reversed(idx))

        def f(*j: Any) -> Any:
            last = inv[tuple(j[:k])]
            safe = te.max_expr(last, const(0))  # read a valid update either way
            return te.select(last >= 0, upd_at(unflat(safe), j[k:]), x[j])

        return [te.compute(dshape, f, name="scatter_nd", tag="scatter")]

    acc = te.compute(dshape, lambda *j: _reduce_updates(
        red, match(mvars, j[:k]), upd_at(mvars, j[k:]), rax, x.dtype), name="scatter_nd_acc")
    return [te.compute(dshape, lambda *j: _apply(red, x[j], acc[j]), name="scatter_nd",
                       tag="scatter")]


register_op("scatter_nd", OpPattern.OPAQUE, _scatter_nd_infer, _scatter_nd_ref,
            _scatter_nd_compute,
            doc="ONNX ScatterND (attr reduction none|add|mul|max|min)", index_inputs=(1,))
