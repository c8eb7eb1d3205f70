"""Registers the ``metal`` target kind and Apple GPU tags."""

from __future__ import annotations

from tensorforge.plugins import TargetTag, hookimpl
from tensorforge.target import TargetKind, TargetOption

METAL = TargetKind(
    name="metal",
    device_type="metal",
    options={
        "max-threads-per-block": TargetOption(int, 1024, "threads per threadgroup limit"),
        "thread-warp-size": TargetOption(int, 32, "SIMD-group width"),
    },
    build="tensorforge_metal.codegen:build",
    keys=("metal", "gpu"),
    description="Apple GPUs: Metal Shading Language (checked with clang off macOS)",
)


@hookimpl
def register_targets(register):
    register(METAL)


@hookimpl
def register_target_tags(register):
    register(TargetTag("apple/m2-gpu", "metal -max-threads-per-block=1024", "Apple M2 GPU"))


@hookimpl
def register_strategies(register, target):
    """Core's GPU templates (conv2d, dense, pools, softmax, layer norm)."""
    if target.kind.name == "metal":
        from tensorforge.ops.schedules_gpu import register_gpu_strategies

        register_gpu_strategies(register, target)
