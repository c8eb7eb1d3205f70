"""A BERT-base-like encoder (Devlin et al. 2019), as HuggingFace's `BertModel` exports:
token, position and segment embeddings, LayerNorm, 12 post-LN layers (d 768, 12 heads,
feed-forward 3072, erf GELU), the padding mask as an additive bias on the attention scores.

input_ids, token_type_ids, attention_mask (1 x seq, int64) -> last_hidden_state (1 x seq x d).
With `dynamic=1` the sequence length is a symbolic dimension `seq` of the inputs (as
`torch.onnx.export(..., dynamic_axes=...)` writes it): reshapes take -1 for it and the
position ids are a `Slice` of 0..511 up to `Shape(input_ids)[1]`; `seq` is then only the
length `example_inputs` uses.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from ._transformer import MASK_VALUE, TransformerBuilder

CONFIG = {"layers": 12, "seq": 128, "d": 768, "heads": 12, "hidden": 3072, "vocab": 30522}
MAX_POSITIONS, TYPES = 512, 2


def inputs(seq: int = 128, dynamic: int = 0, **_: Any
           ) -> dict[str, tuple[tuple[int | str, ...], str]]:
    dim: int | str = "seq" if dynamic else seq
    return {k: ((1, dim), "int64") for k in ("input_ids", "token_type_ids", "attention_mask")}


def example_inputs(rng: np.random.Generator, seq: int = 128, vocab: int = 30522,
                   **_: Any) -> dict[str, np.ndarray]:
    """Random token ids, two segments, the last eighth of the positions padding."""
    ids = rng.integers(0, vocab, (1, seq), dtype=np.int64)
    types = (np.arange(seq) >= seq // 2).astype(np.int64).reshape(1, seq)
    mask = (np.arange(seq) < seq - seq // 8).astype(np.int64).reshape(1, seq)
    return {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}


def build(seed: int = 0, opset: int = 17, layers: int = 12, seq: int = 128, d: int = 768,
          heads: int = 12, hidden: int = 3072, vocab: int = 30522, dynamic: int = 0
          ) -> onnx.ModelProto:
    if seq > MAX_POSITIONS:
        raise ValueError(f"bert: seq {seq} is longer than {MAX_POSITIONS} positions")
    b = TransformerBuilder("bert", seed, opset)
    dim: int | str = "seq" if dynamic else seq
    ids = b.input("input_ids", [1, dim], "int64")
    types = b.input("token_type_ids", [1, dim], "int64")
    mask = b.input("attention_mask", [1, dim], "int64")
    emb = b.op("Gather", [b.const("word_emb", b.normal((vocab, d), 0.5)), ids], axis=0)
    if dynamic:  # positions 0 .. Shape(input_ids)[1] - 1
        length = b.op("Slice", [b.op("Shape", [ids]), b.const("one_i", np.array([1])),
                                b.const("two_i", np.array([2]))])
        position_ids = b.op("Slice", [b.const("all_positions",
                                              np.arange(MAX_POSITIONS, dtype=np.int64)[None]),
                                      b.const("zero_i", np.array([0])), length,
                                      b.const("axis_1", np.array([1]))])
        seq = -1  # the reshapes' sequence dimension: whatever is left
    else:
        position_ids = b.const("position_ids", np.arange(seq, dtype=np.int64)[None])
    pos = b.op("Gather", [b.const("pos_emb", b.normal((MAX_POSITIONS, d), 0.5)), position_ids],
               axis=0)
    typ = b.op("Gather", [b.const("type_emb", b.normal((TYPES, d), 0.5)), types], axis=0)
    x = b.layer_norm(b.op("Add", [b.op("Add", [emb, typ]), pos]), d, 1e-12)
    # the extended mask: (1 - mask) * min, broadcast over heads and queries
    m = b.op("Cast", [b.op("Unsqueeze", [mask, b.const("axes", np.array([1, 2], np.int64))])],
             to=onnx.TensorProto.FLOAT)
    bias = b.op("Mul", [b.op("Sub", [b.scalar("one", 1.0), m]),
                        b.scalar("mask_value", MASK_VALUE)])
    for _ in range(layers):
        x = b.post_ln_block(x, seq, d, heads, hidden, bias)
    b.op("Identity", [x], out="last_hidden_state")
    b.output("last_hidden_state", [1, dim, d])
    return b.model(f"BERT-like encoder ({layers} layers, d {d}, {heads} heads, seq {dim}), "
                   "random weights")
