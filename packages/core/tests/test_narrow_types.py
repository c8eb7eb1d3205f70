"""Narrow types (bfloat16, float8, float4, int4/int2): the numpy encode/decode against
ml_dtypes and onnx, and the generated kernels bit for bit against the numpy references."""

from __future__ import annotations

from typing import Any

import ml_dtypes  # noqa: F401  (registers the narrow numpy dtypes)
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorforge
from tensorforge.graph import Graph, run_reference
from tensorforge.graph.narrow_types import FORMATS, decode_np, encode_np, numpy_dtype

FLOAT8 = ["float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
          "float4_e2m1fn"]


@pytest.mark.parametrize("name", FLOAT8 + ["float8_e8m0fnu"])
def test_decode_every_code_matches_ml_dtypes(name: str) -> None:
    f = FORMATS[name]
    codes = np.arange(16 if name.startswith("float4") else 256, dtype="uint8")
    want = codes.view(numpy_dtype(name)).astype("float32")
    got = decode_np(codes, f)
    np.testing.assert_array_equal(got, want)  # NaNs in the same places


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                                  "float8_e5m2fnuz"])
@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(width=32, allow_nan=True), min_size=1, max_size=64))
def test_encode_saturating_matches_onnx(name: str, values: list[float]) -> None:
    from onnx.numpy_helper import saturate_cast

    x = np.array(values, "float32")
    got = encode_np(x, FORMATS[name], saturate=True)
    want = saturate_cast(x, numpy_dtype(name)).view("uint8")
    nan = np.isnan(x)
    np.testing.assert_array_equal(got[~nan], want[~nan])
    assert np.isnan(decode_np(got[nan], FORMATS[name])).all()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(width=32, allow_nan=False), min_size=1, max_size=64))
def test_bfloat16_rounds_to_nearest_even(values: list[float]) -> None:
    x = np.array(values, "float32")
    got = encode_np(x, FORMATS["bfloat16"])
    np.testing.assert_array_equal(got, x.astype("bfloat16").view("uint16"))


def test_int4_out_of_range_is_zero() -> None:
    x = np.array([-9, -8, -1.5, 0, 6.9, 7, 8], "float32")
    bits = encode_np(x, FORMATS["int4"])
    np.testing.assert_array_equal(decode_np(bits, FORMATS["int4"]), [0, -8, -1, 0, 6, 7, 0])


def _cast_graph(src: str, dst: str, shape: tuple[int, ...], **attrs: Any) -> Graph:
    g = Graph("cast")
    x = g.add_input("x", shape, src)
    g.outputs = [g.add("cast", x, to=dst, **attrs)]
    return g


@pytest.mark.parametrize("name", FLOAT8 + ["bfloat16", "int4", "uint2"])
@pytest.mark.parametrize("saturate", [True, False])
def test_compiled_casts_are_bit_exact(name: str, saturate: bool, llvm_target: Any) -> None:
    """float32 -> narrow -> float32 through generated kernels equals the numpy references,
    including NaN, infinities, overflow, subnormals and ties."""
    rng = np.random.default_rng(0)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e6, -1e6, 1e-7, 2 ** -10, 0.3125,
               448.0, 464.0, 240.0, 57344.0, 61440.0, 6.0, 5.0, 0.25, -3.5, 7.0, -8.0]
    x = np.concatenate([np.array(special, "float32"),
                        rng.standard_normal(43).astype("float32") * 8]).reshape(8, 8)
    enc = _cast_graph("float32", name, x.shape, saturate=saturate)
    cm = tensorforge.compile(enc, target="llvm -num-threads=1")
    got = cm.run({"x": x})[0]
    want = run_reference(enc, {"x": x})[0]
    assert got.dtype == numpy_dtype(name)
    storage = FORMATS[name].storage
    np.testing.assert_array_equal(got.view(storage), want.view(storage))
    dec = _cast_graph(name, "float32", x.shape)
    back = tensorforge.compile(dec, target="llvm -num-threads=1").run({"x": got})[0]
    np.testing.assert_array_equal(back, run_reference(dec, {"x": got})[0])


def test_narrow_values_compute_in_float32(llvm_target: Any) -> None:
    """An add of two bfloat16 tensors: decoded, added in float32, encoded once."""
    g = Graph("add")
    a, b = g.add_input("a", (4, 8), "bfloat16"), g.add_input("b", (4, 8), "bfloat16")
    g.outputs = [g.add("add", g.add("transpose", a, perm=(1, 0)),
                       g.add("transpose", b, perm=(1, 0)))]
    rng = np.random.default_rng(1)
    feeds = {k: rng.standard_normal((4, 8)).astype("bfloat16") for k in "ab"}
    cm = tensorforge.compile(g, target="llvm -num-threads=1")
    ops = {op for k in cm.desc["kernels"] for op in k["ops"]}
    assert {"narrow_decode", "narrow_encode"} <= ops
    want = (feeds["a"].astype("float32") + feeds["b"].astype("float32")).T.astype("bfloat16")
    np.testing.assert_array_equal(cm.run(feeds)[0].view("uint16"), want.view("uint16"))


def test_runtime_knows_every_storage() -> None:
    """The runtime (which imports nothing of the compiler) checks narrow model inputs and
    outputs against the same storage dtypes."""
    from tensorforge.runtime.validate import NARROW_STORAGE

    assert NARROW_STORAGE == {name: f.storage for name, f in FORMATS.items()}


def test_narrow_model_exports_and_loads(llvm_target: Any, tmp_path: Any) -> None:
    g = _cast_graph("float32", "float8_e4m3fn", (2, 3))
    cm = tensorforge.compile(g, target="llvm -num-threads=1")
    x = np.linspace(-500, 500, 6, dtype="float32").reshape(2, 3)
    loaded = tensorforge.load(cm.export(tmp_path / "f8.tfpkg"))
    np.testing.assert_array_equal(loaded.run({"x": x})[0].view("uint8"),
                                  cm.run({"x": x})[0].view("uint8"))


def test_folding_keeps_scalar_shapes() -> None:
    """A folded 0-d constant stays 0-d (np.ascontiguousarray made it (1,), which a compiled
    package's description check rejects)."""
    from tensorforge.graph.passes import fold_constants

    g = Graph("fold")
    x = g.add_input("x", (), "float32")
    c = g.add_const("c", np.array(1.5, "bfloat16"))
    g.outputs = [g.add("add", x, g.add("narrow_decode", c, fmt="bfloat16"))]
    g = fold_constants(g)
    (node,) = g.nodes
    assert node.inputs[1].is_const and node.inputs[1].const.shape == ()
