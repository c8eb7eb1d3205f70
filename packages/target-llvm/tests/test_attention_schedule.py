"""The fused attention kernel (ops/attention.py + tensorforge_llvm/attention.py) against its
numpy reference: one key block, several, a last block that overlaps (ViT's 197), query tiles
that do not divide, causal masks with and without a cache offset, an additive padding
mask, one and two threads, and the generic schedule."""

from __future__ import annotations

import numpy as np
import pytest

import tensorforge
from tensorforge import te
from tensorforge.ops.attention import (
    AttentionSpec,
    View,
    attention,
    attention_reference,
    choose_key_block,
)
from tensorforge.target import Target

RNG = np.random.default_rng(0)


def _run(sq: int, skv: int, h: int, dh: int, causal: int | None, bias: bool, threads: int,
         generic: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """q from a (Sq, D) tensor, k and v from one (Skv, 2D) tensor (views with offsets), the
    output into (Sq, D) with the heads interleaved, as BERT's projections hold them."""
    d = h * dh
    spec = AttentionSpec(1, h, sq, skv, dh, dh ** -0.5, causal, choose_key_block(skv))
    views = {"q": View(0, (0, dh, d, 1)), "k": View(0, (0, dh, 2 * d, 1)),
             "v": View(d, (0, dh, 2 * d, 1)), "bias": View(0, (0, 0, 0, 1)),
             "out": View(0, (0, dh, d, 1))}
    q = te.placeholder((sq, d), "float32", name="q")
    kv = te.placeholder((skv, 2 * d), "float32", name="kv")
    b = te.placeholder((1, skv), "float32", name="b") if bias else None
    out = attention(q, kv, kv, b, spec, views, (sq, d))
    tgt = Target.coerce(f"llvm -num-threads={threads}")
    if generic:
        from tensorforge.ops.schedule_generic import schedule_generic

        s = schedule_generic([out], tgt)
    else:
        from tensorforge_llvm.attention import schedule_attention

        s = schedule_attention([out], tgt)
    args = [q, kv] + ([b] if bias else []) + [out]
    f = tensorforge.build(s, args, target=tgt)
    qa = RNG.standard_normal((sq, d)).astype("float32")
    kva = RNG.standard_normal((skv, 2 * d)).astype("float32")
    ba = np.where(np.arange(skv) < skv - skv // 4, 0, -1e9).astype("float32").reshape(1, skv)
    got = np.zeros((sq, d), "float32")
    f(*([qa, kva] + ([ba] if bias else []) + [got]))
    want = attention_reference(qa, kva, kva, ba if bias else None, spec, views, (sq, d))
    return got, want


CASES = [  # sq, skv, heads, head_dim, causal, bias, threads
    (7, 7, 2, 16, None, False, 1),        # fewer keys than lanes: one short block
    (50, 50, 3, 32, 0, True, 1),          # one block, causal, query tail
    (128, 128, 2, 64, None, True, 2),     # BERT: two blocks of 64, two threads
    (197, 197, 2, 64, None, False, 1),    # ViT: the last block overlaps the previous one
    (130, 197, 2, 64, 67, True, 1),       # causal with a cache offset, overlapping block
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}x{c[1]}" for c in CASES])
def test_attention_kernel_matches_reference(llvm_target, case) -> None:
    got, want = _run(*case)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_generic_schedule_is_correct_too(llvm_target) -> None:
    got, want = _run(70, 70, 2, 16, 0, True, 1, generic=True)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_tile_knob(llvm_target) -> None:
    from tensorforge.autotune.space import ConfigSpace
    from tensorforge_llvm.attention import default_tile_q, schedule_attention

    assert default_tile_q(128, 64, 64, 16) == 6 and default_tile_q(3, 64, 64, 16) == 3
    spec = AttentionSpec(1, 2, 20, 20, 16, 0.25)
    views = {k: View(0, (0, 16, 32, 1)) for k in ("q", "k", "v", "out")}
    q = te.placeholder((20, 32), "float32", name="q")
    out = attention(q, q, q, None, spec, views, (20, 32))
    cfg = ConfigSpace()
    schedule_attention([out], Target.coerce("llvm -num-threads=1"), cfg)
    assert list(cfg.knobs) == ["tile_q"] and len(cfg) > 1
