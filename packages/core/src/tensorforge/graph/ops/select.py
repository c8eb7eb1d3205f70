"""Ops whose result size depends on the data: `nonzero`, `compress`, `unique`,
`non_max_suppression`.

Each op's first output(s) hold a static bound (every element selected); its last output is
the int64 count (shape (1,)) the kernel computed. The graph marks the pair
(`Graph.sized_outputs`) and the executor returns the first `count` entries. The selection
is written without sequential loops (plain TE, for every target's generic schedule): the
k-th selected element is the one whose prefix count of selected elements before it is k, a
reduction over the selected axis (O(n^2) work for n candidates).

`non_max_suppression` unrolls the greedy selection over the boxes of a class (one small
stage per box rank), so it accepts at most `NMS_MAX_BOXES` boxes per batch."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import te
from ...errors import TensorforgeError
from ...expr import PrimExpr, const
from ..registry import OpPattern, TypeList, register_op

NMS_MAX_BOXES = 128
I64 = "int64"


def _i64(v: int) -> PrimExpr:
    return const(v, I64)


def _unravel(i: Any, shape: list[int]) -> list[Any]:
    out = []
    for s in reversed(shape):
        out.append(te.floormod(i, const(s, "int32")))
        i = te.floordiv(i, const(s, "int32"))
    return out[::-1]


def _prefix(mask: Any, n: int, name: str) -> Any:
    """prefix[i] = the number of set entries of the 1-D `mask` before i."""
    j = te.reduce_axis((0, n), name="j")
    return te.compute((n,), lambda i: te.sum(te.select(mask[j], _i64(1), _i64(0)), axis=j,
                                             where=j.var < i), name=f"{name}_prefix")


def _count(mask: Any, n: int, name: str) -> Any:
    j = te.reduce_axis((0, n), name="j")
    return te.compute((1,), lambda _: te.sum(te.select(mask[j], _i64(1), _i64(0)), axis=j),
                      name=f"{name}_count")


def _kth(mask: Any, prefix: Any, n: int, k: Any, value: Any) -> PrimExpr:
    """value(i) of the set entry i with prefix[i] == k (0 when there is none)."""
    j = te.reduce_axis((0, n), name="j")
    v = value(j.var)
    return te.sum(te.select(te.all(mask[j], prefix[j] == k.astype(I64)), v,
                            const(0, v.dtype)), axis=j)


# nonzero ------------------------------------------------------------------------------------
def _nonzero_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x = ins[0]
    idx = np.array(np.nonzero(x), dtype=I64).reshape(x.ndim, -1)
    out = np.zeros((x.ndim, x.size), I64)
    out[:, :idx.shape[1]] = idx
    return [out, np.array([idx.shape[1]], I64)]


def _nonzero_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x = ins[0]
    shape = [int(s.value) for s in x.shape]
    n = int(np.prod(shape, dtype=np.int64))
    mask = te.compute((n,), lambda i: x[tuple(_unravel(i, shape))] != const(0, x.dtype),
                      name="nonzero_mask")
    pre = _prefix(mask, n, "nonzero")
    res = te.compute(out[0][0], lambda d, k: _kth(
        mask, pre, n, k, lambda j: _pick(_unravel(j, shape), d).astype(I64)),
        name="nonzero", tag="select")
    return [res, _count(mask, n, "nonzero")]


def _pick(coords: list[Any], d: Any) -> PrimExpr:
    """coords[d] for a run-time d."""
    v = coords[0]
    for k in range(1, len(coords)):
        v = te.select(d == const(k, "int32"), coords[k], v)
    return v


register_op("nonzero", OpPattern.OPAQUE,
            lambda types, at: [((len(types[0][0]), int(np.prod(types[0][0], dtype=np.int64))),
                                I64), ((1,), I64)],
            _nonzero_ref, _nonzero_compute,
            doc="indices of the non-zero elements (rank, bound = size) + their count (1,)")


# compress -----------------------------------------------------------------------------------
def _compress_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x, cond = ins[0], ins[1].astype(bool)
    axis = at["axis"]
    sel = np.nonzero(cond[:x.shape[axis]])[0]
    picked = np.take(x, sel, axis=axis)
    out = np.zeros_like(x)
    idx = [slice(None)] * x.ndim
    idx[axis] = slice(0, len(sel))
    out[tuple(idx)] = picked
    return [out, np.array([len(sel)], I64)]


def _compress_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x, cond = ins
    axis = at["axis"]
    n = min(int(x.shape[axis].value), int(cond.shape[0].value))
    mask = te.compute((n,), lambda i: cond[i] != const(0, cond.dtype), name="compress_mask")
    pre = _prefix(mask, n, "compress")
    sel = te.compute((int(x.shape[axis].value),), lambda k: _kth(
        mask, pre, n, k, lambda j: j.astype("int32")), name="compress_index")
    res = te.compute(x.shape, lambda *i: x[tuple(sel[v] if d == axis else v
                                                  for d, v in enumerate(i))],
                     name="compress", tag="select")
    return [res, _count(mask, n, "compress")]


register_op("compress", OpPattern.OPAQUE, lambda types, at: [types[0], ((1,), I64)],
            _compress_ref, _compress_compute,
            doc="the slices along attrs axis whose condition (input 1) is true, packed "
            "first (bound: x's shape) + their count (1,)")


# unique -------------------------------------------------------------------------------------
def _unique_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x = ins[0].reshape(-1)
    n = x.size
    vals, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                             return_counts=True)
    if not at.get("sorted", True):
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        vals, first, counts, inverse = vals[order], first[order], counts[order], rank[inverse]
    u = len(vals)

    def pad(a: np.ndarray, dt: Any) -> np.ndarray:
        out = np.zeros(n, dt)
        out[:u] = a
        return out

    return [pad(vals, x.dtype), pad(first, I64), inverse.reshape(-1).astype(I64),
            pad(counts, I64), np.array([u], I64)]


def _unique_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x0 = ins[0]
    shape = [int(s.value) for s in x0.shape]
    n = int(np.prod(shape, dtype=np.int64))
    x = te.compute((n,), lambda i: x0[tuple(_unravel(i, shape))], name="unique_flat")
    j1 = te.reduce_axis((0, n), name="j1")
    dups = te.compute((n,), lambda i: te.sum(te.select(x[j1] == x[i], _i64(1), _i64(0)),
                                             axis=j1, where=j1.var < i), name="unique_dups")
    first = te.compute((n,), lambda i: dups[i] == _i64(0), name="unique_first")
    j2 = te.reduce_axis((0, n), name="j2")
    if at.get("sorted", True):  # rank: the first occurrences of smaller values
        rank = te.compute((n,), lambda i: te.sum(te.select(
            te.all(first[j2], x[j2] < x[i]), _i64(1), _i64(0)), axis=j2), name="unique_rank")
    else:  # rank: first occurrences before this value's first occurrence
        j3 = te.reduce_axis((0, n), name="j3")
        occ = te.compute((n,), lambda i: te.min(te.select(x[j3] == x[i], j3.var, const(
            n, "int32")), axis=j3), name="unique_occurrence")
        rank = te.compute((n,), lambda i: te.sum(te.select(first[j2], _i64(1), _i64(0)),
                                                 axis=j2, where=j2.var < occ[i]),
                          name="unique_rank")

    def at_rank(k: Any, value: Any, dtype: str) -> PrimExpr:
        j = te.reduce_axis((0, n), name="jk")
        v = value(j.var)
        return te.sum(te.select(te.all(first[j], rank[j] == k.astype(I64)), v,
                                const(0, dtype)), axis=j)

    y = te.compute((n,), lambda k: at_rank(k, lambda j: x[j], x.dtype), name="unique_values")
    idx = te.compute((n,), lambda k: at_rank(k, lambda j: j.astype(I64), I64),
                     name="unique_index")
    inv = te.compute((n,), lambda i: rank[i], name="unique_inverse", tag="injective")
    j4 = te.reduce_axis((0, n), name="j4")
    cnt = te.compute((n,), lambda k: te.sum(te.select(rank[j4] == k.astype(I64), _i64(1),
                                                      _i64(0)), axis=j4), name="unique_counts")
    return [y, idx, inv, cnt, _count(first, n, "unique")]


def _unique_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    n = int(np.prod(types[0][0], dtype=np.int64))
    return [((n,), types[0][1]), ((n,), I64), ((n,), I64), ((n,), I64), ((1,), I64)]


register_op("unique", OpPattern.OPAQUE, _unique_infer, _unique_ref, _unique_compute,
            doc="unique elements of the flattened x (attr sorted, else in order of first "
            "occurrence) -> values, first indices, inverse indices, counts (bounds: size) "
            "and the number of unique elements (1,)")


# non_max_suppression ---------------------------------------------------------------------
def _suppress_np(a: np.ndarray, b: np.ndarray, center: bool, thr: float) -> bool:
    if center:
        ax0, ax1 = a[0] - a[2] / 2, a[0] + a[2] / 2
        ay0, ay1 = a[1] - a[3] / 2, a[1] + a[3] / 2
        bx0, bx1 = b[0] - b[2] / 2, b[0] + b[2] / 2
        by0, by1 = b[1] - b[3] / 2, b[1] + b[3] / 2
    else:
        ay0, ay1 = sorted((a[0], a[2]))
        ax0, ax1 = sorted((a[1], a[3]))
        by0, by1 = sorted((b[0], b[2]))
        bx0, bx1 = sorted((b[1], b[3]))
    iw = min(ax1, bx1) - max(ax0, bx0)
    ih = min(ay1, by1) - max(ay0, by0)
    if iw <= 0 or ih <= 0:
        return False
    inter = iw * ih
    a1, a2 = (ax1 - ax0) * (ay1 - ay0), (bx1 - bx0) * (by1 - by0)
    union = a1 + a2 - inter
    if a1 <= 0 or a2 <= 0 or union <= 0:
        return False
    return inter / union > thr


def _nms_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    boxes, scores = ins[0], ins[1]
    max_out = int(ins[2].reshape(-1)[0]) if len(ins) > 2 and ins[2].size else 0
    iou = float(ins[3].reshape(-1)[0]) if len(ins) > 3 and ins[3].size else 0.0
    has_thr = len(ins) > 4 and ins[4].size > 0
    thr = float(ins[4].reshape(-1)[0]) if has_thr else 0.0
    nb, nc, n = scores.shape
    sel = []
    for b in range(nb):
        for c in range(nc):
            cand = [i for i in range(n) if not has_thr or scores[b, c, i] > thr]
            cand.sort(key=lambda i: (-scores[b, c, i], i))
            kept: list[int] = []
            for i in cand:
                if len(kept) >= max_out:
                    break
                if not any(_suppress_np(boxes[b, k], boxes[b, i], at["center_point_box"], iou)
                           for k in kept):
                    kept.append(i)
            sel += [(b, c, i) for i in kept]
    out = np.zeros((nb * nc * n, 3), I64)
    out[:len(sel)] = np.array(sel, I64).reshape(-1, 3)
    return [out, np.array([len(sel)], I64)]


def _nms_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    boxes, scores = ins[0], ins[1]
    nb, nc, n = (int(s.value) for s in scores.shape)
    f = "float32" if boxes.dtype != "float64" else "float64"
    z = const(0, "int32")

    def scalar(k: int, default: Any, dtype: str) -> PrimExpr:
        if len(ins) > k and int(np.prod([int(s.value) for s in ins[k].shape])) > 0:
            return ins[k][(z,) * len(ins[k].shape)].astype(dtype)
        return const(default, dtype)

    max_out = scalar(2, 0, I64)
    iou = scalar(3, 0.0, f)
    thr_given = len(ins) > 4 and int(np.prod([int(s.value) for s in ins[4].shape])) > 0
    thr = scalar(4, 0.0, f)
    center = at["center_point_box"]

    def corners(b: Any, i: Any) -> tuple[PrimExpr, PrimExpr, PrimExpr, PrimExpr]:
        v = [boxes[b, i, const(k, "int32")].astype(f) for k in range(4)]
        if center:
            half_w, half_h = v[2] * const(0.5, f), v[3] * const(0.5, f)
            return v[0] - half_w, v[0] + half_w, v[1] - half_h, v[1] + half_h
        return (te.min_expr(v[1], v[3]), te.max_expr(v[1], v[3]), te.min_expr(v[0], v[2]),
                te.max_expr(v[0], v[2]))

    def suppress(b: Any, i: Any, j: Any) -> PrimExpr:
        ax0, ax1, ay0, ay1 = corners(b, i)
        bx0, bx1, by0, by1 = corners(b, j)
        iw = te.min_expr(ax1, bx1) - te.max_expr(ax0, bx0)
        ih = te.min_expr(ay1, by1) - te.max_expr(ay0, by0)
        zero = const(0.0, f)
        inter = iw * ih
        a1, a2 = (ax1 - ax0) * (ay1 - ay0), (bx1 - bx0) * (by1 - by0)
        union = a1 + a2 - inter
        ok = te.all(iw > zero, ih > zero, a1 > zero, a2 > zero, union > zero)
        safe = te.select(ok, union, const(1.0, f))
        return te.all(ok, inter / safe > iou)

    sup = te.compute((nb, n, n), suppress, name="nms_iou", tag="materialize")

    def cand(b: Any, c: Any, i: Any) -> PrimExpr:
        return scores[b, c, i].astype(f) > thr if thr_given else const(True)

    is_cand = te.compute((nb, nc, n), cand, name="nms_candidate", tag="materialize")
    j = te.reduce_axis((0, n), name="j")

    def rank(b: Any, c: Any, i: Any) -> PrimExpr:  # score order, ties by index
        sj, si = scores[b, c, j], scores[b, c, i]
        before = te.any(sj > si, te.all(sj == si, j.var < i))
        return te.sum(te.select(te.all(is_cand[b, c, j], before), const(1, "int32"),
                                const(0, "int32")), axis=j)

    rk = te.compute((nb, nc, n), rank, name="nms_rank")
    j2 = te.reduce_axis((0, n), name="j2")
    box_at = te.compute((nb, nc, n), lambda b, c, r: te.sum(te.select(
        te.all(is_cand[b, c, j2], rk[b, c, j2] == r), j2.var, const(0, "int32")), axis=j2),
        name="nms_box_at")
    j3 = te.reduce_axis((0, n), name="j3")
    n_cand = te.compute((nb, nc), lambda b, c: te.sum(te.select(
        is_cand[b, c, j3], const(1, "int32"), const(0, "int32")), axis=j3), name="nms_ncand")
    # the greedy selection, one stage per rank: kept[r] reads the decisions before it
    kept: list[Any] = []
    for r in range(n):
        def decide(b: Any, c: Any, r: int = r) -> PrimExpr:
            box = box_at[b, c, const(r, "int32")]
            before = [k[b, c] for k in kept]
            n_kept = _i64(0)
            hit = const(False)
            for q, k in enumerate(before):
                n_kept = n_kept + te.select(k, _i64(1), _i64(0))
                hit = te.any(hit, te.all(k, sup[b, box_at[b, c, const(q, "int32")], box]))
            return te.all(const(r, "int32") < n_cand[b, c], n_kept < max_out,
                          te.select(hit, const(False), const(True)))

        kept.append(te.compute((nb, nc), decide, name=f"nms_keep{r}", tag="materialize"))

    def keep_flat(m: Any) -> PrimExpr:  # m = (b * nc + c) * n + r
        b, c, r = _unravel(m, [nb, nc, n])
        v = const(False)
        for q, k in enumerate(kept):
            v = te.select(r == const(q, "int32"), k[b, c], v)
        return v

    total = nb * nc * n
    flat = te.compute((total,), keep_flat, name="nms_kept", tag="materialize")
    pre = _prefix(flat, total, "nms")

    def field(m: Any, d: Any) -> PrimExpr:
        b, c, r = _unravel(m, [nb, nc, n])
        return te.select(d == const(0, "int32"), b, te.select(
            d == const(1, "int32"), c, box_at[b, c, r])).astype(I64)

    res = te.compute((total, 3), lambda k, d: _kth(flat, pre, total, k, lambda m: field(m, d)),
                     name="non_max_suppression", tag="select")
    return [res, _count(flat, total, "nms")]


def _nms_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    nb, nc, n = types[1][0]
    if n > NMS_MAX_BOXES:
        raise TensorforgeError(
            f"non_max_suppression over {n} boxes per batch: the greedy selection is unrolled "
            f"over the boxes, up to {NMS_MAX_BOXES}; keep the top {NMS_MAX_BOXES} scores "
            "first (TopK) or split the boxes")
    return [((nb * nc * n, 3), I64), ((1,), I64)]


register_op("non_max_suppression", OpPattern.OPAQUE, _nms_infer, _nms_ref, _nms_compute,
            doc="ONNX NonMaxSuppression (boxes, scores[, max_output_boxes_per_class, "
            "iou_threshold, score_threshold], read at run time; attr center_point_box) -> "
            "selected (batch, class, box) rows (bound: every box) + their count (1,)")


# unique_slices ----------------------------------------------------------------------------
def _slices_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    x, axis = ins[0], at["axis"]
    n = x.shape[axis]
    vals, first, inverse, counts = np.unique(x, axis=axis, return_index=True,
                                             return_inverse=True, return_counts=True)
    if not at.get("sorted", True):
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        vals = np.take(vals, order, axis=axis)
        first, counts, inverse = first[order], counts[order], rank[inverse.reshape(-1)]
    u = len(first)
    y = np.zeros_like(x)
    idx = [slice(None)] * x.ndim
    idx[axis] = slice(0, u)
    y[tuple(idx)] = vals

    def pad(a: np.ndarray) -> np.ndarray:
        out = np.zeros(n, I64)
        out[:u] = a
        return out

    return [y, pad(first), inverse.reshape(-1).astype(I64), pad(counts), np.array([u], I64)]


def _slices_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x = ins[0]
    shape = [int(s.value) for s in x.shape]
    axis = at["axis"]
    n = shape[axis]
    rest = shape[:axis] + shape[axis + 1:]
    r_n = int(np.prod(rest, dtype=np.int64))
    i32 = "int32"

    def el(i: Any, r: Any) -> PrimExpr:  # element r of slice i
        idx = list(_unravel(r, rest))
        idx.insert(axis, i)
        return x[tuple(idx)]

    ra = te.reduce_axis((0, r_n), name="ra")
    diff = te.compute((n, n), lambda i, j: te.sum(te.select(
        el(i, ra.var) != el(j, ra.var), _i64(1), _i64(0)), axis=ra), name="uniq_diff")
    rb = te.reduce_axis((0, r_n), name="rb")
    fd = te.compute((n, n), lambda i, j: te.min(te.select(
        el(i, rb.var) != el(j, rb.var), rb.var, const(r_n, i32)), axis=rb), name="uniq_fd")

    def less(j: Any, i: Any) -> PrimExpr:  # slice j sorts before slice i
        r = te.min_expr(fd[j, i], const(r_n - 1, i32))
        return te.all(fd[j, i] < const(r_n, i32), el(j, r) < el(i, r))

    j1 = te.reduce_axis((0, n), name="j1")
    dups = te.compute((n,), lambda i: te.sum(te.select(diff[j1, i] == _i64(0), _i64(1),
                                                       _i64(0)), axis=j1, where=j1.var < i),
                      name="uniq_dups")
    first = te.compute((n,), lambda i: dups[i] == _i64(0), name="uniq_first")
    j2 = te.reduce_axis((0, n), name="j2")
    if at.get("sorted", True):
        rank = te.compute((n,), lambda i: te.sum(te.select(te.all(first[j2], less(j2.var, i)),
                                                           _i64(1), _i64(0)), axis=j2),
                          name="uniq_rank")
    else:
        j3 = te.reduce_axis((0, n), name="j3")
        occ = te.compute((n,), lambda i: te.min(te.select(diff[j3, i] == _i64(0), j3.var,
                                                          const(n, i32)), axis=j3),
                         name="uniq_occurrence")
        rank = te.compute((n,), lambda i: te.sum(te.select(first[j2], _i64(1), _i64(0)),
                                                 axis=j2, where=j2.var < occ[i]),
                          name="uniq_rank")

    def at_rank(k: Any) -> PrimExpr:
        j = te.reduce_axis((0, n), name="jk")
        return te.sum(te.select(te.all(first[j], rank[j] == k.astype(I64)),
                                j.var.astype(I64), _i64(0)), axis=j)

    idx = te.compute((n,), at_rank, name="uniq_index")
    y = te.compute(x.shape, lambda *i: x[tuple(idx[v].astype(i32) if d == axis else v
                                              for d, v in enumerate(i))],
                   name="uniq_values", tag="select")
    inv = te.compute((n,), lambda i: rank[i], name="uniq_inverse", tag="injective")
    j4 = te.reduce_axis((0, n), name="j4")
    cnt = te.compute((n,), lambda k: te.sum(te.select(rank[j4] == k.astype(I64), _i64(1),
                                                      _i64(0)), axis=j4), name="uniq_counts")
    return [y, idx, inv, cnt, _count(first, n, "uniq")]


def _slices_infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    n = types[0][0][at["axis"]]
    return [types[0], ((n,), I64), ((n,), I64), ((n,), I64), ((1,), I64)]


register_op("unique_slices", OpPattern.OPAQUE, _slices_infer, _slices_ref, _slices_compute,
            doc="unique slices of x along attrs axis (attr sorted: lexicographic, else first "
            "occurrence) -> slices, first indices, inverse, counts (bounds: the axis length), "
            "their number (1,)")
