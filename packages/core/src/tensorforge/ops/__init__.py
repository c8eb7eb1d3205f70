"""The operator library: TE compute definitions (what each operator computes), shared by the
graph compiler and the schedule templates of every target."""

from .broadcast import broadcast_binary, broadcast_shape, elementwise
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
from .nn_nchwc import conv2d_nchwc, pack_nchwc, pack_oihw_xi_yo, unpack_nchwc
from .reduction import reduce
from .transform import transpose

__all__ = [
    "avg_pool2d", "broadcast_binary", "broadcast_shape", "conv2d_nchw", "conv2d_nhwc", "dense",
    "depthwise_conv2d_nchw", "elementwise", "global_avg_pool2d", "matmul", "max_pool2d", "pad",
    "reduce", "softmax", "transpose",
]
