"""The benchmark suite of issue 5 (`tforge bench`, and `benchmarks/` under pytest-benchmark).

Operator level: every distinct conv2d, depthwise and dense shape of ResNet-18 and MobileNetV2,
compiled through `tensorforge.compile` as a one-op model, in GFLOP/s and % of the FMA peak
(a calibration kernel measured in the same rounds). End to end: the paper's models and
SqueezeNet at batch 1. Both against ONNX Runtime and PyTorch (CPU) when installed, in this
process, interleaved round by round, reported as medians with quartiles.

Modules: `stats` (interleaving, quartiles), `machine`, `fma` (peak kernel), `workloads`,
`baselines` and `torch_onnx` (the frameworks), `suite` (one case), `report` (Markdown, JSON,
PNG, regression check), `runner` (the whole suite). Heavy imports happen on first use.
"""

from .runner import ALL_MODELS, TRANSFORMER_MODELS, BenchConfig, run

__all__ = ["ALL_MODELS", "TRANSFORMER_MODELS", "BenchConfig", "run"]
