"""SqueezeNet 1.1 (Iandola et al. 2016, the v1.1 revision): 1x3x224x224 -> 1x1000."""

from __future__ import annotations

import onnx

from ._builder import ModelBuilder

# (squeeze, expand) channels of the fire modules; "M" is a 3x3/2 max pool (ceil mode)
FIRES = ("M", (16, 64), (16, 64), "M", (32, 128), (32, 128), "M", (48, 192), (48, 192),
         (64, 256), (64, 256))


def _fire(b: ModelBuilder, x: str, cin: int, squeeze: int, expand: int) -> str:
    s = b.op("Relu", [b.conv(x, cin, squeeze, 1, bias=True)])
    e1 = b.op("Relu", [b.conv(s, squeeze, expand, 1, bias=True)])
    e3 = b.op("Relu", [b.conv(s, squeeze, expand, 3, 1, 1, bias=True)])
    return b.op("Concat", [e1, e3], axis=1)


def build(seed: int = 0, opset: int = 17) -> onnx.ModelProto:
    b = ModelBuilder("squeezenet1_1", seed, opset)
    x = b.op("Relu", [b.conv(b.input("input", [1, 3, 224, 224]), 3, 64, 3, 2, bias=True)])
    cin = 64
    for f in FIRES:
        if f == "M":
            x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
        else:
            x = _fire(b, x, cin, *f)
            cin = 2 * f[1]
    # classifier: (dropout), 1x1 conv to the classes, ReLU, global average pool
    x = b.op("Relu", [b.conv(x, cin, 1000, 1, bias=True, gain=1.0)])
    x = b.op("GlobalAveragePool", [x])
    b.op("Flatten", [x], axis=1, out="logits")
    b.output("logits", [1, 1000])
    return b.model("SqueezeNet 1.1, random weights")
