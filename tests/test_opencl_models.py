"""The five paper models and SqueezeNet 1.1 compiled for `opencl` (pocl's CPU device in CI)
against ONNX Runtime: max abs err / max abs ref < 1e-4 (the issue's criterion), with the GPU
templates where the target has them and the generic GPU schedule elsewhere."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.opencl

ort = pytest.importorskip("onnxruntime")
models = pytest.importorskip("tensorforge_onnx.models")

NAMES = [*models.PAPER_MODELS, "squeezenet1_1"]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_opencl_model_matches_onnxruntime(name, tmp_path, opencl_target, plugins):
    import tensorforge

    plugins.register("tensorforge_onnx.plugin", "onnx", distribution="tensorforge-frontend-onnx")
    path = str(models.save(name, tmp_path / f"{name}.onnx"))
    inputs = models.example_inputs(name)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (ref,) = sess.run(None, inputs)
    compiled = tensorforge.compile(path, target=opencl_target)
    (out,) = compiled.run(inputs)
    assert out.shape == ref.shape
    rel = float(np.abs(out - ref).max() / np.abs(ref).max())
    assert rel < 1e-4, f"{name} on opencl: max abs err / max abs ref = {rel:.2e}"
    kinds = {k["schedule"].split(" tuned")[0] for k in compiled.desc["kernels"]}
    assert kinds <= {"generic"} | {f"strategy {op}/gpu" for op in
                                   ("conv2d", "dense", "matmul", "max_pool2d", "avg_pool2d",
                                    "global_avg_pool2d", "softmax", "log_softmax",
                                    "layer_norm")}, kinds


def test_opencl_package_runs_without_the_compiler(tmp_path, opencl_target, plugins):
    """`.tfpkg` of an OpenCL model: `tensorforge.load` needs numpy and pyopencl only."""
    import tensorforge
    from tensorforge.testing.isolated import run_without_compiler

    plugins.register("tensorforge_onnx.plugin", "onnx", distribution="tensorforge-frontend-onnx")
    path = str(models.save("dqn", tmp_path / "dqn.onnx"))
    inputs = models.example_inputs("dqn")
    compiled = tensorforge.compile(path, target=opencl_target)
    pkg = compiled.export(tmp_path / "dqn.tfpkg")
    (got,) = run_without_compiler(pkg, inputs)
    np.testing.assert_array_equal(got, compiled.run(inputs)[0])
