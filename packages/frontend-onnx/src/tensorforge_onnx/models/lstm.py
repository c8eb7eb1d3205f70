"""A word-level LSTM language model, the PTB "small" configuration (Zaremba et al. 2014):
vocabulary 10000, embedding and hidden size 200, two layers, 35 steps, batch 1.

Token ids (35x1 int64) -> Gather embedding -> LSTM -> LSTM -> MatMul+Add -> 35x1x10000 logits.
"""

from __future__ import annotations

import numpy as np
import onnx

from ._builder import ModelBuilder

VOCAB, HIDDEN, LAYERS, STEPS = 10000, 200, 2, 35
INIT = 0.1  # PTB small: weights uniform in [-0.1, 0.1]


def _lstm_layer(b: ModelBuilder, x: str, size: int) -> str:
    """One unidirectional ONNX LSTM: X (T, 1, size) -> Y (T, 1, 1, H) -> squeeze -> (T, 1, H).

    ONNX gate order is i, o, f, c; B holds the input and recurrent biases (8H)."""
    w = b.const("lstm_w", b.uniform((1, 4 * HIDDEN, size), -INIT, INIT))
    r = b.const("lstm_r", b.uniform((1, 4 * HIDDEN, HIDDEN), -INIT, INIT))
    bias = b.const("lstm_b", b.uniform((1, 8 * HIDDEN), -INIT, INIT))
    y = b.op("LSTM", [x, w, r, bias], hidden_size=HIDDEN)  # only Y; Y_h, Y_c omitted
    axes = b.const("axes", np.array([1], np.int64))
    return b.op("Squeeze", [y, axes])


def build(seed: int = 0, opset: int = 17) -> onnx.ModelProto:
    """`opset` 13 gives LSTM-7 (no `layout` attribute), 14 and later LSTM-14."""
    b = ModelBuilder("lstm_lm", seed, opset)
    tokens = b.input("tokens", [STEPS, 1], "int64")
    x = b.op("Gather", [b.const("embedding", b.uniform((VOCAB, HIDDEN), -INIT, INIT)), tokens],
             axis=0)
    for _ in range(LAYERS):
        x = _lstm_layer(b, x, HIDDEN)
    w = b.const("decoder_w", b.uniform((HIDDEN, VOCAB), -INIT, INIT))
    bias = b.const("decoder_b", b.uniform((VOCAB,), -INIT, INIT))
    b.op("Add", [b.op("MatMul", [x, w]), bias], out="logits")
    b.output("logits", [STEPS, 1, VOCAB])
    return b.model(f"PTB-small LSTM language model (opset {opset}), random weights")
