"""The five paper models and SqueezeNet 1.1 compiled for `cuda`: every kernel compiles with
NVRTC to PTX and to a cubin for sm_80 and sm_90, with the GPU templates where the target has
them. No GPU is needed; a machine with one runs them against ONNX Runtime in
`benchmarks/gpu_check.sh`. Without a device the compiled model still exports, and running it
says why it cannot."""

from __future__ import annotations

import pytest

models = pytest.importorskip("tensorforge_onnx.models")
nvrtc = pytest.importorskip("tensorforge_cuda.nvrtc")

NAMES = [*models.PAPER_MODELS, "squeezenet1_1"]
ARCHS = ("sm_80", "sm_90")


@pytest.fixture
def cuda(plugins):
    if not nvrtc.has_nvrtc():
        pytest.skip(f"NVRTC is not installed: {nvrtc.INSTALL}")
    plugins.register("tensorforge_cuda.plugin", "cuda", distribution="tensorforge-target-cuda")
    plugins.register("tensorforge_onnx.plugin", "onnx", distribution="tensorforge-frontend-onnx")
    from tensorforge.target import Target

    return Target.parse("cuda")


def _cuda_modules(module):
    mods = getattr(module, "modules", {"": module})
    return [m for m in mods.values() if getattr(m, "desc", {}).get("target_kind") == "cuda"]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_kernel_compiles_with_nvrtc(name, tmp_path, cuda):
    import tensorforge

    path = str(models.save(name, tmp_path / f"{name}.onnx"))
    compiled = tensorforge.compile(path, target=cuda)
    (mod,) = _cuda_modules(compiled.module)
    kernels = {k["name"] for f in mod.desc["functions"] for k in f["kernels"]}
    for arch in ARCHS:
        binary = nvrtc.compile_cuda(mod.get_source(), arch)
        assert binary.cubin[:4] == b"\x7fELF"
        assert set(binary.entries) == kernels, f"{name} {arch}: PTX kernels differ"
    kinds = {k["schedule"].split(" tuned")[0] for k in compiled.desc["kernels"]}
    assert kinds <= {"generic"} | {f"strategy {op}/gpu" for op in (
        "conv2d", "dense", "matmul", "max_pool2d", "avg_pool2d", "global_avg_pool2d", "softmax",
        "log_softmax", "layer_norm")} | {"strategy dense/tensorcore",
                                         "strategy matmul/tensorcore"}, kinds


def test_without_a_device_the_model_exports_and_a_run_says_why(tmp_path, cuda):
    import tensorforge
    from tensorforge.testing.hardware import has_cuda
    from tensorforge_cuda.runtime import NoCudaDevice

    if has_cuda():
        pytest.skip("this machine has a CUDA device")
    path = str(models.save("dqn", tmp_path / "dqn.onnx"))
    compiled = tensorforge.compile(path, target=cuda)
    assert compiled.export(tmp_path / "dqn.tfpkg")
    with pytest.raises(NoCudaDevice, match="no NVIDIA driver or GPU"):
        compiled.run(models.example_inputs("dqn"))
