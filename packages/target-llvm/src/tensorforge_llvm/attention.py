"""The llvm schedule of the fused attention op (`ops/attention.py`, tag ``attention``).

Loops, per batch and head (fused, parallel): the head's keys are transposed once into a
(d, key) buffer; then per tile of `tile_q` queries, for each block of `key_block` keys:

- scores: a `tile_q x key_block` register tile (queries unrolled, keys in vectors), the
  head dimension the reduction, each step one broadcast query element times key vectors;
- the block's maximum and the probabilities exp(x - max) (vectorized over keys) and their
  sum, all on the tile while it is in L1;
- the block's partial output: a `tile_q x head_dim` register tile, each key's probability
  broadcast times a row of V;

and once per query tile the combination of the blocks (their maxima, sums and partial
outputs rescaled) written straight into the output's layout. Nothing larger than
`tile_q x key_block` scores and `tile_q x blocks x head_dim` partials is live, in cache.
"""

from __future__ import annotations

from typing import Any

from tensorforge.te.tensor import ComputeOp, Tensor

from .strategies import SYMBOLIC_ROWS, _cfg, _ext, _lanes, _parallel

__all__ = ["default_tile_q", "schedule_attention"]


def _stage(s: Any, tag: str) -> Any:
    for st in s.stages:
        if isinstance(st.op, ComputeOp) and str(getattr(st.op, "tag", "")) == tag:
            return st
    raise ValueError(f"attention schedule: no stage tagged {tag!r}")


def _logical_loops(out: Any) -> dict[int, Any]:
    """Split the output's axes so that each logical dim (b, h, i, d) of extent > 1 has a
    loop of its own (the `logical_axes` the compute recorded); logical dim -> loop."""
    loops: dict[int, Any] = {}
    for ax, terms in zip(list(out.op.axis), out.op.attrs["logical_axes"]):
        rest = ax
        for k, c in sorted(terms, key=lambda kc: -kc[1]):
            if c == 1:
                loops[k] = rest
            else:
                loops[k], rest = out.split(rest, factor=c)
    return loops


