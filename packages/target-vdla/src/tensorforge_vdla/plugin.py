"""Registers the ``vdla`` accelerator target kind, its tags, intrinsics, passes and strategies.

Nothing heavy is imported here: descriptors name their code as ``"module:attr"``."""

from __future__ import annotations

from tensorforge.plugins import Intrinsic, Pass, Strategy, TargetTag, hookimpl
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
        "host": TargetOption(str, "llvm", "target of the operators VDLA does not run"),
        "inp-kib": TargetOption(int, 32, "input SRAM, KiB"),
        "wgt-kib": TargetOption(int, 256, "weight SRAM, KiB"),
        "acc-kib": TargetOption(int, 128, "accumulator SRAM, KiB"),
        "uop-kib": TargetOption(int, 32, "micro-op SRAM, KiB"),
        "dram-bytes-per-cycle": TargetOption(int, 8, "DRAM port bandwidth, bytes per cycle"),
        "dram-latency": TargetOption(int, 64, "DRAM access latency, cycles"),
        "clock-mhz": TargetOption(int, 200, "clock, MHz"),
        "queue-depth": TargetOption(int, 16, "tokens each dependency queue holds"),
    },
    build="tensorforge_vdla.codegen:build",
    keys=("vdla",),
    description="The VDLA accelerator, run on its cycle-counting simulator",
)


def _is_vdla(target) -> bool:
    return target.kind.name == "vdla"


@hookimpl
def register_targets(register):
    register(VDLA)


@hookimpl
def register_target_tags(register):
    from tensorforge_vdla.config import TAGS

    for name, (config, description) in TAGS.items():
        register(TargetTag(name, config, description))


@hookimpl
def register_intrinsics(register, target):
    if not _is_vdla(target):
        return
    from tensorforge_vdla.config import VDLAConfig
    from tensorforge_vdla.intrin import intrinsic_names

    for name, (desc, impl) in intrinsic_names(VDLAConfig.from_target(target)).items():
        register(Intrinsic(name, desc, impl))


#: loop-IR passes: (name, stage, function, priority); higher priority runs first in a stage
PASSES = (
    ("vdla.inject_dma", "tir.after_flatten", "tensorforge_vdla.passes:inject_dma", 30),
    ("vdla.inject_alu", "tir.after_flatten", "tensorforge_vdla.passes:inject_alu", 20),
    ("vdla.fold_uops", "tir.after_flatten", "tensorforge_vdla.passes:fold_uops", 10),
    ("vdla.layout", "graph.layout", "tensorforge_vdla.layout:convert_layout", 10),
)


@hookimpl
def register_passes(register, target, stage):
    if not _is_vdla(target):
        return
    for name, at, func, priority in PASSES:
        if at == stage:
            register(Pass(name, at, func, priority))


@hookimpl
def register_strategies(register, target):
    """The int8 convolution and dense that `layout.py` places on VDLA."""
    if not _is_vdla(target):
        return
    ops = "tensorforge.graph.ops.nchwc"
    register(Strategy("conv2d_nchwc", "vdla", f"{ops}:_conv_compute",
                      "tensorforge_vdla.strategies:schedule_conv2d", priority=20,
                      description="int8 NCHW16c conv on the GEMM core, epilogue on the ALU"))
    register(Strategy("dense_packed", "vdla", f"{ops}:_dense_compute",
                      "tensorforge_vdla.dense:schedule_dense", priority=20,
                      description="int8 dense (batch 1) on the GEMM core"))
