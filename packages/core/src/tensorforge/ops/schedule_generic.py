"""A generic CPU schedule for any fused group: correct for every op, not naive for the heavy ones.

`schedule_generic(outs, target)` takes the output tensors of one fused group (a master op with
its elementwise epilogue, or an injective chain) and returns a Schedule:

- every injective/elementwise intermediate stage is inlined into its reader, except the padding
  stage of a convolution, which is computed once at root (a guarded load in the innermost loop
  would defeat vectorization), stages tagged `materialize` (a chain of stages each read
  by all later ones, like non_max_suppression's greedy decisions: inlined, the expression
  would double with every stage), and stages tagged `injective_root` (a separable resize's
  first pass: inlined, its gathers would run once per output instead of once per input row);
- the output stage's outer data-parallel axes are fused into one loop, parallel when the target
  runs more than one thread (`-num-threads` 0 or > 1);
- the innermost axis is vectorized when its extent is a multiple of the lane count (or split by
  a lane multiple that divides it);
- a *tiled master* (conv2d, depthwise conv, dense, matmul) is computed into a register tile
  (`cache_write(..., "local")`) attached to the output's tile, its reduction axes outside the
  vectorized one, so the tile is `rows x lanes` independent accumulators; its epilogue (bias,
  scale, relu, residual add) is inlined into the output stage and runs on the finished tile;
- other reductions (pools, reduce) whose shape equals the output's are computed at the output's
  tile with the reduction outside the vector axis; reductions of other shapes (softmax's max
  and sum), and every reduction of a group with several outputs, are computed at root with
  their own parallel/vector loops.
"""

from __future__ import annotations

from typing import Any

from ..te.tensor import ComputeOp, Tensor

__all__ = ["schedule_generic", "vector_lanes"]

_TILED_TAGS = ("conv2d_nchw", "depthwise_conv2d_nchw", "dense", "matmul")


