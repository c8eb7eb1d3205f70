"""An LSTM step as one kernel: the recurrent product (dense_packed, one row) with the gate
split, the nonlinearities and the state update as its multi-output epilogue (`fuse.py`,
`_merge_epilogues`; the strategy materializes the product inside the kernel)."""

from __future__ import annotations

import numpy as np

import tensorforge
from tensorforge.graph import Graph, run_reference

RNG = np.random.default_rng(0)
H = 24


def _cells(steps: int) -> tuple[Graph, dict[str, np.ndarray]]:
    g = Graph()
    xp = g.add_input("xp", (steps, 4 * H), "float32")  # the input projection, all steps
    w = g.add_const("r", (RNG.standard_normal((4 * H, H)) * 0.3).astype("float32"))
    h = g.add_input("h0", (1, H), "float32")
    c = g.add_input("c0", (1, H), "float32")
    outs = []
    for t in range(steps):
        gates = g.add("add", g.add("strided_slice", xp, begin=(t, 0), step=(1, 1),
                                   size=(1, 4 * H)), g.add("dense", h, w))
        i, o, f, z = g.add_node("split", [gates], {"axis": 1, "sizes": (H,) * 4})
        i, o, f = (g.add("sigmoid", v) for v in (i, o, f))
        c = g.add("add", g.add("mul", f, c), g.add("mul", i, g.add("tanh", z)))
        h = g.add("mul", o, g.add("tanh", c))
        outs.append(h)
    g.outputs = [*outs, c]
    inputs = {"xp": RNG.standard_normal((steps, 4 * H)).astype("float32"),
              "h0": RNG.standard_normal((1, H)).astype("float32"),
              "c0": RNG.standard_normal((1, H)).astype("float32")}
    return g, inputs


def test_lstm_step_is_one_kernel(llvm_target) -> None:
    g, inputs = _cells(3)
    cm = tensorforge.compile(g, target=llvm_target)
    kernels = cm.desc["kernels"]
    steps = [k for k in kernels if k["master"] == "dense_packed"]
    assert len(steps) == 3 and len(kernels) == 3, [k["ops"] for k in kernels]
    for k in steps:
        assert {"sigmoid", "tanh", "split"} <= set(k["ops"])
        assert k["schedule"] == "strategy dense_packed/packed"
    for got, want in zip(cm.run(inputs), run_reference(g, inputs)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_many_rows_keep_separate_epilogue(llvm_target) -> None:
    """A product of more than EPILOGUE_MAX_ROWS rows keeps the elementwise-only fusion."""
    g = Graph()
    x = g.add_input("x", (16, H), "float32")
    y = g.add("dense", x, g.add_const("w", RNG.standard_normal((4 * H, H)).astype("float32")))
    a, b = g.add_node("split", [y], {"axis": 1, "sizes": (2 * H, 2 * H)})
    g.outputs = [g.add("mul", g.add("sigmoid", a), b)]
    cm = tensorforge.compile(g, target=llvm_target)
    assert len(cm.desc["kernels"]) == 2
    inputs = {"x": RNG.standard_normal((16, H)).astype("float32")}
    np.testing.assert_allclose(cm.run(inputs)[0], run_reference(g, inputs)[0], rtol=1e-5,
                               atol=1e-5)
