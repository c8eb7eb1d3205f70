"""Transformer layers for the model zoo, written as the ONNX a PyTorch export produces
(HuggingFace-style graphs at opset 17): linear layers as `MatMul` + `Add`, heads split by
`Reshape` + `Transpose`, attention as `MatMul`, a scale, a mask and `Softmax`,
`LayerNormalization`, and GELU written out (erf or tanh form). ONNX Runtime fuses these
patterns in its default graph optimizations, which makes it the baseline to beat.

Weights: linear layers N(0, 1/fan_in) (so activations stay of order one), the output
projections of a residual branch scaled by `residual_scale` (GPT-2's 1/sqrt(2 * layers) for
the pre-LN models), LayerNorm gains near one."""

from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from ._builder import ModelBuilder

#: the additive bias of a masked position, as HuggingFace exports it (float32's minimum)
MASK_VALUE = float(np.finfo(np.float32).min)


class TransformerBuilder(ModelBuilder):
    """`ModelBuilder` plus the layers of BERT, GPT-2 and ViT; tensors are (1, seq, d)."""

    def const(self, base: str, array: np.ndarray) -> str:
        """As `ModelBuilder.const`, but a 0-d array stays a scalar (a `Gather` index)."""
        name = self.fresh(base)
        self.inits.append(numpy_helper.from_array(np.array(array, order="C"), name))
        return name

    def shape(self, dims: list[int]) -> str:
        return self.const("shape", np.array(dims, np.int64))

    def scalar(self, base: str, value: float) -> str:
        return self.const(base, np.array(value, np.float32))

    def linear(self, x: str, din: int, dout: int, scale: float = 1.0) -> str:
        """x @ W + b with W (din, dout) N(0, scale^2 / din)."""
        w = self.const("linear_w", self.normal((din, dout), scale / np.sqrt(din)))
        b = self.const("linear_b", self.normal((dout,), 0.02))
        return self.op("Add", [self.op("MatMul", [x, w]), b])

    def layer_norm(self, x: str, d: int, eps: float = 1e-5) -> str:
        gamma = self.const("ln_gamma", self.uniform((d,), 0.8, 1.2))
        beta = self.const("ln_beta", self.normal((d,), 0.05))
        return self.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=eps)

    def gelu_erf(self, x: str) -> str:
        """0.5 * x * (1 + erf(x / sqrt(2))), as torch exports `nn.GELU()` at opset 17."""
        e = self.op("Erf", [self.op("Div", [x, self.scalar("sqrt2", np.sqrt(2.0))])])
        y = self.op("Mul", [x, self.op("Add", [e, self.scalar("one", 1.0)])])
        return self.op("Mul", [y, self.scalar("half", 0.5)])

    def gelu_tanh(self, x: str) -> str:
        """GPT-2's gelu_new: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
        cube = self.op("Pow", [x, self.scalar("three", 3.0)])
        inner = self.op("Add", [x, self.op("Mul", [cube, self.scalar("c", 0.044715)])])
        t = self.op("Tanh", [self.op("Mul", [inner, self.scalar("k", np.sqrt(2 / np.pi))])])
        y = self.op("Mul", [self.op("Mul", [x, self.scalar("half", 0.5)]),
                            self.op("Add", [t, self.scalar("one", 1.0)])])
        return y

    def split_heads(self, x: str, seq: int, heads: int, dh: int, key: bool = False) -> str:
        """(1, S, H*Dh) -> (1, H, S, Dh), or (1, H, Dh, S) for keys (`key`)."""
        x = self.op("Reshape", [x, self.shape([1, seq, heads, dh])])
        return self.op("Transpose", [x], perm=[0, 2, 3, 1] if key else [0, 2, 1, 3])

    def self_attention(self, x: str, seq: int, d: int, heads: int, out_scale: float = 1.0,
                       mask_bias: str | None = None, causal: str | None = None,
                       fused_qkv: bool = False) -> str:
        """Multi-head self-attention: Q/K/V projections (`fused_qkv`: one projection to 3d
        and a `Split`, as GPT-2's c_attn), softmax(QK^T/sqrt(Dh) + mask) V, the output
        projection. `mask_bias`: an additive (1, 1, 1|S, S) bias; `causal`: a bool
        (1, 1, S, S) constant, True where a query may attend (applied with `Where`, as GPT-2
        exports it)."""
        dh = d // heads
        if fused_qkv:
            q, k, v = self.op("Split", [self.linear(x, d, 3 * d)], n_out=3, axis=2)
        else:
            q, k, v = (self.linear(x, d, d) for _ in range(3))
        q = self.split_heads(q, seq, heads, dh)
        k = self.split_heads(k, seq, heads, dh, key=True)
        v = self.split_heads(v, seq, heads, dh)
        scores = self.op("Div", [self.op("MatMul", [q, k]),
                                 self.scalar("sqrt_dh", np.sqrt(float(dh)))])
        if causal is not None:
            scores = self.op("Where", [causal, scores, self.scalar("mask_value", MASK_VALUE)])
        if mask_bias is not None:
            scores = self.op("Add", [scores, mask_bias])
        probs = self.op("Softmax", [scores], axis=-1)
        ctx = self.op("Transpose", [self.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        ctx = self.op("Reshape", [ctx, self.shape([1, seq, d])])
        return self.linear(ctx, d, d, out_scale)

    def mlp(self, x: str, d: int, hidden: int, gelu: str = "erf", out_scale: float = 1.0
            ) -> str:
        h = self.linear(x, d, hidden)
        h = self.gelu_erf(h) if gelu == "erf" else self.gelu_tanh(h)
        return self.linear(h, hidden, d, out_scale)

    def pre_ln_block(self, x: str, seq: int, d: int, heads: int, hidden: int, layers: int,
                     gelu: str = "erf", causal: str | None = None, eps: float = 1e-5,
                     fused_qkv: bool = False) -> str:
        """x + attn(LN(x)); then x + mlp(LN(x)) (GPT-2, ViT)."""
        scale = 1.0 / np.sqrt(2.0 * layers)
        a = self.self_attention(self.layer_norm(x, d, eps), seq, d, heads, scale,
                                causal=causal, fused_qkv=fused_qkv)
        x = self.op("Add", [x, a])
        m = self.mlp(self.layer_norm(x, d, eps), d, hidden, gelu, scale)
        return self.op("Add", [x, m])

    def post_ln_block(self, x: str, seq: int, d: int, heads: int, hidden: int,
                      mask_bias: str | None, eps: float = 1e-12) -> str:
        """LN(x + attn(x)); then LN(x + mlp(x)) (BERT)."""
        a = self.self_attention(x, seq, d, heads, mask_bias=mask_bias)
        x = self.layer_norm(self.op("Add", [a, x]), d, eps)
        m = self.mlp(x, d, hidden)
        return self.layer_norm(self.op("Add", [m, x]), d, eps)
