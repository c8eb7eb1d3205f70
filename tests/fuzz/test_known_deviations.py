"""Each known deviation of the reference (`harness.KNOWN_ISSUES`) shown on the case that
found it: ours equals the ONNX formula (onnx.reference, or numpy on ONNX Runtime's own
intermediate value) and ONNX Runtime differs. If ORT changes or we do, these fail and the
entry must go."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import plan_of  # noqa: E402
from mutate_onnx import apply_plan  # noqa: E402

ort = pytest.importorskip("onnxruntime")
tensorforge = pytest.importorskip("tensorforge")
pytest.importorskip("tensorforge_onnx")
from onnx.reference import ReferenceEvaluator  # noqa: E402


def _case(seed: int, batch: int | None = None) -> onnx.ModelProto:
    m = onnx.load_from_string(apply_plan(plan_of("onnx", seed)))
    if batch is not None:  # the case's 100000-long batch, made small for the reference
        m.graph.input[0].type.tensor_type.shape.dim[1].dim_value = batch
    return m


def _feeds(m: onnx.ModelProto) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim])
            .astype("float32") for i in m.graph.input}


def _with_output(m: onnx.ModelProto, name: str) -> onnx.ModelProto:
    m = onnx.ModelProto.FromString(m.SerializeToString())
    m.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    return m


def _ours(m: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return tensorforge.compile(m, target="llvm -num-threads=1").run(feeds)


def _ort(m: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return ort.InferenceSession(m.SerializeToString()).run(None, feeds)


@pytest.mark.parametrize("seed, batch", [(7178, None), (4726, 50)])
def test_ours_is_onnx_reference_where_ort_differs(installed_plugins, seed, batch) -> None:
    # 7178: InstanceNormalization with scale -inf; 4726: a GRU with recurrent weights 1e30
    m = _case(seed, batch)
    feeds = _feeds(m)
    with np.errstate(all="ignore"):
        ref = ReferenceEvaluator(m).run(None, feeds)[0]
    ours, theirs = _ours(m, feeds)[0], _ort(m, feeds)[0]
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)
    assert not np.allclose(theirs, ref, rtol=1e-4, atol=1e-5, equal_nan=True)


def test_reduce_max_propagates_nan_where_ort_skips_it(installed_plugins) -> None:
    m = _with_output(_case(4532), "pd")  # pd: ReduceMax's input, NaN at 36 places
    feeds = _feeds(m)
    y_ort, pd = _ort(m, feeds)
    y_ours = _ours(m, feeds)[0]
    want = np.max(pd, axis=1, keepdims=True)  # numpy's max propagates NaN
    assert np.isnan(want).any() and not np.isnan(y_ort).any()
    np.testing.assert_array_equal(y_ours, want)