def default_tile_q(q_len: int, key_block: int, head_dim: int, lanes: int) -> int:
    """Queries per tile: the scores tile (`tile x key_block / lanes` vectors) and the partial
    output tile (`tile x head_dim / lanes`) each fit in about 24 registers."""
    vecs = max(key_block, head_dim) // lanes
    return max(1, min(q_len, 24 // max(1, vecs), 8))


def _vector(st: Any, iv: Any, ext: int, lanes: int) -> Any:
    """Vectorize `iv` of extent `ext` (split by the lanes when longer); returns the loop
    outside it (None when the whole loop is one vector)."""
    if ext <= lanes:
        st.vectorize(iv)
        return None
    o, i = st.split(iv, factor=lanes)
    st.vectorize(i)
    return o


def schedule_attention(outs: list[Tensor] | Tensor, target: Any = None, cfg: Any = None) -> Any:
    from tensorforge import te

    outs = [outs] if isinstance(outs, Tensor) else list(outs)
    cfg = _cfg(cfg, target)
    s = te.create_schedule([o.op for o in outs])
    out = s[outs[0]]
    keys, scores = _stage(s, "attention_keys"), _stage(s, "attention_scores")
    bmax, probs = _stage(s, "attention_block_max"), _stage(s, "attention_probs")
    bsum, part = _stage(s, "attention_block_sum"), _stage(s, "attention_partial")
    blocks = _stage(s, "attention_blocks")
    gmax, total = _stage(s, "attention_max"), _stage(s, "attention_sum")
    acc = _stage(s, "attention_acc")
    lanes = _lanes(target)
    # a symbolic query or key count (compiler.symbolic): the query tile is chosen for
    # SYMBOLIC_ROWS queries; the blocks are a loop over a symbolic count
    B, H, Bk = _ext(scores.op.axis[0]), _ext(scores.op.axis[1]), _ext(scores.op.axis[4])
    Sq_ext = scores.op.axis[2].dom.extent
    Sq = int(Sq_ext.value) if hasattr(Sq_ext, "value") else SYMBOLIC_ROWS
    nb_ext = scores.op.axis[3].dom.extent
    nb = int(nb_ext.value) if hasattr(nb_ext, "value") else -(-SYMBOLIC_ROWS // Bk)
    Dh = _ext(part.op.axis[4])
    mine = {st.op for st in (out, keys, scores, bmax, probs, bsum, part, blocks, gmax, total,
                             acc)}
    bias = next((st for st in s.stages if isinstance(st.op, ComputeOp)
                 and str(getattr(st.op, "tag", "")) == "attention_bias"), None)
    if bias is not None:  # a symbolic length's padded bias: at root, vectorized over keys
        mine.add(bias.op)
        _vector(bias, bias.op.axis[3], 2 * lanes, lanes)
    for st in s.stages:  # a fused producer's elementwise work is read inline
        if isinstance(st.op, ComputeOp) and st.op not in mine:
            st.compute_inline()

    tq = default_tile_q(Sq, Bk, Dh, lanes)
    cfg.define_knob("tile_q", sorted({1, 2, 4, 6, 8, tq} & set(range(1, Sq + 1))), default=tq)
    cfg.add_flop(4.0 * B * H * Sq * nb * Bk * Dh)
    tq = cfg["tile_q"].val

    # output: (b, h) fused and parallel, query tiles, queries, d (vectorized)
    loops = _logical_loops(out)
    b_l, h_l, i_l, d_l = (loops.get(k) for k in range(4))
    io, ii = out.split(i_l, factor=tq)
    heads = [x for x in (b_l, h_l) if x is not None]
    out.reorder(*heads, io, ii, *([d_l] if d_l is not None else []))
    head = out.fuse(*heads) if len(heads) > 1 else (heads[0] if heads else None)
    if d_l is not None:
        _vector(out, d_l, Dh, lanes)
    if head is not None and _parallel(target) and B * H > 1:
        out.parallel(head)

    # the head's keys, transposed once per head
    if head is not None:
        keys.compute_at(out, head)
    keys.reorder(keys.op.axis[3], keys.op.axis[2])

    # per query tile: the blocks' results, then their combination
    for st in (blocks, gmax, total, acc):
        st.compute_at(out, io)
    _, _, ai, ad = acc.op.axis
    acc.reorder(ai, acc.op.reduce_axis[0], ad)
    _vector(acc, ad, Dh, lanes)
    _, _, bi, bt, bc = blocks.op.axis
    blocks.reorder(bt, bi, bc)
    _vector(blocks, bc, Dh + 2, lanes)

    # per key block: scores (register tile), max, probabilities, sum, partial output
    slocal = s[s.cache_write(scores.op.output(0), "local")]
    scores.compute_inline()
    plocal = s[s.cache_write(part.op.output(0), "local")]
    part.compute_inline()
    for st in (slocal, bmax, probs, bsum, plocal):
        st.compute_at(blocks, bt)
    # the block's max and sum: a vector of partial results per query (rfactor over the
    # lanes), then across it; not one scalar chain over the block's keys
    for red in (bmax, bsum):
        if Bk > lanes and Bk % lanes == 0:
            _, rji = red.split(red.op.reduce_axis[0], factor=lanes)
            rf = s[s.rfactor(red.op.output(0), rji, factor_axis=4)]
            rf.compute_at(blocks, bt)
            rf_i, rf_l = rf.op.axis[2], rf.op.axis[4]
            rf.reorder(rf_i, rf.op.reduce_axis[0], rf_l)
            rf.vectorize(rf_l)
    _, _, si, _, sj = slocal.op.axis
    slocal.reorder(slocal.op.reduce_axis[0], si, sj)
    sjo = _vector(slocal, sj, Bk, lanes)
    slocal.unroll(si)
    if sjo is not None:
        slocal.unroll(sjo)
    _vector(probs, probs.op.axis[4], Bk, lanes)
    _, _, pi, _, pd = plocal.op.axis
    plocal.reorder(plocal.op.reduce_axis[0], pi, pd)
    pdo = _vector(plocal, pd, Dh, lanes)
    plocal.unroll(pi)
    if pdo is not None:
        plocal.unroll(pdo)
    return s
