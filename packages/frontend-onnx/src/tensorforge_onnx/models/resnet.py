"""ResNet-18 (He et al. 2016) for ImageNet: 1x3x224x224 -> 1x1000 logits."""

from __future__ import annotations

import onnx

from ._builder import ModelBuilder

STAGES = ((64, 1), (128, 2), (256, 2), (512, 2))  # (channels, first stride); two blocks each


def _basic_block(b: ModelBuilder, x: str, cin: int, cout: int, stride: int) -> str:
    y = b.op("Relu", [b.batch_norm(b.conv(x, cin, cout, 3, stride, 1), cout)])
    # the last batch norm of a residual branch starts small so the sum stays of order one
    y = b.batch_norm(b.conv(y, cout, cout, 3, 1, 1), cout, gamma=(0.3, 0.6))
    if stride != 1 or cin != cout:
        x = b.batch_norm(b.conv(x, cin, cout, 1, stride, 0), cout, gamma=(0.5, 0.8))
    return b.op("Relu", [b.op("Add", [x, y])])


def build(seed: int = 0, opset: int = 17) -> onnx.ModelProto:
    b = ModelBuilder("resnet18", seed, opset)
    x = b.input("input", [1, 3, 224, 224])
    x = b.op("Relu", [b.batch_norm(b.conv(x, 3, 64, 7, 2, 3), 64)])
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for cout, stride in STAGES:
        x = _basic_block(b, x, cin, cout, stride)
        x = _basic_block(b, x, cout, cout, 1)
        cin = cout
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x])], axis=1)
    b.op("Gemm", [x, b.const("fc_w", b.normal((1000, 512), (1 / 512) ** 0.5)),
                  b.const("fc_b", b.normal((1000,), 0.05))], transB=1, out="logits")
    b.output("logits", [1, 1000])
    return b.model("ResNet-18, random weights")
