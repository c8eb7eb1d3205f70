"""Tunable GPU templates for single operators (the benchmarks and `tune_task` use them; a
model's groups are tuned through the same schedules, registered as strategies):
``dense.gpu`` (``schedule_dense_gpu``) and ``conv2d.gpu`` (``schedule_conv2d_gpu``), whose
knobs are listed in `schedules_gpu.py`, beside this module."""

from __future__ import annotations

from typing import Any

from .. import te
from ..autotune.template import template
from .nn import conv2d_nchw, dense
from .schedules_gpu import schedule_conv2d_gpu, schedule_dense_gpu

__all__ = ["conv2d_gpu_template", "dense_gpu_template"]


@template("dense.gpu")
def dense_gpu_template(cfg: Any, M: int, N: int, K: int, dtype: str = "float32"
                       ) -> tuple[Any, list]:
    """out[m, n] = sum_k X[m, k] W[n, k] with the GPU dense schedule's knobs."""
    X = te.placeholder((M, K), dtype, name="X")
    W = te.placeholder((N, K), dtype, name="W")
    out = dense(X, W)
    return schedule_dense_gpu([out], cfg.target, cfg), [X, W, out]


@template("conv2d.gpu")
def conv2d_gpu_template(cfg: Any, N: int, C: int, H: int, W: int, OC: int, kh: int = 3,
                        kw: int = 3, stride: int = 1, padding: int = 1,
                        dtype: str = "float32") -> tuple[Any, list]:
    """NCHW conv2d with the GPU direct schedule's knobs."""
    data = te.placeholder((N, C, H, W), dtype, name="data")
    kernel = te.placeholder((OC, C, kh, kw), dtype, name="kernel")
    out = conv2d_nchw(data, kernel, stride, padding)
    return schedule_conv2d_gpu([out], cfg.target, cfg), [data, kernel, out]
