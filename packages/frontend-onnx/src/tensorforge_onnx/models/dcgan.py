"""The DCGAN generator (Radford et al. 2016), 64x64 images: z 1x100x1x1 -> 1x3x64x64."""

from __future__ import annotations

import onnx

from ._builder import ModelBuilder

Z_DIM = 100
CHANNELS = (512, 256, 128, 64)  # ngf = 64


def build(seed: int = 0, opset: int = 17) -> onnx.ModelProto:
    b = ModelBuilder("dcgan_generator", seed, opset)
    x = b.input("z", [1, Z_DIM, 1, 1])
    cin = Z_DIM
    for i, cout in enumerate(CHANNELS):
        # 1 -> 4 (kernel 4, stride 1, no padding), then doubling (kernel 4, stride 2, pad 1)
        y = b.conv_transpose(x, cin, cout, 4, 1, 0) if i == 0 else b.conv_transpose(
            x, cin, cout, 4, 2, 1)
        x = b.op("Relu", [b.batch_norm(y, cout)])
        cin = cout
    y = b.conv_transpose(x, cin, 3, 4, 2, 1, gain=1.0)
    b.op("Tanh", [y], out="image")
    b.output("image", [1, 3, 64, 64])
    return b.model("DCGAN generator, random weights")
