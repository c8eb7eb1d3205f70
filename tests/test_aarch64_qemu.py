"""AArch64 through LLVM's AArch64 target: the templates pick NEON widths (4 float32 lanes), the
kernels are cross-compiled (llvmlite object file + aarch64-linux-gnu-gcc), and a model runs
under qemu-aarch64 through the generated C runner (`tensorforge_llvm.crossrun`); its outputs
must match ONNX Runtime run natively on this machine.

Needs the Debian packages qemu-user, gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and
libgomp1-arm64-cross (listed in .ci/run); the tests that run code skip without them."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

import tensorforge

pytestmark = pytest.mark.aarch64

TRIPLE = "aarch64-linux-gnu"
RTOL, ATOL = 1e-4, 1e-5


def _missing() -> str | None:
    need = {"qemu-aarch64": "qemu-user", "aarch64-linux-gnu-gcc": "gcc-aarch64-linux-gnu"}
    for tool, pkg in need.items():
        if shutil.which(tool) is None:
            return f"{tool} not found (Debian package {pkg})"
    if not os.path.exists("/usr/aarch64-linux-gnu/lib/libgomp.so.1"):
        return "no AArch64 libgomp (Debian package libgomp1-arm64-cross)"
    return None


needs_qemu = pytest.mark.skipif(_missing() is not None, reason=str(_missing()))


def _target(threads: int = 1) -> str:
    return f"llvm -mtriple={TRIPLE} -mattr=+neon -num-threads={threads}"


def test_neon_lanes_and_fmla(installed_plugins):
    """The schedules see 4 float32 lanes and the code uses NEON `fmla v.4s` (no JIT)."""
    from tensorforge.ops.schedule_generic import vector_lanes
    from tensorforge.target import Target
    from tensorforge_onnx import models

    assert vector_lanes(Target.parse(_target())) == 4
    model = tensorforge.compile(models.build("dqn"), target=_target())
    asm = model.module.get_source("asm")
    assert "fmla\tv" in asm and ".4s" in asm
    assert "zmm" not in asm and "ymm" not in asm
    with pytest.raises(tensorforge.errors.TensorforgeError, match="export"):
        model.run(models.example_inputs("dqn"))  # built for aarch64: not runnable here


@needs_qemu
@pytest.mark.parametrize("name,threads", [("dqn", 1), ("dqn", 2), ("squeezenet1_1", 2)])
def test_model_under_qemu_matches_onnxruntime(installed_plugins, tmp_path, name, threads):
    import onnxruntime as ort

    from tensorforge_llvm.crossrun import export_runner, run_runner
    from tensorforge_onnx import models

    onnx_model = models.build(name)
    model = tensorforge.compile(onnx_model, target=_target(threads))
    folder = export_runner(model, tmp_path / name)
    with open(folder / "libtfkernels.so", "rb") as f:
        head = f.read(20)
    assert head[:4] == b"\x7fELF" and int.from_bytes(head[18:20], "little") == 183  # EM_AARCH64
    inputs = models.example_inputs(name)
    ours = run_runner(folder, inputs, env={"OMP_NUM_THREADS": str(threads)})
    sess = ort.InferenceSession(onnx_model.SerializeToString(),
                                providers=["CPUExecutionProvider"])
    for a, b in zip(ours, sess.run(None, inputs)):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)


@needs_qemu
def test_cross_export_without_linker_is_a_clear_error(installed_plugins, tmp_path,
                                                      monkeypatch):
    from tensorforge_llvm import aot
    from tensorforge_onnx import models

    model = tensorforge.compile(models.build("dqn"), target=_target())
    monkeypatch.setattr(aot.shutil, "which", lambda name: None)
    with pytest.raises(tensorforge.errors.TensorforgeError, match="gcc-aarch64-linux-gnu"):
        model.module.export_library(str(tmp_path / "k.so"))
