"""The operator suite on CUDA. Every case, with the generic GPU schedule and with the
strategy the target registers for its op, compiles with NVRTC to PTX and to a cubin for
sm_80 and sm_90 (no GPU needed); on a machine with an NVIDIA GPU the suite also runs and
compares with numpy (marked `cuda`: skipped elsewhere, with the reason)."""

import shutil

import pytest

from tensorforge.testing import TargetConformance

ARCHS = ("sm_80", "sm_90")


def _nvrtc():
    from tensorforge_cuda import nvrtc

    if not nvrtc.has_nvrtc():
        pytest.skip(f"NVRTC is not installed: {nvrtc.INSTALL}")
    return nvrtc


@pytest.mark.cuda
class TestCUDAConformance(TargetConformance):
    target, plugin, distribution = "cuda", "tensorforge_cuda.plugin", "tensorforge-target-cuda"


class TestCUDAWithNVRTC(TargetConformance):
    """Source mode: NVRTC compiles each case's module for both architectures."""

    target, plugin, distribution = "cuda", "tensorforge_cuda.plugin", "tensorforge-target-cuda"
    mode = "source"

    def check_source(self, source, case):
        nvrtc = _nvrtc()
        kernels = None
        for arch in ARCHS:
            binary = nvrtc.compile_cuda(source, arch)
            assert binary.cubin[:4] == b"\x7fELF", f"{case}: {arch} cubin is not an ELF image"
            assert f".target {arch}".encode() in binary.ptx, f"{case}: PTX for another arch"
            assert binary.entries, f"{case}: PTX defines no kernel"
            assert kernels in (None, binary.entries), case
            kernels = binary.entries


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
class TestNvccAgrees(TargetConformance):
    """Where nvcc is installed it accepts the same sources and defines the same kernels."""

    target, plugin, distribution = "cuda", "tensorforge_cuda.plugin", "tensorforge-target-cuda"
    mode = "source"
    only = ("matmul", "softmax", "float16")

    def check_source(self, source, case):
        nvrtc = _nvrtc()
        ptx = nvrtc.compile_nvcc(source, "sm_90", "ptx")
        assert nvrtc.ptx_entries(ptx) == nvrtc.compile_cuda(source, "sm_90").entries, case
        assert nvrtc.compile_nvcc(source, "sm_80", "cubin")[:4] == b"\x7fELF", case
