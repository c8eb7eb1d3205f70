"""Registers the ``cuda`` target kind, NVIDIA tags, core's GPU templates, the tensor-core
(`wmma`) intrinsics and the float16 dense/matmul strategy that tensorizes with them. Imports
nothing heavy (NVRTC and the driver load on first use)."""

from __future__ import annotations

from tensorforge.plugins import Intrinsic, Strategy, TargetTag, hookimpl
from tensorforge.target import TargetKind, TargetOption

CUDA = TargetKind(
    name="cuda",
    device_type="cuda",
    options={
        "arch": TargetOption(str, "sm_80", "compute capability to compile for, e.g. sm_80, "
                             "sm_90 (a run compiles for the detected device)"),
        "device": TargetOption(int, 0, "CUDA device index to run on"),
        "max-threads-per-block": TargetOption(int, 1024, "threads per block limit"),
        "max-shared-memory-per-block": TargetOption(int, 49152, "shared memory bytes per block"),
        "thread-warp-size": TargetOption(int, 32, "warp size"),
    },
    build="tensorforge_cuda.codegen:build",
    keys=("cuda", "gpu"),
    description="NVIDIA GPUs: CUDA C++ compiled with NVRTC, run through the driver API",
)

TAGS = (
    TargetTag("nvidia/h200", "cuda -arch=sm_90 -max-shared-memory-per-block=49152", "NVIDIA H200"),
    TargetTag("nvidia/h100", "cuda -arch=sm_90 -max-shared-memory-per-block=49152", "NVIDIA H100"),
    TargetTag("nvidia/a100", "cuda -arch=sm_80 -max-shared-memory-per-block=49152", "NVIDIA A100"),
    TargetTag("nvidia/rtx-4090", "cuda -arch=sm_89", "NVIDIA GeForce RTX 4090"),
)


@hookimpl
def register_targets(register):
    register(CUDA)


@hookimpl
def register_target_tags(register):
    for tag in TAGS:
        register(tag)


def _is_cuda(target) -> bool:
    return target.kind.name == "cuda"


@hookimpl
def register_strategies(register, target):
    """Core's GPU templates, and tensor cores for float16 dense/matmul (the strategy falls
    back to the core template for every other dtype and shape)."""
    if not _is_cuda(target):
        return
    from tensorforge.ops.schedules_gpu import register_gpu_strategies

    register_gpu_strategies(register, target)
    for op in ("dense", "matmul"):
        register(Strategy(op, "tensorcore", "tensorforge.ops.schedules_gpu:graph_compute",
                          "tensorforge_cuda.schedules:schedule_dense_tensorcore", priority=10,
                          description="float16 -> float32 on tensor cores (wmma 16x16x16); "
                          "other dtypes and shapes: the gpu template"))


@hookimpl
def register_intrinsics(register, target):
    if not _is_cuda(target):
        return
    from tensorforge_cuda.intrinsics import intrinsic_refs

    for name, (desc, impl) in intrinsic_refs().items():
        register(Intrinsic(name, desc, impl))
