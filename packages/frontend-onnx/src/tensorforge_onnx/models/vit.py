"""ViT-B/16 (Dosovitskiy et al. 2021), as torchvision's `vit_b_16` exports: 16x16 patches
by a strided `Conv` (768 channels), a class token, learned position embeddings, 12 pre-LN
layers (12 heads, feed-forward 3072, erf GELU), a final LayerNorm and the classifier on the
class token.

input (1x3x224x224) -> logits (1x1000); the sequence is 197 (196 patches + the class token).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from ._transformer import TransformerBuilder

CONFIG = {"layers": 12, "image": 224, "patch": 16, "d": 768, "heads": 12, "hidden": 3072,
          "classes": 1000}


def inputs(image: int = 224, **_: Any) -> dict[str, tuple[tuple[int, ...], str]]:
    return {"input": ((1, 3, image, image), "float32")}


def example_inputs(rng: np.random.Generator, image: int = 224, **_: Any
                   ) -> dict[str, np.ndarray]:
    return {"input": rng.standard_normal((1, 3, image, image), dtype=np.float32)}


def build(seed: int = 0, opset: int = 17, layers: int = 12, image: int = 224, patch: int = 16,
          d: int = 768, heads: int = 12, hidden: int = 3072, classes: int = 1000
          ) -> onnx.ModelProto:
    b = TransformerBuilder("vit_b_16", seed, opset)
    x = b.input("input", [1, 3, image, image])
    grid = image // patch
    seq = grid * grid + 1
    w = b.const("patch_w", b.normal((d, 3, patch, patch), 1 / np.sqrt(3 * patch * patch)))
    x = b.op("Conv", [x, w, b.const("patch_b", b.normal((d,), 0.02))],
             kernel_shape=[patch, patch], strides=[patch, patch])
    x = b.op("Transpose", [b.op("Reshape", [x, b.shape([1, d, grid * grid])])], perm=[0, 2, 1])
    cls = b.const("class_token", b.normal((1, 1, d), 0.5))
    x = b.op("Concat", [cls, x], axis=1)
    x = b.op("Add", [x, b.const("pos_emb", b.normal((1, seq, d), 0.3))])
    for _ in range(layers):
        x = b.pre_ln_block(x, seq, d, heads, hidden, layers, gelu="erf", eps=1e-6)
    x = b.layer_norm(x, d, 1e-6)
    x = b.op("Gather", [x, b.const("cls_index", np.array(0, np.int64))], axis=1)
    b.op("Gemm", [x, b.const("head_w", b.normal((classes, d), 1 / np.sqrt(d))),
                  b.const("head_b", b.normal((classes,), 0.02))], transB=1, out="logits")
    b.output("logits", [1, classes])
    return b.model(f"ViT-B/16-like ({layers} layers, d {d}, {heads} heads, image {image}), "
                   "random weights")
