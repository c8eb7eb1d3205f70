"""Registers the ``llvm`` target kind and CPU tags. Imports nothing heavy."""

from __future__ import annotations

from tensorforge.plugins import Pass, Strategy, TargetTag, hookimpl
from tensorforge.target import TargetKind, TargetOption

#: -num-threads above this is refused: libgomp would start that many threads per region.
MAX_THREADS = 1024
WINOGRAD_CHOICES = ("auto", "off", "2", "4")
CONV1X1_CHOICES = ("auto", "direct", "gemm")
CONV_TILE_CHOICES = ("auto", "narrow")  # strategies.default_conv_tile
DEPTHWISE_PAD_CHOICES = ("inline", "copy")
PAD_CHANNELS_CHOICES = ("auto", "off")

LLVM = TargetKind(
    name="llvm",
    device_type="cpu",
    options={
        "mcpu": TargetOption(str, "generic", "LLVM CPU name, e.g. znver3, skylake-avx512 "
                             "(checked against LLVM's list for the triple)"),
        "mattr": TargetOption(str, "", "LLVM features, comma list like +avx2,+fma,-avx512f "
                              "(checked against LLVM's list for the triple)"),
        "mtriple": TargetOption(str, "", "target triple (x86_64-... or aarch64-...); giving "
                                "one turns off host detection"),
        "num-threads": TargetOption(int, 0, "worker threads; 0 = the machine's physical cores",
                                    min=0, max=MAX_THREADS),
        "opt-level": TargetOption(int, 3, "LLVM optimization level 0-3", min=0, max=3),
        "winograd": TargetOption(str, "auto", "3x3 stride-1 convs: auto (measured rule), off, "
                                 "2 or 4 (Winograd F(m x m, 3x3) tile)",
                                 choices=WINOGRAD_CHOICES),
        "conv1x1": TargetOption(str, "auto", "1x1 convs: auto (measured rule), direct, or gemm "
                                "(the GEMM form's register tile, conv1x1.py)",
                                choices=CONV1X1_CHOICES),
        "conv1x1-flat": TargetOption(str, "auto", "1x1 stride-1 unpadded convs over one row "
                                     "of H*W pixels so a register tile spans image rows: "
                                     "auto (measured rule: images up to 14 pixels wide), on, "
                                     "or off (row by row)", choices=("auto", "on", "off")),
        "conv-tile": TargetOption(str, "auto", "direct convs' register tile and loop order: "
                                  "auto (measured rules: up to 2 rows, 28 accumulators where "
                                  "blocks are 2+ vectors; a 3-channel stem's channels outside "
                                  "the taps) or narrow (one row, half the registers)",
                                  choices=CONV_TILE_CHOICES),
        "conv-prefetch": TargetOption(str, "auto", "convs' software prefetch of the next "
                                      "weight panel: auto (measured rule) or off",
                                      choices=("auto", "off")),
        "pool-pad": TargetOption(str, "inline", "pools' padding: inline (each tap tests its "
                                 "bounds) or root (a padded copy first)",
                                 choices=("inline", "root")),
        "depthwise-pad": TargetOption(str, "inline", "depthwise convs' zero padding: inline "
                                      "(guarded reads) or copy (a padded copy of the input "
                                      "first)", choices=DEPTHWISE_PAD_CHOICES),
        "pad-channels": TargetOption(str, "auto", "conv outputs whose channels only part-vector "
                                     "blocks divide: auto (padded to whole vector blocks, zero "
                                     "weights, when that adds at most 1/8) or off",
                                     choices=PAD_CHANNELS_CHOICES),
    },
    build="tensorforge_llvm.codegen:build",
    detect_host="tensorforge_llvm.host:detect_host",
    validate="tensorforge_llvm.options:validate",
    keys=("cpu",),
    description="CPUs through LLVM (x86-64, AArch64); unset options describe this machine",
)

_X86 = "-mtriple=x86_64-unknown-linux-gnu"
_ARM = "-mtriple=aarch64-unknown-linux-gnu"
TAGS = (
    TargetTag("amd/zen3", f"llvm -mcpu=znver3 {_X86}", "AMD Zen 3 (EPYC 7003, Ryzen 5000)"),
    TargetTag("amd/zen4", f"llvm -mcpu=znver4 {_X86}", "AMD Zen 4 (EPYC 9004, Ryzen 7000)"),
    TargetTag("intel/skylake-avx512", f"llvm -mcpu=skylake-avx512 {_X86}", "Intel Xeon Skylake-SP"),
    TargetTag("intel/icelake-server", f"llvm -mcpu=icelake-server {_X86}", "Intel Ice Lake-SP"),
    TargetTag("arm/neoverse-n1", f"llvm -mcpu=neoverse-n1 {_ARM}", "Arm Neoverse N1 (Graviton2)"),
    TargetTag("arm/neoverse-v1", f"llvm -mcpu=neoverse-v1 {_ARM}", "Arm Neoverse V1 (Graviton3)"),
)


