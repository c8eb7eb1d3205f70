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
