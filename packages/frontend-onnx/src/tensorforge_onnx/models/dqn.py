"""The Nature DQN (Mnih et al. 2015): 1x4x84x84 frames -> 1x18 action values."""

from __future__ import annotations

import onnx

from ._builder import ModelBuilder

N_ACTIONS = 18


def build(seed: int = 0, opset: int = 17) -> onnx.ModelProto:
    b = ModelBuilder("dqn", seed, opset)
    x = b.input("input", [1, 4, 84, 84])
    x = b.op("Relu", [b.conv(x, 4, 32, 8, 4, bias=True)])  # 20x20
    x = b.op("Relu", [b.conv(x, 32, 64, 4, 2, bias=True)])  # 9x9
    x = b.op("Relu", [b.conv(x, 64, 64, 3, 1, bias=True)])  # 7x7
    x = b.op("Flatten", [x], axis=1)
    x = b.op("Relu", [b.gemm(x, 64 * 7 * 7, 512)])
    b.op("Gemm", [x, b.const("fc_w", b.normal((N_ACTIONS, 512), (1 / 512) ** 0.5)),
                  b.const("fc_b", b.normal((N_ACTIONS,), 0.05))], transB=1, out="q_values")
    b.output("q_values", [1, N_ACTIONS])
    return b.model("Nature DQN, random weights")
