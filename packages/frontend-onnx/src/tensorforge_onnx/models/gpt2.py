"""A GPT-2-small-like decoder (Radford et al. 2019), as HuggingFace's `GPT2LMHeadModel`
exports: token and position embeddings, 12 pre-LN layers (d 768, 12 heads, feed-forward
3072, tanh GELU; Q, K and V from one projection and `Split`), the causal mask applied
with `Where`, a final LayerNorm and the language
model head tied to the token embedding.

input_ids (1 x seq, int64) -> logits (1 x seq x vocab)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from ._transformer import TransformerBuilder

CONFIG = {"layers": 12, "seq": 128, "d": 768, "heads": 12, "hidden": 3072, "vocab": 50257}
MAX_POSITIONS = 1024


def inputs(seq: int = 128, **_: Any) -> dict[str, tuple[tuple[int, ...], str]]:
    return {"input_ids": ((1, seq), "int64")}


def example_inputs(rng: np.random.Generator, seq: int = 128, vocab: int = 50257,
                   **_: Any) -> dict[str, np.ndarray]:
    return {"input_ids": rng.integers(0, vocab, (1, seq), dtype=np.int64)}


def build(seed: int = 0, opset: int = 17, layers: int = 12, seq: int = 128, d: int = 768,
          heads: int = 12, hidden: int = 3072, vocab: int = 50257) -> onnx.ModelProto:
    if seq > MAX_POSITIONS:
        raise ValueError(f"gpt2: seq {seq} is longer than {MAX_POSITIONS} positions")
    b = TransformerBuilder("gpt2", seed, opset)
    ids = b.input("input_ids", [1, seq], "int64")
    wte = b.const("wte", b.normal((vocab, d), 0.1))
    x = b.op("Gather", [wte, ids], axis=0)
    pos = b.op("Gather", [b.const("wpe", b.normal((MAX_POSITIONS, d), 0.1)),
                          b.const("position_ids", np.arange(seq, dtype=np.int64)[None])],
               axis=0)
    x = b.op("Add", [x, pos])
    causal = b.const("causal_mask", np.tril(np.ones((seq, seq), bool))[None, None])
    for _ in range(layers):
        x = b.pre_ln_block(x, seq, d, heads, hidden, layers, gelu="tanh", causal=causal,
                           fused_qkv=True)
    x = b.layer_norm(x, d)
    # the head tied to the token embedding: logits = x @ wte^T
    b.op("MatMul", [x, b.op("Transpose", [wte], perm=[1, 0])], out="logits")
    b.output("logits", [1, seq, vocab])
    return b.model(f"GPT-2-like decoder ({layers} layers, d {d}, {heads} heads, seq {seq}, "
                   f"vocab {vocab}), random weights")
