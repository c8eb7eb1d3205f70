"""Channels padded to whole vector blocks (`graph/passes/layout_padding.py`): ShuffleNetV2's
58/116-channel units (1x1 conv, depthwise conv, concat, channel shuffle, channel slices), an
SE-like elementwise product, a residual add and the classifier, against the reference
interpreter (numpy), padded and with `-pad-channels=off`."""

from __future__ import annotations

import numpy as np
import pytest

import tensorforge
from tensorforge.graph import Graph, run_reference
from tensorforge.graph.passes import optimize

RNG = np.random.default_rng(3)


def _w(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype("float32")


def _conv(g: Graph, x, o: int, k: int = 1, stride: int = 1, groups: int = 1, relu=True):
    c = x.shape[1]
    y = g.add("conv2d", x, g.add_const(f"w{len(g.nodes)}", _w(o, c // groups, k, k)),
              g.add_const(f"b{len(g.nodes)}", _w(o)), strides=(stride, stride),
              pads=(k // 2,) * 4, dilations=(1, 1), groups=groups)
    return g.add("relu", y) if relu else y


def _shuffle(g: Graph, x):
    n, c, h, w = x.shape
    y = g.add("reshape", x, shape=(n, 2, c // 2, h, w))
    y = g.add("transpose", y, perm=(0, 2, 1, 3, 4))
    return g.add("reshape", y, shape=(n, c, h, w))


def _half(g: Graph, x, which: int):
    n, c, h, w = x.shape
    return g.add("strided_slice", x, begin=(0, which * c // 2, 0, 0), step=(1, 1, 1, 1),
                 size=(n, c // 2, h, w))


def shufflenet_units(c: int = 58, hw: int = 12) -> tuple[Graph, dict[str, np.ndarray]]:
    """stem (32 channels) -> a downsampling unit to 2c -> a unit -> an SE-like gate and a
    residual add on one branch -> c 1x1 -> pool -> dense."""
    g = Graph()
    x = g.add_input("x", (1, 32, hw, hw), "float32")
    b1 = _conv(g, _conv(g, x, 32, 3, 2, groups=32, relu=False), c)
    b2 = _conv(g, _conv(g, _conv(g, x, c), c, 3, 2, groups=c, relu=False), c)
    y = _shuffle(g, g.add("concat", b1, b2, axis=1))
    keep, go = _half(g, y, 0), _half(g, y, 1)
    br = _conv(g, _conv(g, _conv(g, go, c), c, 3, 1, groups=c, relu=False), c)
    gate = g.add("sigmoid", br)
    br = g.add("add", g.add("mul", br, gate), go)
    y = _shuffle(g, g.add("concat", keep, br, axis=1))
    y = _conv(g, y, 2 * c + 16)
    y = g.add("global_avg_pool2d", y)
    y = g.add("reshape", y, shape=(1, 2 * c + 16))
    y = g.add("dense", y, g.add_const("wd", _w(10, 2 * c + 16)), g.add_const("bd", _w(10)))
    g.outputs = [y]
    return g, {"x": RNG.standard_normal((1, 32, hw, hw)).astype("float32")}


@pytest.mark.parametrize("c,hw", [(58, 12), (116, 7), (20, 5)])
@pytest.mark.parametrize("pad", ["auto", "off"])
def test_padded_shufflenet_units_match_numpy(llvm_target, c: int, hw: int, pad: str) -> None:
    g, inputs = shufflenet_units(c, hw)
    ref = run_reference(g, inputs)[0]
    cm = tensorforge.compile(g, target=f"{llvm_target} -num-threads=1 -pad-channels={pad}")
    np.testing.assert_allclose(cm.run(inputs)[0], ref, rtol=1e-4, atol=1e-5)


def test_narrow_channels_become_whole_vectors(llvm_target) -> None:
    """58 channels (no block divides them) and 116 (blocks of 4 on 16 lanes) run in blocks
    of one vector with the padding carried through concat, shuffle and slices: no layout transform
    but the network input's and the flatten's; off, the 58-channel layers stay NCHW."""
    from tensorforge.graph.passes.layout_nchwc import count_layout_transforms
    from tensorforge.ops.schedule_generic import vector_lanes
    from tensorforge.target import Target

    target = Target.coerce(f"{llvm_target} -num-threads=1")
    lanes = vector_lanes(target, "float32")
    for c in (58, 116):
        g, _ = shufflenet_units(c, 12)
        opt = optimize(g, target)
        blocks = {n.outputs[0].shape[-1] for n in opt.nodes
                  if n.op in ("conv2d_nchwc", "depthwise_conv2d_nchwc")}
        shuffles = [n for n in opt.nodes if n.op == "channel_shuffle"]
        if lanes >= 8:  # 58 -> 64 and 116 -> 128 slots (under 1/8 more)
            # whole vectors; the 32-channel stem may take 2-vector blocks (AVX2: 16)
            assert lanes in blocks and all(b % lanes == 0 for b in blocks), blocks
            assert all(n.attrs.get("padded") == (c, -(-c // lanes) * lanes) for n in shuffles)
            assert count_layout_transforms(opt) == 2
        off = optimize(g, Target.coerce(f"{llvm_target} -pad-channels=off"))
        assert not any(n.attrs.get("padded") for n in off.nodes if n.op == "channel_shuffle")


def test_padded_channel_shuffle_op_matches_numpy(llvm_target) -> None:
    """`channel_shuffle` with `padded`: its compute == its numpy reference, zeros in the
    padding slots."""
    from tensorforge import te
    from tensorforge.graph.registry import get_op
    from tensorforge.target import Target

    real, slots, b = 6, 8, 4
    x = RNG.standard_normal((1, 2 * slots // b, 3, 5, b)).astype("float32")
    at = {"groups": 2, "padded": (real, slots)}
    ref = get_op("channel_shuffle").reference([x], at)[0]
    xt = te.placeholder(x.shape, name="x")
    y = get_op("channel_shuffle").compute([xt], at, [(x.shape, "float32")])[0]
    s = te.create_schedule(y.op)
    f = tensorforge.build(s, [xt, y], target=Target.coerce(f"{llvm_target}"))
    out = np.full(x.shape, np.nan, "float32")
    f(x, out)
    np.testing.assert_array_equal(out, ref)
    plain = ref.transpose(0, 1, 4, 2, 3).reshape(1, 2 * slots, 3, 5)
    assert not plain[:, real:slots].any() and not plain[:, slots + real:].any()
    logical = x.transpose(0, 1, 4, 2, 3).reshape(1, 2, slots, 3, 5)[:, :, :real]
    expect = logical.transpose(0, 2, 1, 3, 4).reshape(1, 2, real, 3, 5)
    np.testing.assert_array_equal(plain.reshape(1, 2, slots, 3, 5)[:, :, :real], expect)


@pytest.mark.parametrize("pad", ["auto", "off"])
def test_padded_concat_leaves_as_its_logical_channels(llvm_target, pad: str) -> None:
    """A concat of two padded parts read by an op without a padded form (a graph output, a
    reshape): one transform of all slots, then each part's channels."""
    g = Graph()
    x = g.add_input("x", (1, 32, 6, 6), "float32")
    y = g.add("concat", _conv(g, x, 58), _conv(g, x, 58, 3), axis=1)
    g.outputs = [y, g.add("reshape", _shuffle(g, y), shape=(1, 116 * 36))]
    inputs = {"x": RNG.standard_normal((1, 32, 6, 6)).astype("float32")}
    ref = run_reference(g, inputs)
    cm = tensorforge.compile(g, target=f"{llvm_target} -num-threads=1 -pad-channels={pad}")
    for out, r in zip(cm.run(inputs), ref):
        np.testing.assert_allclose(out, r, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("unroll", [True, False])
@pytest.mark.parametrize("shape,padded", [((1, 8, 5, 3, 16), (58, 64)),
                                          ((1, 6, 4, 4, 4), None), ((1, 12, 3, 2), None)])
def test_channel_shuffle_strategy_matches_numpy(llvm_target, shape, padded, unroll) -> None:
    """The shuffle's schedule (pixels outer, blocks unrolled) under both knob settings, padded
    or not, blocked or NCHW; models run it (`channel_shuffle/lanes`)."""
    from tensorforge import te
    from tensorforge.autotune.space import ConfigSpace
    from tensorforge.graph.registry import get_op
    from tensorforge.target import Target
    from tensorforge_llvm.shuffle import schedule_channel_shuffle

    target = Target.coerce(f"{llvm_target} -num-threads=2")
    x = RNG.standard_normal(shape).astype("float32")
    at = {"groups": 2, **({"padded": padded} if padded else {})}
    ref = get_op("channel_shuffle").reference([x], at)[0]
    xt = te.placeholder(shape, name="x")
    y = get_op("channel_shuffle").compute([xt], at, [(shape, "float32")])[0]
    space = ConfigSpace(target)
    schedule_channel_shuffle([y], target, space)
    cfg = next((space.get(i) for i in range(len(space))
                if space.get(i)["unroll_blocks"].val == unroll), None)
    if cfg is None:
        pytest.skip("the knob has one setting here")
    f = tensorforge.build(schedule_channel_shuffle([y], target, cfg), [xt, y], target=target)
    out = np.full(shape, np.nan, "float32")
    f(x, out)
    np.testing.assert_array_equal(out, ref)


def test_models_use_the_shuffle_strategy(llvm_target) -> None:
    g, _ = shufflenet_units(58, 12)
    cm = tensorforge.compile(g, target=f"{llvm_target} -num-threads=1")
    kinds = {k["schedule"] for k in cm.desc["kernels"] if k["master"] == "channel_shuffle"}
    assert kinds == {"strategy channel_shuffle/lanes"}, kinds
