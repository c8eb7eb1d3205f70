"""ONNX backend node cases of the op families added after the GPU path (trig and bit ops,
narrow types, quantization, positions, data-dependent sizes, sampling, signal, einsum,
normalizations, integer Pow, NMS), compiled for `opencl` (host `llvm` for what the device
does not take) and checked by onnx's own runner against the case's expected outputs.

One representative case per family: the whole suite on pocl takes most of an hour (886
sampled cases passed when this file was written); the llvm node suite covers every case."""

from __future__ import annotations

import warnings

import pytest

pytestmark = [pytest.mark.opencl, pytest.mark.slow]
onnx = pytest.importorskip("onnx")

CASES = [
    "acos_example", "bitshift_right_uint8", "bitwise_xor_i16_3d", "bitcast_float32_to_int32",
    "cast_FLOAT_to_BFLOAT16", "quantizelinear", "dequantizelinear", "top_k",
    "cumsum_2d_axis_0", "argmax_default_axis_example", "nonzero_example",
    "unique_sorted_with_axis", "gridsample_bilinear", "roialign_aligned_true", "dft",
    "einsum_batch_matmul", "layer_normalization_4d_axis1", "group_normalization_example",
    "pow_types_int64_int64", "nonmaxsuppression_two_batches", "resize_upsample_scales_linear",
    "mish", "reduce_log_sum_exp_do_not_keepdims_example",
]


@pytest.fixture(scope="module")
def node_tests():
    import onnx.backend.test

    from tensorforge_onnx.backend import TensorforgeBackend

    bt = onnx.backend.test.BackendTest(TensorforgeBackend, __name__)
    return bt.test_cases["OnnxBackendNodeModelTest"]


@pytest.mark.parametrize("name", CASES)
def test_node_case_on_opencl(name, node_tests, monkeypatch, plugins, llvm_target,
                             opencl_target):
    import tensorforge_onnx.backend as backend

    plugins.register("tensorforge_onnx.plugin", "onnx", distribution="tensorforge-frontend-onnx")
    compiled = []

    def on_opencl(graph):
        import tensorforge

        compiled.append(tensorforge.compile(graph, target="opencl"))
        return compiled[-1]

    monkeypatch.setattr(backend, "_compile", on_opencl)
    method = f"test_{name}_cpu"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        getattr(node_tests(method), method)()  # onnx's runner compares the outputs
    assert compiled
    assert any(k.get("device") == "opencl" for c in compiled for k in c.desc["kernels"]), \
        f"{name}: no kernel ran on the device"
