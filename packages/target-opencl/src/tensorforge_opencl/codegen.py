"""The `opencl` target's build: the shared GPU build with the OpenCL dialect; the module runs
through pyopencl (`runtime.py`), imported only when a kernel is first called."""

from __future__ import annotations

from typing import Any

from tensorforge.codegen.build import build_gpu

from .dialect import OPENCL, OPENCL_FP16

RUNTIME = "tensorforge_opencl.runtime:OpenCLDevice"


def build(funcs: Any, target: Any) -> Any:
    opts = target.options
    dialect = OPENCL_FP16 if opts.get("fp16") else OPENCL
    device = {"platform": opts.get("platform", ""), "device": opts.get("device", "")}
    return build_gpu(funcs, target, dialect, RUNTIME, device)
