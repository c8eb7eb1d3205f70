"""1x1 convolutions in the GEMM form (`conv1x1.py`) against the numpy reference: odd spatial
sizes, channel counts no vector divides, stride 2, with and without epilogues; every form and
tile of the tunable space computes the same convolution."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorforge
from tensorforge import te
from tensorforge.autotune.space import ConfigSpace, FallbackConfig
from tensorforge.graph import Graph, run_reference
from tensorforge.ops.nn_nchwc import conv2d_nchwc
from tensorforge_llvm.conv1x1 import default_gemm_tile, is_pointwise, prefer_gemm
from tensorforge_llvm.strategies import schedule_conv2d_nchwc

RNG = np.random.default_rng(1)
#: the rules were measured on AVX-512 (16 lanes, 32 registers); tests that only schedule pin
#: it, so they say the same on an AVX2 host (8 lanes, 16 registers: other tiles)
AVX512 = "llvm -num-threads=1 -mcpu=skylake-avx512 -mattr=+avx512f,+avx2,+fma"


def _w(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype("float32")


def _graph(c: int, o: int, h: int, w: int, stride: int, epilogue: str) -> Graph:
    g = Graph()
    x = g.add_input("x", (1, c, h, w), "float32")
    y = g.add("conv2d", x, g.add_const("w", _w(o, c, 1, 1)),
              *([g.add_const("b", _w(o))] if epilogue != "none" else []),
              strides=(stride, stride), pads=(0, 0, 0, 0))
    if epilogue == "relu":
        y = g.add("relu", y)
    elif epilogue == "bn_clip":
        y = g.add("mul", y, g.add_const("s", _w(o, 1, 1)))
        y = g.add("clip", g.add("add", y, g.add_const("t", _w(o, 1, 1))), min=0.0, max=6.0)
    elif epilogue == "silu":
        y = g.add("mul", y, g.add("sigmoid", y))
    elif epilogue == "residual":
        oh, ow = -(-h // stride), -(-w // stride)
        r = g.add_input("r", (1, o, oh, ow), "float32")
        y = g.add("relu", g.add("add", y, r))
    g.outputs = [y]
    return g


@pytest.mark.parametrize("c,o,hw,stride,epi", [
    (32, 64, (7, 19), 1, "relu"),        # odd width: a 19-pixel row in one tile
    (17, 48, (9, 10), 1, "residual"),    # 17 input channels: no vector block divides them
    (24, 48, (13, 13), 2, "bn_clip"),    # blocks of 8, stride 2 on an odd size
    (64, 32, (5, 11), 1, "silu"),
    (16, 96, (6, 6), 1, "none"),         # no epilogue at all: the conv is the output
])
def test_pointwise_conv_matches_numpy(llvm_target, monkeypatch, c, o, hw, stride, epi) -> None:
    from tensorforge_llvm import strategies

    gemm_calls = []
    real = strategies.schedule_conv1x1_gemm
    monkeypatch.setattr(strategies, "schedule_conv1x1_gemm",
                        lambda *a: gemm_calls.append(1) or real(*a))
    g = _graph(c, o, *hw, stride, epi)
    inputs = {v.name: RNG.standard_normal(v.shape).astype("float32") for v in g.inputs}
    # the GEMM form on any host (the rule keeps some of these shapes direct on AVX2)
    cm = tensorforge.compile(g, target=f"{llvm_target} -conv1x1=gemm")
    for got, want in zip(cm.run(inputs), run_reference(g, inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    kinds = [k["schedule"] for k in cm.desc["kernels"] if k["master"] == "conv2d_nchwc"]
    assert kinds and all(k.startswith("strategy conv2d_nchwc/direct") for k in kinds), kinds
    assert gemm_calls, "the GEMM form was not used"


def _te_conv(c: int, o: int, hw: tuple[int, int], stride: int, bn: int, kh: int = 1):
    d = te.placeholder((1, c // bn, *hw, bn), name="d")
    k = te.placeholder((o // bn, c // bn, kh, kh, bn, bn), name="k")
    b = te.placeholder((o,), name="b")
    y = conv2d_nchwc(d, k, stride, 0)
    z = te.compute(y.shape, lambda n, q, i, j, r: te.max_expr(
        y[n, q, i, j, r] + b[q * bn + r], te.const(0.0, "float32")), name="relu",
        tag="elemwise")
    return d, k, b, y, z


def test_every_gemm_config_computes_the_same_conv(llvm_target) -> None:
    """All tiles and loop orders of the GEMM form (tile_oc 1, 2, 4; oc_outer both ways)
    and the direct form, on 13 pixels (a prime row) x 4 output blocks, stride 2 from 25."""
    bn, c, o, hw, stride = 8, 16, 32, (25, 25), 2
    d, k, b, _, z = _te_conv(c, o, hw, stride, bn)
    sp = ConfigSpace()
    schedule_conv2d_nchwc([z], llvm_target, sp)
    dv = RNG.standard_normal((1, c // bn, *hw, bn)).astype("float32")
    kv = RNG.standard_normal((o // bn, c // bn, 1, 1, bn, bn)).astype("float32")
    bv = RNG.standard_normal(o).astype("float32")
    want = np.einsum("nchwi,Ocio->nOhwo", dv[:, :, ::stride, ::stride], kv[:, :, 0, 0])
    want = np.maximum(want + bv.reshape(1, o // bn, 1, 1, bn), 0)
    seen = set()
    for i in range(len(sp)):
        cfg = sp.get(i)
        vals = cfg.values()
        key = (vals["form"], tuple(vals["gemm_tile_ow"]), tuple(vals["tile_oc"]),
               vals["oc_outer"])
        if vals["form"] == "direct" and key[0] in {s[0] for s in seen}:
            continue
        if key in seen or (vals["form"] == "gemm" and vals["gemm_tile_ow"][1] not in (1, 13)):
            continue
        seen.add(key)
        f = tensorforge.build(schedule_conv2d_nchwc([z], llvm_target, cfg), [d, k, b, z],
                              target=llvm_target)
        got = np.zeros(want.shape, "float32")
        f(dv, kv, bv, got)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=str(key))
    forms = {s[0] for s in seen}
    assert forms == {"direct", "gemm"} and len(seen) >= 7, seen


def test_rule_picks_gemm_for_resnet_shapes_and_not_for_one_block(llvm_target) -> None:
    """Wide output channels take the GEMM form with 2+ blocks per tile and all of its 32
    registers at most; a single output block (the direct form's own tile) stays direct;
    3x3 or padded convs are not pointwise."""
    assert default_gemm_tile(56, 16, 1, 32) == (14, 2)
    assert default_gemm_tile(7, 128, 1, 32) == (7, 2)
    for ow, chunks in [(56, 16), (28, 32), (14, 64), (7, 128), (112, 6), (9, 5)]:
        tw, to = default_gemm_tile(ow, chunks, 1, 32)
        assert ow % tw == 0 and chunks % to == 0 and tw * to + to + 1 <= 32
    assert prefer_gemm(14, 16, 16, 16, 32) and not prefer_gemm(14, 1, 16, 16, 32)
    _, _, _, y1, z = _te_conv(16, 32, (8, 8), 1, 16)
    assert is_pointwise(y1.op)
    _, _, _, y3, _ = _te_conv(16, 32, (8, 8), 1, 16, kh=3)
    assert not is_pointwise(y3.op)
    from tensorforge.target import Target

    avx512 = Target.coerce(AVX512)
    cfg = FallbackConfig(avx512)
    schedule_conv2d_nchwc([z], avx512, cfg)
    assert cfg["form"].val == "gemm"


@pytest.mark.parametrize("policy,form", [("direct", "direct"), ("gemm", "gemm"), ("auto", "gemm")])
def test_target_option_sets_the_default_form(llvm_target, policy: str, form: str) -> None:
    from tensorforge.target import Target

    target = Target.coerce(f"llvm -num-threads=1 -conv1x1={policy}")
    *_, z = _te_conv(16, 64, (14, 14), 1, 16)
    cfg = FallbackConfig(target)
    schedule_conv2d_nchwc([z], target, cfg)
    assert cfg["form"].val == form


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_shapes_and_gemm_configs_match_numpy(llvm_target, data) -> None:
    """Random pointwise convs (blocks 4/8/16, odd sizes, stride 1-2) under a random GEMM-form
    config of the tuning space (guarded pixel tiles included) against numpy."""
    from tensorforge.target import Target

    target = Target.coerce("llvm -num-threads=1 -conv1x1=gemm")
    bn = data.draw(st.sampled_from([4, 8, 16]))
    c, o = bn * data.draw(st.integers(1, 3)), bn * data.draw(st.integers(1, 5))
    hw = (data.draw(st.integers(1, 9)), data.draw(st.integers(1, 21)))
    stride = data.draw(st.integers(1, 2))
    d, k, b, _, z = _te_conv(c, o, hw, stride, bn)
    sp = ConfigSpace()
    schedule_conv2d_nchwc([z], target, sp)
    gemm = [i for i in range(len(sp)) if sp.get(i).values()["form"] == "gemm"]
    cfg = sp.get(data.draw(st.sampled_from(gemm)))
    f = tensorforge.build(schedule_conv2d_nchwc([z], target, cfg), [d, k, b, z], target=target)
    rng = np.random.default_rng(0)
    dv = rng.standard_normal((1, c // bn, *hw, bn)).astype("float32")
    kv = rng.standard_normal((o // bn, c // bn, 1, 1, bn, bn)).astype("float32")
    bv = rng.standard_normal(o).astype("float32")
    want = np.einsum("nchwi,Ocio->nOhwo", dv[:, :, ::stride, ::stride], kv[:, :, 0, 0])
    want = np.maximum(want + bv.reshape(1, o // bn, 1, 1, bn), 0)
    got = np.zeros(want.shape, "float32")
    f(dv, kv, bv, got)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=str(cfg.values()))


def _residual_graph(n: int, c: int, o: int, h: int, w: int) -> Graph:
    g = Graph()
    x = g.add_input("x", (n, c, h, w), "float32")
    y = g.add("conv2d", x, g.add_const("w", _w(o, c, 1, 1)), g.add_const("b", _w(o)),
              strides=(1, 1), pads=(0, 0, 0, 0))
    r = g.add_input("r", (n, o, h, w), "float32")
    g.outputs = [g.add("relu", g.add("add", y, r))]
    return g


@pytest.mark.parametrize("c,o,hw,form,flat", [
    (40, 48, (7, 7), "gemm", "on"),      # 49 pixels (odd), 40 channels: no block divides
    (400, 400, (7, 7), "gemm", "auto"),  # RegNetX-400MF's 25 blocks of 16: 5 x 5, a tail
    (64, 160, (7, 7), "gemm", "auto"),   # a flat conv tiled by rows (2 rows x 7 x 2 blocks)
    (24, 80, (5, 3), "direct", "on"),    # the direct form reads the flat conv by rows
])
def test_flat_pixel_conv_matches_numpy(llvm_target, c, o, hw, form, flat) -> None:
    """A conv stage over one row of H*W pixels (batch 2, bias, fused residual add + relu)
    computes the same as numpy in every tiling, and the flat stage is really there."""
    from tensorforge.target import Target

    target = Target.coerce(f"llvm -num-threads=1 -conv1x1={form} -conv1x1-flat={flat}")
    g = _residual_graph(2, c, o, *hw)
    inputs = {v.name: RNG.standard_normal(v.shape).astype("float32") for v in g.inputs}
    cm = tensorforge.compile(g, target=target)
    for got, want in zip(cm.run(inputs), run_reference(g, inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    d = te.placeholder((2, c // 8, *hw, 8), name="d")
    k = te.placeholder((o // 8, c // 8, 1, 1, 8, 8), name="k")
    y = conv2d_nchwc(d, k, 1, 0, flat_pixels=True)
    conv = y.op.input_tensors[0]
    assert y.op.tag == "conv2d_nchwc_rows" and [int(s.value) for s in conv.shape] == [
        2, o // 8, 1, hw[0] * hw[1], 8]


def test_flat_pixels_only_where_it_is_the_same_memory(llvm_target) -> None:
    """A padded, strided or 3x3 conv ignores `flat_pixels`; `-conv1x1-flat=auto` (the
    default) flattens images up to 14 pixels wide."""
    from tensorforge.graph.passes.layout_flat import flat_pixels_on
    from tensorforge.target import Target

    d = te.placeholder((1, 2, 7, 7, 8), name="d")
    for kh, stride, pad in [(1, 2, 0), (1, 1, 1), (3, 1, 1)]:
        k = te.placeholder((2, 2, kh, kh, 8, 8), name="k")
        assert conv2d_nchwc(d, k, stride, pad, flat_pixels=True).op.tag == "conv2d_nchwc"
    on, off, auto = (Target.coerce(f"llvm -num-threads=1 -conv1x1-flat={x}")
                     for x in ("on", "off", "auto"))
    one = {"strides": (1, 1), "pads": (0, 0, 0, 0), "dilations": (1, 1)}
    assert flat_pixels_on(on, 1, 1, 56, one) and not flat_pixels_on(off, 1, 1, 7, one)
    assert flat_pixels_on(auto, 1, 1, 14, one) and not flat_pixels_on(auto, 1, 1, 28, one)
    assert Target.coerce("llvm -num-threads=1").options["conv1x1-flat"] == "auto"
    assert not flat_pixels_on(on, 1, 1, 7, {**one, "strides": (2, 2)})
    assert not flat_pixels_on(on, 1, 1, 7, {**one, "pads": (0, 0, 1, 1)})
    assert not flat_pixels_on(on, 3, 3, 7, one)


def test_flat_tiles_where_they_hold_more_useful_accumulators(llvm_target) -> None:
    """`prefer_flat`: RegNetX-400MF's 400->400 on 7x7 in 16-channel blocks (7 pixels x 1
    block on rows, 5 x 5 flat) tiles the flat axis; MobileNetV2's 576->160 (2 rows x 7 x 2
    blocks on rows) and ResNet-50's 32-channel 2048->512 keep the row tiles; a flat conv
    whose tiles stay on rows takes the row tile space and loop order (`pixel_extents`)."""
    from tensorforge.target import Target
    from tensorforge_llvm.conv1x1 import pixel_extents, prefer_flat

    assert prefer_flat(7, 7, 25, 1, 32)
    assert not prefer_flat(7, 7, 10, 1, 32) and not prefer_flat(7, 7, 16, 2, 32)
    auto, on = (Target.coerce(f"{AVX512} -conv1x1-flat={x}") for x in ("auto", "on"))
    for o, want in [(400, (1, 49)), (160, (7, 7))]:
        d = te.placeholder((1, 36, 7, 7, 16), name="d")
        k = te.placeholder((o // 16, 36, 1, 1, 16, 16), name="k")
        y = conv2d_nchwc(d, k, 1, 0, flat_pixels=True)
        conv = y.op.input_tensors[0]
        s = te.create_schedule([y.op])
        assert pixel_extents(s[y], s[conv], auto) == want
        assert pixel_extents(s[y], s[conv], on) == (1, 49)


def test_flat_tile_accumulates_its_own_pixels_only(llvm_target) -> None:
    """Bound inference through the fused (row, column) axis: the 5-pixel x 5-block tile of
    RegNetX-400MF's 400->400 7x7 conv holds 25 vectors of accumulators, not whole rows
    (before `bound._through_fused`: 56 pixels x 5 blocks, 16x slower)."""
    from tensorforge.target import Target

    target = Target.coerce(f"{AVX512} -conv1x1=gemm")
    d = te.placeholder((1, 25, 7, 7, 16), name="d")
    k = te.placeholder((25, 25, 1, 1, 16, 16), name="k")
    y = conv2d_nchwc(d, k, 1, 0, flat_pixels=True)
    cfg = FallbackConfig(target)
    s = schedule_conv2d_nchwc([y], target, cfg)
    assert cfg["gemm_tile_ow"].size[1] == 5 and cfg["tile_oc"].size[1] == 5
    text = str(tensorforge.lower(s, [d, k, y]))
    assert "allocate((400), float32, 'local')" in text, text[:2000]
