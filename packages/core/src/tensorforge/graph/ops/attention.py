"""The fused attention op (`fuse_attention` makes it from the matmul/softmax/matmul pattern):
softmax(Q K^T * scale + bias [+ causal mask]) V with Q, K, V, the bias and the output read and
written through strided views (see `ops/attention.py`).

Inputs: q, k, v (the tensors the views read: a projection's output, or one fused QKV
projection for all three) and optionally the additive bias. Attributes: `batch`, `heads`,
`q_len`, `kv_len`, `head_dim`, `scale`, `causal` (None or the causal offset), `key_block`,
`views` ({"q", "k", "v", "bias", "out"} -> (offset, strides...) in elements), `out_shape`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ops.attention import AttentionSpec, View, attention, attention_reference
from ..registry import OpPattern, TypeList, register_op


def _int(x: Any) -> Any:
    """An int attribute, or a symbolic size's expression (`compiler.symbolic`) as it is."""
    return int(x) if isinstance(x, (int, np.integer)) else x


def spec_of(at: dict[str, Any]) -> AttentionSpec:
    causal = at.get("causal")
    return AttentionSpec(int(at["batch"]), int(at["heads"]), _int(at["q_len"]),
                         _int(at["kv_len"]), int(at["head_dim"]), float(at["scale"]),
                         None if causal is None else _int(causal), int(at.get("key_block", 64)))


def views_of(at: dict[str, Any]) -> dict[str, View]:
    return {k: View(_int(v[0]), tuple(_int(x) for x in v[1:]))
            for k, v in dict(at["views"]).items()}


def _infer(types: TypeList, at: dict[str, Any]) -> TypeList:
    return [(tuple(int(d) for d in at["out_shape"]), types[0][1])]


def _ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    bias = ins[3] if len(ins) > 3 else None
    return [attention_reference(ins[0], ins[1], ins[2], bias, spec_of(at), views_of(at),
                                at["out_shape"])]


def _compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    bias = ins[3] if len(ins) > 3 else None
    return [attention(ins[0], ins[1], ins[2], bias, spec_of(at), views_of(at),
                      at["out_shape"])]


register_op("attention", OpPattern.OPAQUE, _infer, _ref, _compute,
            doc="softmax(Q K^T * scale + bias [+ causal]) V through strided views of q, k, v "
            "[, bias]; attrs batch, heads, q_len, kv_len, head_dim, scale, causal, key_block, "
            "views, out_shape")
