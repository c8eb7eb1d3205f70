"""Register tiles over rows (`-conv-tile=`): the direct NCHW[x]c form's `tile_oh` x `tile_ow`
tile (`strategies.default_conv_tile`), its reduction order for small input blocks
(`default_reduce_order`), the 1x1 GEMM form's `gemm_tile_oh` (`conv1x1.gemm_tile_rows`) and
the weight prefetch (`-conv-prefetch=`) against numpy: 7-row outputs whose last row tile is guarded,
stride 2, padding, batch 2, channel counts no block divides (through the layout pass), every
row count of the tuning space; and the rules themselves."""

from __future__ import annotations

import numpy as np
import pytest

import tensorforge
from tensorforge import te
from tensorforge.autotune.space import ConfigSpace
from tensorforge.errors import TensorforgeError
from tensorforge.graph import Graph, run_reference
from tensorforge.ops.nn_nchwc import conv2d_nchwc
from tensorforge.target import Target
from tensorforge_llvm.conv1x1 import gemm_tile_rows
from tensorforge_llvm.strategies import (
    _lanes,
    default_conv_tile,
    default_reduce_order,
    register_file,
    schedule_conv2d_nchwc,
)

RNG = np.random.default_rng(3)


def _te_conv(n: int, c: int, o: int, h: int, w: int, k: int, stride: int, pad: int, bn: int):
    d = te.placeholder((n, c // bn, h, w, bn), name="d")
    wt = te.placeholder((o // bn, c // bn, k, k, bn, bn), name="w")
    b = te.placeholder((o,), name="b")
    y = conv2d_nchwc(d, wt, stride, pad)
    z = te.compute(y.shape, lambda i, q, r, s, v: te.max_expr(
        y[i, q, r, s, v] + b[q * bn + v], te.const(0.0, "float32")), name="relu",
        tag="elemwise")
    return d, wt, b, z


def _numpy_conv(dv, wv, bv, stride: int, pad: int) -> np.ndarray:
    """NCHW[bn]c conv + bias + relu by einsum over the taps."""
    n, cb, h, w, bn = dv.shape
    ob, _, k, _, _, _ = wv.shape
    xp = np.pad(dv, ((0, 0), (0, 0), (pad, pad), (pad, pad), (0, 0)))
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    out = np.zeros((n, ob, oh, ow, bn), "float64")
    for ky in range(k):
        for kx in range(k):
            patch = xp[:, :, ky:ky + stride * oh:stride, kx:kx + stride * ow:stride]
            out += np.einsum("nchwi,Ocio->nOhwo", patch, wv[:, :, ky, kx])
    return np.maximum(out + bv.reshape(1, ob, 1, 1, bn), 0).astype("float32")


def _case(target, n: int, c: int, o: int, hw: tuple[int, int], k: int, stride: int, pad: int,
          bn: int):
    """The TE conv, random data for it, numpy's answer and the schedule's config space."""
    tensors = _te_conv(n, c, o, *hw, k, stride, pad, bn)
    dv = RNG.standard_normal((n, c // bn, *hw, bn)).astype("float32")
    wv = (RNG.standard_normal((o // bn, c // bn, k, k, bn, bn)) / np.sqrt(c * k * k)).astype(
        "float32")
    bv = RNG.standard_normal(o).astype("float32")
    sp = ConfigSpace(target)
    schedule_conv2d_nchwc([tensors[3]], target, sp)
    return tensors, (dv, wv, bv), _numpy_conv(dv, wv, bv, stride, pad), sp


@pytest.mark.parametrize("n,c,o,hw,k,stride,pad", [
    (2, 2, 2, (7, 7), 3, 1, 1),     # 7 rows: tiles of 2 rows, the last guarded; batch 2
    (1, 2, 4, (14, 13), 3, 2, 1),   # stride 2 from an odd width: 7 x 7 outputs
    (2, 3, 2, (7, 7), 1, 1, 0),     # 1x1 (the GEMM form's rows), batch 2
    (1, 2, 2, (13, 13), 1, 2, 0),   # 1x1 stride 2: 7x7 outputs
])
def test_every_row_tile_computes_the_same_conv(llvm_target, n, c, o, hw, k, stride,
                                               pad) -> None:
    """Blocks of two vectors (the rule's case); every `tile_oh` (and for 1x1, `gemm_tile_oh`
    in the GEMM form) of the tuning space against numpy."""
    if register_file(llvm_target) < 32:
        pytest.skip("with 16 vector registers (AVX2) a register tile spans one row: the tuning "
                    "space has no row tiles to check (they need AVX-512 or AArch64)")
    bn = 2 * _lanes(llvm_target)
    c, o = c * bn, o * bn
    (d, wt, b, z), (dv, wv, bv), want, sp = _case(llvm_target, n, c, o, hw, k, stride, pad, bn)
    knob = "gemm_tile_oh" if k == 1 else "tile_oh"
    base = {name: sp[name].json() for name in sp.knobs}
    if k == 1:
        base["form"] = "gemm"
        base["gemm_tile_ow"] = [1, want.shape[3]]
    assert base[knob][1] > 1, base  # the rule tiles over rows here
    splits = [e.json() for e in sp.knobs[knob].entities]
    assert len(splits) >= 2, splits
    for split in splits:
        vals = dict(base, **{knob: split})
        cfg = sp.from_json({"knobs": vals})
        f = tensorforge.build(schedule_conv2d_nchwc([z], llvm_target, cfg), [d, wt, b, z],
                              target=llvm_target)
        got = np.zeros(want.shape, "float32")
        f(dv, wv, bv, got)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=str(vals))


def _graph(n: int, c: int, o: int, hw: tuple[int, int], k: int, stride: int,
           pad: int) -> Graph:
    g = Graph()
    x = g.add_input("x", (n, c, *hw), "float32")
    w = (RNG.standard_normal((o, c, k, k)) / np.sqrt(c * k * k)).astype("float32")
    y = g.add("conv2d", x, g.add_const("w", w), g.add_const("b", RNG.standard_normal(o).astype(
        "float32")), strides=(stride, stride), pads=(pad,) * 4, dilations=(1, 1), groups=1)
    g.outputs = [g.add("relu", g.add("add", y, g.add_input("r", (n, o, *(
        (s + 2 * pad - k) // stride + 1 for s in hw)), "float32")))]
    return g


@pytest.mark.parametrize("n,c,o,hw,k,stride,pad", [
    (2, 40, 64, (7, 7), 3, 1, 1),    # 40 input channels: no 32-block divides them
    (1, 48, 96, (14, 13), 3, 2, 1),  # stride 2, odd width
    (2, 72, 64, (7, 7), 1, 1, 0),    # 1x1, batch 2
    (2, 3, 64, (23, 21), 7, 2, 3),   # a 3-channel 7x7 stem: the channels outside the taps
])
@pytest.mark.parametrize("policy", ["auto", "narrow"])
def test_models_match_the_reference_under_both_policies(llvm_target, n, c, o, hw, k, stride,
                                                        pad, policy) -> None:
    """Through the compiler (layout pass, fused bias + residual add + relu), both policies."""
    target = Target.coerce(f"llvm -num-threads=1 -conv-tile={policy} -winograd=off")
    g = _graph(n, c, o, hw, k, stride, pad)
    inputs = {v.name: RNG.standard_normal(v.shape).astype("float32") for v in g.inputs}
    cm = tensorforge.compile(g, target=target)
    for got, want in zip(cm.run(inputs), run_reference(g, inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert any(kd["master"] == "conv2d_nchwc" for kd in cm.desc["kernels"])


def test_the_rules() -> None:
    """AVX-512 (16 lanes, 32 registers): 32-channel blocks take 14 pixels of a row, or two
    7-pixel rows; one-vector blocks, 7-wide kernels, input blocks under 8 channels and the
    narrow policy keep the one-row tile of half the registers."""
    assert default_conv_tile(7, 7, 3, 32, 32, 16, 32) == (2, 7)
    assert default_conv_tile(28, 28, 3, 32, 32, 16, 32) == (1, 14)
    assert default_conv_tile(56, 56, 3, 32, 32, 16, 32) == (1, 14)
    assert default_conv_tile(7, 7, 3, 32, 32, 16, 32, "narrow") == (1, 7)
    assert default_conv_tile(112, 112, 7, 32, 32, 16, 32) == (1, 8)   # 7x7 stem
    assert default_conv_tile(112, 112, 3, 3, 32, 16, 32) == (1, 8)    # 3-channel input
    assert default_conv_tile(7, 7, 3, 16, 16, 16, 32) == (1, 7)       # one vector
    assert default_conv_tile(1, 7, 3, 32, 32, 16, 32) == (1, 7)       # one row in all
    # the GEMM form: whole rows only, loads per FMA bounded
    assert default_reduce_order(3) == (0, 3, 1, 2) and default_reduce_order(32) == (0, 1, 2, 3)
    assert default_reduce_order(3, "narrow") == (0, 1, 2, 3)
    assert gemm_tile_rows(7, 7, 7, 1, 2, 32) == 2
    assert gemm_tile_rows(7, 7, 7, 1, 2, 32, "narrow") == 1
    assert gemm_tile_rows(14, 14, 14, 1, 2, 32) == 1                  # registers full
    assert gemm_tile_rows(28, 28, 14, 1, 2, 32) == 1                  # not a whole row
    assert gemm_tile_rows(7, 7, 7, 1, 1, 32) == 1                     # broadcast-bound
    assert gemm_tile_rows(7, 3, 3, 2, 2, 32) == 2


def test_bad_policy_is_refused(llvm_target) -> None:
    with pytest.raises(TensorforgeError, match="conv-tile"):
        Target.coerce("llvm -conv-tile=wide")


@pytest.mark.parametrize("k,stride,pad", [(3, 2, 1), (1, 1, 0)])
def test_weight_prefetch_computes_the_same_conv_and_emits_prefetches(llvm_target, k, stride,
                                                                     pad) -> None:
    """`prefetch` on (the direct form, and the GEMM form for 1x1): the kernel's IR calls
    `llvm.prefetch` one panel ahead and computes what it does without; batch 2, odd sizes."""
    bn = 2 * _lanes(llvm_target)
    n, c, o, hw = 2, 2 * bn, 3 * bn, (9, 11)
    (d, wt, b, z), (dv, wv, bv), want, sp = _case(llvm_target, n, c, o, hw, k, stride, pad, bn)
    for form in (["direct", "gemm"] if k == 1 else ["direct"]):
        for on in (False, True):
            vals = dict({name: sp[name].json() for name in sp.knobs}, prefetch=on)
            if k == 1:
                vals["form"] = form
            cfg = sp.from_json({"knobs": vals})
            f = tensorforge.build(schedule_conv2d_nchwc([z], llvm_target, cfg), [d, wt, b, z],
                                  target=llvm_target)
            assert ("llvm.prefetch" in f.get_source("ll")) == on, (form, on)
            got = np.zeros(want.shape, "float32")
            f(dv, wv, bv, got)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=str(vals))


def test_prefetch_and_winograd_rules(llvm_target) -> None:
    """Weights over 2 MB are prefetched unless `-conv-prefetch=off`; with the row tile
    (`-conv-tile=auto`) Intel's 7x7 layers (16 F(2,3) tiles) stay direct, 14x14 do not."""
    from tensorforge_llvm.strategies import prefetch_default
    from tensorforge_llvm.winograd import default_tile

    big = te.placeholder((16, 16, 3, 3, 32, 32), name="w")   # 9.4 MB
    small = te.placeholder((8, 8, 1, 1, 32, 32), name="w")   # 256 KB
    auto = Target.coerce("llvm -num-threads=1")
    off = Target.coerce("llvm -num-threads=1 -conv-prefetch=off")
    assert prefetch_default(big, auto) and not prefetch_default(small, auto)
    assert not prefetch_default(big, off)
    xeon = "sapphirerapids"
    assert default_tile(512, 512, 7, 7, cpu=xeon) == 2
    assert default_tile(512, 512, 7, 7, cpu=xeon, direct_rows=True) == 0
    assert default_tile(256, 256, 14, 14, cpu=xeon, direct_rows=True) == 2
    assert default_tile(512, 512, 7, 7, cpu="znver4", direct_rows=True) == 4  # AMD: as before
