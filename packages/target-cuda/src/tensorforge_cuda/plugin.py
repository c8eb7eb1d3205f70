"""Registers the ``cuda`` target kind and NVIDIA tags. Imports nothing heavy."""

from __future__ import annotations

from tensorforge.plugins import TargetTag, hookimpl
from tensorforge.target import TargetKind, TargetOption

CUDA = TargetKind(
    name="cuda",
    device_type="cuda",
    options={
        "arch": TargetOption(str, "sm_80", "compute capability, e.g. sm_80, sm_90"),
        "max-threads-per-block": TargetOption(int, 1024, "threads per block limit"),
        "max-shared-memory-per-block": TargetOption(int, 49152, "shared memory bytes per block"),
        "thread-warp-size": TargetOption(int, 32, "warp size"),
    },
    build="tensorforge_cuda.codegen:build",
    keys=("cuda", "gpu"),
    description="NVIDIA GPUs: CUDA C compiled with NVRTC (planned)",
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
