"""The operator library: TE compute definitions (what each operator computes), shared by the
graph compiler and the schedule templates of every target."""

from .broadcast import broadcast_shape, elementwise, broadcast_binary
from .nn import (
    avg_pool2d,
    conv2d_nchw,
    conv2d_nhwc,
    dense,
    depthwise_conv2d_nchw,
    global_avg_pool2d,
    matmul,
    max_pool2d,
    pad,
    softmax,
)
from .reduction import reduce
from .transform import transpose

__all__ = [
    "avg_pool2d", "broadcast_binary", "broadcast_shape", "conv2d_nchw", "conv2d_nhwc", "dense",
    "depthwise_conv2d_nchw", "elementwise", "global_avg_pool2d", "matmul", "max_pool2d", "pad",
    "reduce", "softmax", "transpose",
]
