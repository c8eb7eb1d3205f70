"""Test helpers (used by this package's tests and the conformance suite): build a one-graph ONNX
model with onnx.helper, import it, run it with the reference interpreter and compare with
onnxruntime (imported lazily; it is a test dependency only)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from tensorforge.graph import Graph, run_reference
from tensorforge_onnx import load

RNG = np.random.default_rng(0)
_TYPES = {"float32": TensorProto.FLOAT, "int64": TensorProto.INT64, "bool": TensorProto.BOOL,
          "int32": TensorProto.INT32, "float64": TensorProto.DOUBLE, "uint8": TensorProto.UINT8,
          "int8": TensorProto.INT8, "int16": TensorProto.INT16, "uint16": TensorProto.UINT16,
          "float16": TensorProto.FLOAT16}


def rand(*shape: int, dtype: str = "float32", lo: float = -2.0, hi: float = 2.0
         ) -> np.ndarray:
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


def vi(name: str, arr_or_shape: Any, dtype: str = "float32") -> onnx.ValueInfoProto:
    if isinstance(arr_or_shape, np.ndarray):
        return helper.make_tensor_value_info(name, _TYPES[str(arr_or_shape.dtype)],
                                             arr_or_shape.shape)
    return helper.make_tensor_value_info(name, _TYPES[dtype], arr_or_shape)


def model(nodes: list[onnx.NodeProto], inputs: dict[str, np.ndarray],
          outputs: list[str] | dict[str, Any], inits: dict[str, np.ndarray] | None = None,
          opset: int = 17) -> onnx.ModelProto:
    """A model over `nodes`; output types are left for shape inference to fill."""
    outs = [helper.make_value_info(o, onnx.TypeProto()) for o in outputs]
    g = helper.make_graph(nodes, "test", [vi(k, v) for k, v in inputs.items()], outs,
                          [numpy_helper.from_array(v, k) for k, v in (inits or {}).items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8 if opset <= 17 else 10
    return onnx.shape_inference.infer_shapes(m)


def ort_run(m: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def quantize_qdq(m: onnx.ModelProto, calibration: list[dict[str, np.ndarray]],
                 **options: Any) -> onnx.ModelProto:
    """`m` quantized by onnxruntime's `quantize_static` in QDQ format (int8 activations and
    weights unless `options` say otherwise: `per_channel=True`, `activation_type=...`),
    calibrated on the given feeds."""
    import tempfile
    from pathlib import Path

    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter(calibration)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.it, None)

    with tempfile.TemporaryDirectory() as d:
        src, dst = Path(d) / "float.onnx", Path(d) / "qdq.onnx"
        onnx.save(m, str(src))
        quantize_static(str(src), str(dst), Reader(), quant_format=QuantFormat.QDQ, **options)
        return onnx.load(str(dst))


def check(m: onnx.ModelProto, feeds: dict[str, np.ndarray], rtol: float = 1e-5,
          atol: float = 1e-5, **load_kw: Any) -> Graph:
    """Import `m`, run it with run_reference and compare every output with onnxruntime."""
    g = load(m, **load_kw)
    got = run_reference(g, {v.name: feeds[v.name] for v in g.inputs})
    want = ort_run(m, feeds)
    assert [v.name for v in g.outputs] == [o.name for o in m.graph.output]
    for o, a, b in zip(m.graph.output, got, want):
        assert a.shape == b.shape, f"{o.name}: shape {a.shape} vs onnxruntime {b.shape}"
        assert a.dtype == b.dtype, f"{o.name}: dtype {a.dtype} vs onnxruntime {b.dtype}"
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=o.name)
    return g


def node(op: str, ins: list[str], outs: list[str], **attrs: Any) -> onnx.NodeProto:
    return helper.make_node(op, ins, outs, name=f"{op.lower()}_node", **attrs)


def single(op: str, feeds: dict[str, np.ndarray], inits: dict[str, np.ndarray] | None = None,
           opset: int = 17, n_out: int = 1, extra_inputs: list[str] | None = None,
           rtol: float = 1e-5, atol: float = 1e-5, **attrs: Any) -> Graph:
    """One op over feeds (+ initializers, in that order unless extra_inputs is given)."""
    names = extra_inputs or [*feeds, *(inits or {})]
    outs = [f"y{i}" for i in range(n_out)]
    m = model([node(op, names, outs, **attrs)], feeds, outs, inits, opset)
    return check(m, feeds, rtol=rtol, atol=atol)
