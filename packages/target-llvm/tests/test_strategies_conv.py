"""The llvm strategies and the NCHW[x]c layout pass against the numpy reference, on awkward
shapes: odd channel counts (3, 5, 17), asymmetric padding, stride 2, register tiles that do
not divide the width, both layouts (blocked where the channels allow, NCHW otherwise)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorforge
from tensorforge.graph import Graph, run_reference
from tensorforge.graph.passes import optimize
from tensorforge.graph.passes.layout_nchwc import count_layout_transforms

RNG = np.random.default_rng(0)
_TEMPLATED = {"conv2d_nchwc", "depthwise_conv2d_nchwc", "dense_packed"}


def _w(*shape: int) -> np.ndarray:
    return (RNG.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype("float32")


def _check(g: Graph, target, inputs: dict[str, np.ndarray], expect_ops: dict | None = None,
           rtol: float = 1e-4, atol: float = 1e-5) -> tensorforge.compiler.compile.Plan:
    ref = run_reference(g, inputs)
    cm = tensorforge.compile(g, target=target)
    outs = cm.run(inputs)
    for o, r in zip(outs, ref):
        np.testing.assert_allclose(o, r, rtol=rtol, atol=atol)
    for kern in cm.desc["kernels"]:
        if kern["master"] in _TEMPLATED:
            assert kern["schedule"].startswith("strategy"), kern
    opt = optimize(g, target)
    for op, n in (expect_ops or {}).items():
        assert opt.op_counts().get(op, 0) == n, opt.op_counts()
    return cm


def _conv_graph(c: int, o: int, h: int, w: int, k: tuple[int, int], stride: int,
                pads: tuple[int, int, int, int], epilogue: str = "relu",
                groups: int = 1) -> tuple[Graph, dict[str, np.ndarray]]:
    g = Graph()
    x = g.add_input("x", (1, c, h, w), "float32")
    wt = g.add_const("w", _w(o, c // groups, *k))
    b = g.add_const("b", _w(o))
    y = g.add("conv2d", x, wt, b, strides=(stride, stride), pads=pads, dilations=(1, 1),
              groups=groups)
    if epilogue in ("relu", "add_relu"):
        if epilogue == "add_relu":
            y = g.add("add", y, g.add("relu", y))
        y = g.add("relu", y)
    elif epilogue == "bn_clip":
        y = g.add("mul", y, g.add_const("s", _w(o, 1, 1)))
        y = g.add("add", y, g.add_const("t", _w(o, 1, 1)))
        y = g.add("clip", y, min=0.0, max=6.0)
    g.outputs = [y]
    return g, {"x": RNG.standard_normal((1, c, h, w)).astype("float32")}


@pytest.mark.parametrize("c,o,hw,k,stride,pads,epi", [
    (3, 16, (13, 11), (3, 3), 1, (1, 0, 2, 1), "relu"),       # RGB-like input, asymmetric pads
    (5, 32, (9, 10), (3, 3), 2, (1, 1, 1, 1), "bn_clip"),     # odd C, stride 2
    (17, 48, (7, 19), (1, 1), 1, (0, 0, 0, 0), "add_relu"),   # 1x1 conv, residual add
    (16, 24, (15, 15), (5, 3), 2, (2, 1, 2, 1), "relu"),      # 24 = 3 x 8: block 8
    (8, 64, (6, 23), (3, 3), 1, (1, 1, 1, 1), "relu"),        # OW 23 prime: guarded tile
])
def test_conv2d_nchwc_direct(llvm_target, c, o, hw, k, stride, pads, epi) -> None:
    g, inputs = _conv_graph(c, o, *hw, k, stride, pads, epi)
    _check(g, llvm_target, inputs, {"conv2d_nchwc": 1, "conv2d": 0})


@pytest.mark.parametrize("o", [5, 17])
def test_odd_output_channels_stay_nchw(llvm_target, o: int) -> None:
    g, inputs = _conv_graph(6, o, 9, 8, (3, 3), 1, (1, 1, 1, 1))
    _check(g, llvm_target, inputs, {"conv2d_nchwc": 0, "conv2d": 1, "layout_transform": 0})


@pytest.mark.parametrize("c,hw,stride,pads", [(32, (14, 13), 1, (1, 1, 1, 1)),
                                              (24, (9, 9), 2, (0, 1, 1, 0))])
def test_depthwise_nchwc(llvm_target, c, hw, stride, pads) -> None:
    g, inputs = _conv_graph(c, c, *hw, (3, 3), stride, pads, "bn_clip", groups=c)
    _check(g, llvm_target, inputs, {"depthwise_conv2d_nchwc": 1})


def test_layout_pass_keeps_blocked_chain(llvm_target) -> None:
    """conv -> relu -> conv -> residual add -> pools -> flatten -> dense: two transforms
    remain (into the blocked region at the input, out of it before the flatten)."""
    g = Graph()
    x = g.add_input("x", (1, 3, 20, 18), "float32")
    y = g.add("relu", g.add("conv2d", x, g.add_const("w0", _w(32, 3, 3, 3)), strides=(2, 2),
                            pads=(1, 1, 1, 1)))
    z = g.add("conv2d", y, g.add_const("w1", _w(32, 32, 3, 3)), g.add_const("b1", _w(32)),
              pads=(1, 1, 1, 1))
    y = g.add("relu", g.add("add", z, y))
    y = g.add("max_pool2d", y, kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))
    y = g.add("avg_pool2d", y, kernel=(2, 2), strides=(1, 1))
    y = g.add("global_avg_pool2d", y)
    y = g.add("reshape", y, shape=(1, 32))
    y = g.add("dense", y, g.add_const("wd", _w(48, 32)), g.add_const("bd", _w(48)))
    g.outputs = [y]
    inputs = {"x": RNG.standard_normal((1, 3, 20, 18)).astype("float32")}
    # the 32 -> 32 3x3 stride-1 conv is a Winograd one under the default rule (winograd.py)
    _check(g, llvm_target, inputs, {"conv2d_nchwc": 1, "conv2d_winograd_nchwc": 1,
                                    "max_pool2d_nchwc": 1,
                                    "avg_pool2d_nchwc": 1, "global_avg_pool2d_nchwc": 1,
                                    "dense_packed": 1})
    assert count_layout_transforms(optimize(g, llvm_target)) == 2


@pytest.mark.parametrize("e1,e3", [(32, 32), (16, 48), (24, 20)])
def test_fire_concat_stays_blocked(llvm_target, e1: int, e3: int) -> None:
    """SqueezeNet's fire module: squeeze 1x1 -> expand 1x1 and 3x3 -> channel concat -> max
    pool. A concat whose inputs' channel counts a block divides (2, 1 or 1/2 vector, at least
    4 channels: 24 and 20 in blocks of 4 on AVX2, none on AVX-512) runs in NCHW[x]c (no
    transforms around it, the pool blocked); otherwise it falls back to NCHW."""
    from tensorforge_llvm.strategies import _lanes

    lanes = _lanes(llvm_target)
    blocked = any(b >= 4 and e1 % b == 0 and e3 % b == 0 for b in (2 * lanes, lanes, lanes // 2))
    g = Graph()
    x = g.add_input("x", (1, 16, 15, 15), "float32")
    s = g.add("relu", g.add("conv2d", x, g.add_const("ws", _w(16, 16, 1, 1))))
    a = g.add("relu", g.add("conv2d", s, g.add_const("w1", _w(e1, 16, 1, 1)),
                            g.add_const("b1", _w(e1))))
    b = g.add("relu", g.add("conv2d", s, g.add_const("w3", _w(e3, 16, 3, 3)),
                            g.add_const("b3", _w(e3)), pads=(1, 1, 1, 1)))
    y = g.add("concat", a, b, axis=1)
    y = g.add("max_pool2d", y, kernel=(3, 3), strides=(2, 2), pads=(0, 0, 1, 1))
    g.outputs = [y]
    inputs = {"x": RNG.standard_normal((1, 16, 15, 15)).astype("float32")}
    _check(g, llvm_target, inputs, {"max_pool2d_nchwc": int(blocked),
                                    "max_pool2d": int(not blocked)})
    n = count_layout_transforms(optimize(g, llvm_target))
    assert (n == 2) if blocked else (n > 2)


@pytest.mark.parametrize("c,o,h,k,s,p", [(6, 8, 4, 4, 2, 1), (4, 16, 1, 4, 1, 0),
                                         (5, 3, 5, 3, 2, 1), (8, 16, 3, 5, 3, 2)])
def test_conv_transpose_as_subpixel_conv(llvm_target, c, o, h, k, s, p) -> None:
    """Rewritten when every phase has k / s taps; with k % s != 0 the re-arranged kernel
    would hold zeros that are not in the model (0 * inf = NaN would reach outputs a
    non-finite input does not touch), so the transposed convolution stays."""
    g = Graph()
    x = g.add_input("x", (1, c, h, h), "float32")
    y = g.add("conv2d_transpose", x, g.add_const("w", _w(c, o, k, k)), g.add_const("b", _w(o)),
              strides=(s, s), pads=(p, p, p, p))
    g.outputs = [g.add("relu", y)]
    _check(g, llvm_target, {"x": RNG.standard_normal((1, c, h, h)).astype("float32")},
           {"conv2d_transpose": int(k % s != 0)})


@pytest.mark.parametrize("m,k,n", [(1, 37, 64), (35, 40, 48), (3, 16, 1000), (2, 8, 18)])
def test_dense_packed(llvm_target, m, k, n) -> None:
    g = Graph()
    x = g.add_input("x", (m, k), "float32")
    y = g.add("dense", x, g.add_const("w", _w(n, k)), g.add_const("b", _w(n)))
    g.outputs = [g.add("tanh", y)]
    # 18 columns: no vector block divides them, the last panel is zero-padded (issue 15)
    _check(g, llvm_target, {"x": RNG.standard_normal((m, k)).astype("float32")},
           {"dense_packed": 1})


def test_dense_padded_last_panel_has_no_guard_in_the_main_tiles(llvm_target) -> None:
    """205 columns in panels of 16: the row tiles stay apart from the panels, so loop
    partition peels the last (zero-padded) panel and no tile tests its columns (fused, every
    tile's reduction held the test: GPT-2's 50257-column LM head ran 6x slower)."""
    from tensorforge import te
    from tensorforge.ops import nn_blocked
    from tensorforge.target import Target
    from tensorforge_llvm import strategies

    a = te.placeholder((64, 16), name="a")
    wp = te.placeholder((13, 16, 16), name="w")
    out = nn_blocked.dense_packed(a, wp, units=205)
    s = strategies.schedule_dense_packed([out], Target.coerce("llvm -num-threads=1"))
    text = str(tensorforge.lower(s, [a, wp, out]))
    assert "likely" not in text and "if " not in text
    f = tensorforge.build(s, [a, wp, out], target=Target.coerce("llvm -num-threads=1"))
    av = RNG.standard_normal((64, 16)).astype("float32")
    w = RNG.standard_normal((208, 16)).astype("float32")
    got = np.zeros((64, 205), "float32")
    f(av, np.ascontiguousarray(w.reshape(13, 16, 16).transpose(0, 2, 1)), got)
    np.testing.assert_allclose(got, av @ w[:205].T, rtol=1e-5, atol=1e-4)


def test_wide_ragged_dense_packs_full_vectors_in_a_panel_count_that_tiles(llvm_target) -> None:
    """A dense of many columns no block divides (GPT-2's LM head: 50257) packs full-vector
    panels, padded to a multiple of `RAGGED_PANEL_ROUND`, so its register tile takes several
    panels (65 panels would allow 1 or 5; 72 allow 8); columns past N are never stored."""
    from tensorforge.graph.passes.layout_nchwc import RAGGED_PANEL_ROUND, ragged_dense_block
    from tensorforge_llvm.strategies import _dense_tile, _lanes, register_file

    lanes = _lanes(llvm_target)
    b = ragged_dense_block(64 * lanes + 1, lanes)
    assert b == lanes and ragged_dense_block(10, lanes) == max(4, lanes // 2)
    units, k, m = 64 * lanes + 1, 24, 40
    g = Graph()
    x = g.add_input("x", (m, k), "float32")
    g.outputs = [g.add("relu", g.add("dense", x, g.add_const("w", _w(units, k))))]
    cm = _check(g, llvm_target, {"x": RNG.standard_normal((m, k)).astype("float32")},
                {"dense_packed": 1})
    (wp,) = [a for a in cm.params.values() if a.ndim == 3]
    assert wp.shape == (72, k, b) and 72 % RAGGED_PANEL_ROUND == 0
    assert not wp[-7:].any()  # whole zero panels past the 65 the columns need
    # several panels per tile (65 panels: 1 with 16 registers, 72: 2; with 32, 3)
    assert _dense_tile(m, 72, 1, register_file(llvm_target))[1] >= (
        3 if register_file(llvm_target) >= 32 else 2)


@pytest.mark.parametrize("which", ["conv", "depthwise", "dense"])
def test_every_knob_setting_is_correct(llvm_target, which: str) -> None:
    """The templates under non-default configs (what the tuner of issue 6 will try)."""
    from tensorforge import te
    from tensorforge.autotune.space import ConfigSpace
    from tensorforge.graph.ops.nchwc import np_layout_transform
    from tensorforge.ops import nn_blocked, pack_nchwc
    from tensorforge.ops.nn_nchwc import conv2d_nchwc
    from tensorforge_llvm import strategies

    if which == "dense":
        a = te.placeholder((5, 24), name="a")
        wp = te.placeholder((3, 24, 16), name="w")
        out = nn_blocked.dense_packed(a, wp)
        sched = strategies.schedule_dense_packed
        av, wv = RNG.standard_normal((5, 24)), RNG.standard_normal((48, 24))
        args = [av.astype("float32"), np_layout_transform(wv.astype("float32"), "NK", "NK16n")]
        ref = av @ wv.T
    else:
        dw = which == "depthwise"
        c, o = (16, 16) if dw else (6, 32)
        ib = 16 if dw else 3
        x = te.placeholder((1, c // ib, 9, 11, ib), name="x")
        kshape = (1, 1, 3, 3, 1, 16) if dw else (1, 2, 3, 3, 3, 32)
        w = te.placeholder(kshape, name="w")
        if dw:
            out = nn_blocked.depthwise_conv2d_nchwc(x, w, 1, (1, 0, 1, 2))
            sched = strategies.schedule_depthwise_nchwc
        else:
            out = conv2d_nchwc(x, w, 2, (1, 0, 1, 2))
            sched = strategies.schedule_conv2d_nchwc
        out = te.compute(out.shape, lambda *i: te.max_expr(out[i], 0.0), name="relu")
        xv = RNG.standard_normal((1, c, 9, 11)).astype("float32")
        wv = RNG.standard_normal((o, 1 if dw else c, 3, 3)).astype("float32")
        from tensorforge.ops import reference as r
        ref = np.maximum(r.conv2d_nchw(xv, wv, 1 if dw else 2, (1, 0, 1, 2),
                                       groups=c if dw else 1), 0)
        ref = pack_nchwc(ref, 16 if dw else 32)
        lay = f"OIHW{1 if dw else ib}i{16 if dw else 32}o"
        args = [pack_nchwc(xv, ib), np_layout_transform(wv, "OIHW", lay)]
    space = ConfigSpace(llvm_target)
    sched([out], llvm_target, space)
    assert len(space) > 1
    for index in sorted({0, len(space) - 1, len(space) // 2, space.default_index}):
        cfg = space.get(index)
        s = sched([out], llvm_target, cfg)
        f = tensorforge.build(s, [*(t for t in _inputs_of(out)), out], target=llvm_target)
        res = np.zeros([int(d.value) for d in out.shape], "float32")
        f(*args, res)
        np.testing.assert_allclose(res, ref, rtol=1e-4, atol=1e-4, err_msg=str(cfg))


def _inputs_of(out):
    """Placeholders of `out`, in the order they were declared (data, weight)."""
    from tensorforge.te.tensor import PlaceholderOp

    seen, todo, found = set(), [out], []
    while todo:
        t = todo.pop()
        if id(t.op) in seen:
            continue
        seen.add(id(t.op))
        if isinstance(t.op, PlaceholderOp):
            found.append(t)
        else:
            todo.extend(t.op.input_tensors)
    return sorted(found, key=lambda t: 0 if t.op.name in ("x", "a") else 1)
