"""The `cuda` target's build: the shared GPU build with the CUDA dialect. The module holds CUDA
C++; `nvrtc.py` compiles it (PTX, or a cubin for an `-arch`), and the driver-API runtime
(`runtime.py`) loads the cubin for the detected device when a kernel is first called."""

from __future__ import annotations

from typing import Any

from tensorforge.codegen.build import build_gpu

from .dialect import CUDA

RUNTIME = "tensorforge_cuda.runtime:CUDADevice"


def build(funcs: Any, target: Any) -> Any:
    return build_gpu(funcs, target, CUDA, RUNTIME,
                     {"device": int(target.options.get("device", 0))})
