"""Registers the ``opencl`` target kind. Imports nothing heavy (pyopencl loads on first use)."""

from __future__ import annotations

from tensorforge.plugins import hookimpl
from tensorforge.target import TargetKind, TargetOption

OPENCL = TargetKind(
    name="opencl",
    device_type="opencl",
    options={
        "platform": TargetOption(str, "", "OpenCL platform name substring; empty = first"),
        "device": TargetOption(str, "", "OpenCL device name substring; empty = first"),
        "max-threads-per-block": TargetOption(int, 256, "work-group size limit"),
        "max-shared-memory-per-block": TargetOption(int, 32768,
                                                    "bytes of __local memory per work-group"),
        "fp16": TargetOption(bool, False, "the device has cl_khr_fp16 (half arithmetic); "
                             "otherwise half is storage only (vload_half/vstore_half)"),
    },
    build="tensorforge_opencl.codegen:build",
    keys=("opencl", "gpu"),
    description="OpenCL devices through pyopencl, e.g. the pocl CPU runtime",
)


@hookimpl
def register_targets(register):
    register(OPENCL)


@hookimpl
def register_strategies(register, target):
    """Core's GPU templates (conv2d, dense, pools, softmax, layer norm)."""
    if target.kind.name == "opencl":
        from tensorforge.ops.schedules_gpu import register_gpu_strategies

        register_gpu_strategies(register, target)
