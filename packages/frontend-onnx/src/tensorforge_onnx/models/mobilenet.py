"""MobileNetV2 (Sandler et al. 2018), width 1.0: 1x3x224x224 -> 1x1000 logits.

Inverted residual blocks with depthwise convolutions (`group` = channels) and ReLU6 as Clip."""

from __future__ import annotations

import onnx

from ._builder import ModelBuilder

# (expansion t, output channels c, repeats n, first stride s): table 2 of the paper
BLOCKS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
          (6, 160, 3, 2), (6, 320, 1, 1))


def _conv_bn(b: ModelBuilder, x: str, cin: int, cout: int, k: int, stride: int = 1,
             group: int = 1, act: bool = True, gamma: tuple[float, float] = (0.8, 1.2)) -> str:
    y = b.batch_norm(b.conv(x, cin, cout, k, stride, k // 2, group), cout, gamma)
    return b.relu6(y) if act else y


def _inverted_residual(b: ModelBuilder, x: str, cin: int, cout: int, stride: int,
                       t: int) -> str:
    hidden = cin * t
    y = _conv_bn(b, x, cin, hidden, 1) if t != 1 else x
    y = _conv_bn(b, y, hidden, hidden, 3, stride, group=hidden)
    residual = stride == 1 and cin == cout
    y = _conv_bn(b, y, hidden, cout, 1, act=False, gamma=(0.3, 0.6) if residual else (0.8, 1.2))
    return b.op("Add", [x, y]) if residual else y


def build(seed: int = 0, opset: int = 17) -> onnx.ModelProto:
    b = ModelBuilder("mobilenet_v2", seed, opset)
    x = _conv_bn(b, b.input("input", [1, 3, 224, 224]), 3, 32, 3, 2)
    cin = 32
    for t, c, n, s in BLOCKS:
        for i in range(n):
            x = _inverted_residual(b, x, cin, c, s if i == 0 else 1, t)
            cin = c
    x = _conv_bn(b, x, cin, 1280, 1)
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x])], axis=1)
    b.op("Gemm", [x, b.const("fc_w", b.normal((1000, 1280), (1 / 1280) ** 0.5)),
                  b.const("fc_b", b.normal((1000,), 0.05))], transB=1, out="logits")
    b.output("logits", [1, 1000])
    return b.model("MobileNetV2 (width 1.0), random weights")
