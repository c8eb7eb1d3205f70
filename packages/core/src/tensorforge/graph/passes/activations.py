"""Activation patterns exporters spell out: `mul(x, sigmoid(x))` (PyTorch's SiLU / swish,
EfficientNet's activation, exported as Sigmoid + Mul) becomes one elementwise `silu(x)`.

Why: x has two readers (the sigmoid and the mul), so fusion must materialize it and run the
activation as a kernel of its own, one more pass over the tensor after every convolution;
`silu(x)` has one reader and joins the convolution's epilogue.

`pow(x, 3)` (GPT-2's tanh GELU, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))) becomes
`mul(mul(x, x), x)`: a float pow is `llvm.pow`, which no CPU vectorizes (16 `powf` calls per
vector), and in GPT-2's feed-forward epilogue it took half of the 128 x 768 x 3072 kernel's
time (66 GFLOP/s, against 130 for the same product with BERT's erf GELU)."""

from __future__ import annotations

import numpy as np

from ..ir import Graph
from .simplify import make_node

#: constant exponents `expand_small_powers` rewrites as products (ONNX Runtime's Pow
#: special-cases 2 and 3 the same way)
SMALL_POWERS = (2.0, 3.0)


def combine_swish(g: Graph) -> Graph:
    """Rewrite `mul(x, sigmoid(x))` (either order) to `silu(x)` where the sigmoid's output
    has no other reader and is not a graph output."""
    consumers = g.consumers()
    outputs = {id(v) for v in g.outputs}
    dropped: set[int] = set()
    for n in g.nodes:
        if n.op != "mul" or len(n.inputs) != 2:
            continue
        for k in (0, 1):
            s, x = n.inputs[k], n.inputs[1 - k]
            p = s.producer
            if (p is None or p.op != "sigmoid" or p.inputs[0] is not x or id(s) in outputs
                    or len(consumers.get(s, [])) != 1 or x.shape != s.shape):
                continue
            n.op, n.inputs, n.attrs = "silu", [x], {}
            dropped.add(id(p))
            break
    if dropped:
        g.nodes = [n for n in g.nodes if id(n) not in dropped]
    return g


def expand_small_powers(g: Graph) -> Graph:
    """Rewrite `pow(x, c)` of a float `x` and a constant `c` whose elements all equal 2 or 3
    (`SMALL_POWERS`) to `mul(x, x)` / `mul(mul(x, x), x)` where the result has x's shape
    and type (one rounding more than a correctly rounded pow: 2 ulp, away from subnormals)."""
    out = []
    for n in g.nodes:
        if n.op == "pow" and len(n.inputs) == 2:
            x, c = n.inputs
            k = _uniform_exponent(c)
            if (k in SMALL_POWERS and np.dtype(x.dtype).kind == "f"
                    and tuple(n.outputs[0].shape) == tuple(x.shape)
                    and n.outputs[0].dtype == x.dtype):
                if k == 3.0:
                    sq = make_node(g, "mul", [x, x], name=f"{n.name}_square")
                    out.append(sq)
                    n.op, n.inputs, n.attrs = "mul", [sq.outputs[0], x], {}
                else:
                    n.op, n.inputs, n.attrs = "mul", [x, x], {}
        out.append(n)
    g.nodes = out
    return g


def _uniform_exponent(c: object) -> float | None:
    """The value every element of constant `c` holds, None when `c` is not a constant or its
    elements differ."""
    arr = getattr(c, "const", None)
    if arr is None or not getattr(c, "is_const", False):
        return None
    a = np.asarray(arr)
    if a.size == 0 or a.dtype.kind not in "fiu":
        return None
    first = float(a.flat[0])
    return first if bool(np.all(a == first)) else None