@hookimpl
def register_targets(register):
    register(LLVM)


@hookimpl
def register_target_tags(register):
    for tag in TAGS:
        register(tag)


_S = "tensorforge_llvm.strategies"
_OPS = "tensorforge.graph.ops.nchwc"
_POOL_OPS = ("max_pool2d_nchwc", "avg_pool2d_nchwc", "global_avg_pool2d_nchwc", "max_pool2d",
             "avg_pool2d", "global_avg_pool2d")


@hookimpl
def register_strategies(register, target):
    """CPU schedule templates (see `strategies.py`); a vendor plugin may register higher
    priorities for the same ops."""
    if target.kind.name != "llvm":
        return
    register(Strategy("conv2d_nchwc", "direct", f"{_OPS}:_conv_compute",
                      f"{_S}:schedule_conv2d_nchwc", priority=10,
                      description="NCHW[x]c direct conv, register tile ow x oc_bn"))
    register(Strategy("depthwise_conv2d_nchwc", "direct", f"{_OPS}:_conv_compute",
                      f"{_S}:schedule_depthwise_nchwc", priority=10,
                      description="NCHW[x]c depthwise conv"))
    register(Strategy("dense_packed", "packed", f"{_OPS}:_dense_compute",
                      f"{_S}:schedule_dense_packed", priority=10,
                      description="dense with NK[y]n packed weights"))
    register(Strategy("attention", "blocked", "tensorforge.graph.ops.attention:_compute",
                      "tensorforge_llvm.attention:schedule_attention", priority=10,
                      description="fused attention: key blocks, online-softmax combine"))
    register(Strategy("conv2d_winograd_nchwc", "winograd", f"{_OPS}:_wino_compute",
                      "tensorforge_llvm.winograd:schedule_conv2d_winograd_nchwc", priority=10,
                      description="Winograd F(2x2|4x4, 3x3) in NCHW[x]c, fused epilogue"))
    register(Strategy("qconv2d_nchwc", "dot4", "tensorforge.graph.ops.qconv:"
                      "qconv2d_nchwc_compute", "tensorforge_llvm.qconv:schedule_qconv2d_nchwc",
                      priority=10, description="int8 NCHW[x]c conv, 4-channel dot products "
                      "(VNNI vpdpbusd where the CPU has it)"))
    register(Strategy("conv2d", "direct_nchw", "tensorforge.ops.nn:conv2d_nchw",
                      "tensorforge_llvm.conv_nchw:schedule_conv2d_nchw", priority=10,
                      description="NCHW conv (channels no block divides): oc rows x ow vector"))
    register(Strategy("channel_shuffle", "lanes", f"{_OPS}:_shuffle_compute",
                      "tensorforge_llvm.shuffle:schedule_channel_shuffle", priority=10,
                      description="channel shuffle: pixels outer, blocks unrolled, lanes vector"))
    # a split fused after a channel shuffle (Dynamo's ShuffleNetV2: `split(shuffle(x))`): the
    # generic schedule's per-lane index arithmetic took 0.16 ms where the shuffle alone takes
    # 0.026 (28x28, 8 blocks of 16); plain splits and NCHW ones go to the generic schedule
    register(Strategy("split", "lanes", "tensorforge.graph.ops.shape:_split_compute",
                      "tensorforge_llvm.shuffle:schedule_split", priority=10,
                      description="split in NCHW[x]c after a channel shuffle: as the shuffle"))
    for op in _POOL_OPS:
        mod = "tensorforge.ops.nn_blocked" if op.endswith("_nchwc") else "tensorforge.ops.nn"
        register(Strategy(op, "tiled", f"{mod}:{op}", "tensorforge_llvm.pools:schedule_pool",
                          priority=10,
                          description="pooling: tile of output pixels x vector, taps unrolled"))


@hookimpl
def register_passes(register, target, stage):
    """The NCHW[x]c layout pass at the graph's layout stage."""
    if target.kind.name == "llvm" and stage == "graph.layout":
        register(Pass("llvm-nchwc-layout", stage, "tensorforge_llvm.layout:convert_layout",
                      priority=10))