def vector_lanes(target: Any, dtype: str = "float32") -> int:
    """`dtype` lanes of the target's widest vector unit (float32: 16 AVX-512, 8 AVX2, else
    4). The features are `-mcpu`'s and `-mattr`'s together, as LLVM resolves them: a target
    that names a CPU without `-mattr` (`-mcpu=znver3`, the `amd/zen3` tag) gets that CPU's
    vectors, not SSE's."""
    from ..runtime.cpu_features import target_features

    opts = getattr(target, "options", {}) or {}
    feats = target_features(str(opts.get("mcpu") or ""), str(opts.get("mattr") or ""),
                          str(opts.get("mtriple") or ""))
    bits = 512 if "avx512f" in feats else 256 if ("avx2" in feats or "avx" in feats) else 128
    width = 4 if dtype in ("float32", "int32", "uint32") else 8 if "64" in dtype else 2
    if dtype in ("int8", "uint8", "bool"):
        width = 1
    return max(1, bits // 8 // width)


def _threads(target: Any) -> int:
    opts = getattr(target, "options", {}) or {}
    return int(opts.get("num-threads", 1) or 0)


def _extent(iv: Any) -> int | None:
    dom = getattr(iv, "dom", None)
    ext = getattr(dom, "extent", None)
    return getattr(ext, "value", None)


def _is_compute(t: Tensor) -> bool:
    return isinstance(t.op, ComputeOp)


def _tags(op: Any) -> str:
    return str(getattr(op, "tag", "") or "")


def _vector_width(ext: int, lanes: int) -> int | None:
    """A vector width for an axis of `ext`: a lane multiple dividing it, the whole (short)
    axis, or half a vector when that divides it."""
    for f in (2 * lanes, lanes):
        if ext % f == 0:
            return f
    if ext <= 2 * lanes:
        return ext
    half = lanes // 2
    return half if half >= 4 and ext % half == 0 else None


def _vector_split(stage: Any, iv: Any, lanes: int) -> tuple[Any | None, Any | None]:
    """Split `iv` (outer, inner) with a vectorized inner part; (None, iv) when the whole axis
    is vectorized, (iv, None) when it is not vectorizable."""
    ext = _extent(iv)
    if ext is None or ext < 2:
        return iv, None
    f = _vector_width(ext, lanes)
    if f is None:
        return iv, None
    if f == ext:
        stage.vectorize(iv)
        return None, iv
    outer, inner = stage.split(iv, factor=f)
    stage.vectorize(inner)
    return outer, inner


def _stages(s: Any) -> list[Any]:
    return [st for st in s.stages if isinstance(st.op, ComputeOp)]


def schedule_generic(outs: list[Tensor] | Tensor, target: Any = None) -> Any:
    """The default schedule of one fused group (see the module docstring)."""
    from .. import te

    outs = [outs] if isinstance(outs, Tensor) else list(outs)
    s = te.create_schedule([o.op for o in outs])
    lanes = vector_lanes(target, outs[0].dtype)
    parallel = _threads(target) != 1
    out_ops = {o.op for o in outs}

    reductions = [st for st in _stages(s) if st.op.reduce_axis and st.op not in out_ops]
    tiled = [st for st in _stages(s) if any(t in _tags(st.op) for t in _TILED_TAGS)]
    master = tiled[-1] if tiled and len(outs) == 1 else None
    for st in _stages(s):
        if st.op in out_ops or st.op.reduce_axis:
            continue
        if "pad" in _tags(st.op) and master is not None or "materialize" in _tags(st.op):
            _schedule_root(st, lanes, parallel)  # conv padding, stages read many times
        elif "index_check" in _tags(st.op):
            _schedule_root(st, lanes, parallel)  # a scatter's checked indices: once each
        elif "injective_root" in _tags(st.op):  # computed once (a separable resize's rows)
            _schedule_root(st, lanes, parallel)
        else:
            st.compute_inline()
    if master is None:
        if len(outs) == 1:
            _schedule_output(s[outs[0]], reductions, lanes, parallel)
            return s
        for r in reductions:  # several outputs (top-k's values and indices ...): the
            _schedule_root(r, lanes, parallel)  # reductions once, at root
        for o in outs:
            _schedule_output(s[o], [], lanes, parallel)
        return s
    _schedule_tiled(s, s[outs[0]], master, lanes, parallel)
    for st in reductions:
        if st is not master and st.attach_type == "root":
            _schedule_root(st, lanes, parallel)
    return s


def _loops(st: Any, lanes: int) -> tuple[Any | None, Any | None]:
    """Reorder `st` to (data-parallel loops fused into one) x reductions x vector lane axis;
    returns (the fused outer loop or None, the vector axis or None)."""
    axes = list(st.op.axis)
    red = list(st.op.reduce_axis)
    if not axes:
        return None, None
    outer, vec = _vector_split(st, axes[-1], lanes)
    loops = axes[:-1] + ([outer] if outer is not None and vec is not None else [])
    if vec is None:
        loops = axes
    st.reorder(*loops, *red, *([vec] if vec is not None else []))
    if not loops:
        return None, vec
    fused = st.fuse(*loops) if len(loops) > 1 else loops[0]
    return fused, vec


def _schedule_root(st: Any, lanes: int, parallel: bool) -> None:
    """A stage computed once at root: one parallel outer loop, vector inner axis."""
    fused, _ = _loops(st, lanes)
    if parallel and fused is not None:
        st.parallel(fused)


def _schedule_output(st: Any, reductions: list[Any], lanes: int, parallel: bool) -> None:
    """Output stage of a group without a tiled master: elementwise chain or pool/reduce.
    Reductions of the output's shape are computed at its tile, the others at root."""
    shape = [_extent(a) for a in st.op.axis]
    fused, vec = _loops(st, lanes)
    if parallel and fused is not None:
        st.parallel(fused)
    for r in reductions:
        if fused is not None and r.attach_type == "root" and [
                _extent(a) for a in r.op.axis] == shape:
            r.compute_at(st, fused)
            axes = list(r.op.axis)
            r.reorder(*axes[:-1], *r.op.reduce_axis, axes[-1])
            if vec is not None:
                r.vectorize(axes[-1])
        else:
            _schedule_root(r, lanes, parallel)


def _schedule_tiled(s: Any, out: Any, master: Any, lanes: int, parallel: bool) -> None:
    """conv2d / dense / matmul: a `rows x vector` register tile of the output, accumulated in
    a local buffer over the whole reduction, then finished by the inlined epilogue."""
    local = s[s.cache_write(master.op.output(0), "local")]
    if master is not out:
        master.compute_inline()  # the copy-out stage: the epilogue reads the tile directly
    axes = list(out.op.axis)
    nd = len(axes)
    if nd < 2:
        fused, _ = _loops(out, lanes)
        local.compute_at(out, fused) if fused is not None else None
        return
    # rows: the channel axis of NCHW convs, the row axis of dense/matmul
    row_axis = 1 if "conv2d" in _tags(master.op) and nd == 4 else nd - 2
    ext_in = _extent(axes[-1]) or 1
    vw = _vector_width(ext_in, lanes) or lanes
    ext_row = _extent(axes[row_axis]) or 1
    rows = next((f for f in (8, 4, 2) if ext_row % f == 0 and f * vw <= 8 * lanes), 1)
    io, ii = out.split(axes[-1], factor=vw) if vw < ext_in else (None, axes[-1])
    ro, ri = out.split(axes[row_axis], factor=rows) if rows > 1 else (axes[row_axis], None)
    head = [a for k, a in enumerate(axes[:-1]) if k != row_axis]
    order = head[:row_axis] + [ro] + head[row_axis:] + ([io] if io is not None else [])
    out.reorder(*order, *([ri] if ri is not None else []), ii)
    if ext_in >= 2:
        out.vectorize(ii)
    if ri is not None:
        out.unroll(ri)
    fused = out.fuse(*order) if len(order) > 1 else order[0]
    if parallel:
        out.parallel(fused)
    local.compute_at(out, fused)
    laxes = list(local.op.axis)
    rest = [a for k, a in enumerate(laxes[:-1]) if k != row_axis]
    local.reorder(*rest, *local.op.reduce_axis, laxes[row_axis], laxes[-1])
    if ext_in >= 2:
        local.vectorize(laxes[-1])
    if rows > 1:
        local.unroll(laxes[row_axis])
