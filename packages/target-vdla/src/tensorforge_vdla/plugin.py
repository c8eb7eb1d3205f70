"""Registers the ``vdla`` accelerator target kind and its default configuration tag."""

from __future__ import annotations

from tensorforge.plugins import TargetTag, hookimpl
from tensorforge.target import TargetKind, TargetOption

VDLA = TargetKind(
    name="vdla",
    device_type="vdla",
    options={
        "batch": TargetOption(int, 1, "GEMM core batch"),
        "block-in": TargetOption(int, 16, "GEMM core input block"),
        "block-out": TargetOption(int, 16, "GEMM core output block"),
        "inp-dtype": TargetOption(str, "int8", "input data type"),
        "acc-dtype": TargetOption(str, "int32", "accumulator data type"),
    },
    build="tensorforge_vdla.codegen:build",
    keys=("vdla",),
    description="The VDLA accelerator, run on its cycle-approximate simulator (planned)",
)


@hookimpl
def register_targets(register):
    register(VDLA)


@hookimpl
def register_target_tags(register):
    register(TargetTag("vdla/default", "vdla -batch=1 -block-in=16 -block-out=16", "VDLA 1x16x16"))
