"""Fused groups with the same workload share one compiled kernel."""

import numpy as np

import tensorforge
from tensorforge.graph import Graph, run_reference


def _chain(n_blocks: int) -> Graph:
    rng = np.random.default_rng(0)
    g = Graph("chain")
    x = g.add_input("x", (4, 16), "float32")
    h = x
    for i in range(n_blocks):
        w = g.add_const(f"w{i}", rng.standard_normal((16, 16)).astype("float32") * 0.25)
        b = g.add_const(f"b{i}", rng.standard_normal(16).astype("float32"))
        h = g.add("tanh", g.add("dense", h, w, b))
    g.outputs = [h]
    return g


def test_equal_groups_share_a_kernel(llvm_target):
    g = _chain(5)
    model = tensorforge.compile(g, target=llvm_target)
    kernels = model.desc["kernels"]
    assert len(kernels) == 5
    assert len({k["name"] for k in kernels}) == 1  # one function, five calls
    assert len({k["group"] for k in kernels}) == 5
    x = np.random.default_rng(1).standard_normal((4, 16)).astype("float32")
    (got,) = model.run({"x": x})
    (want,) = run_reference(g, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_shared_kernels_survive_export(llvm_target, tmp_path):
    g = _chain(3)
    model = tensorforge.compile(g, target=llvm_target)
    path = tmp_path / "chain.tfpkg"
    model.export(path)
    x = np.ones((4, 16), "float32")
    np.testing.assert_array_equal(tensorforge.load(path).run({"x": x})[0],
                                  model.run({"x": x})[0])


def test_a_shared_weight_is_packed_once_and_profiled(llvm_target):
    """Three dense nodes reading one weight (an unrolled RNN's recurrent matrix): the layout
    pass packs it per node, CSE merges the packings, one constant is left."""
    rng = np.random.default_rng(0)
    g = Graph("shared")
    h = g.add_input("x", (1, 64), "float32")
    w = g.add_const("w", rng.standard_normal((64, 64)).astype("float32") * 0.1)
    for _ in range(3):
        h = g.add("tanh", g.add("dense", h, w))
    g.outputs = [h]
    model = tensorforge.compile(g, target=llvm_target)
    consts = [v for v in model.desc["values"] if v["kind"] == "const"]
    assert len(consts) == 1
    x = rng.standard_normal((1, 64)).astype("float32")
    np.testing.assert_allclose(model.run({"x": x})[0], run_reference(g, {"x": x})[0],
                               rtol=1e-5, atol=1e-5)
    prof = model.profile({"x": x}, repeat=3)
    assert [p["name"] for p in prof] == model.kernels
    assert all(p["median"] >= 0 for p in prof)
    assert abs(sum(p["share"] for p in prof) - 1) < 1e-6


def test_a_trailing_reshape_is_left_to_the_output_copy(llvm_target, tmp_path):
    rng = np.random.default_rng(2)
    g = Graph("tail")
    x = g.add_input("x", (6, 16), "float32")
    w = g.add_const("w", rng.standard_normal((16, 16)).astype("float32"))
    y = g.add("softmax", g.add("dense", x, w), axis=-1)
    g.outputs = [g.add("reshape", y, shape=(6, 1, 16))]
    model = tensorforge.compile(g, target=llvm_target)
    assert model.desc["kernels"][-1]["ops"] == ["reshape"]
    assert model.executor._output_source  # the reshape kernel does not run
    xv = rng.standard_normal((6, 16)).astype("float32")
    want = run_reference(g, {"x": xv})[0]
    for m in (model, tensorforge.load(model.export(tmp_path / "tail.tfpkg"))):
        got = m.run({"x": xv})[0]
        assert got.shape == (6, 1, 16)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
