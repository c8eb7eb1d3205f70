"""Activation patterns exporters spell out: `mul(x, sigmoid(x))` (PyTorch's SiLU / swish,
EfficientNet's activation, exported as Sigmoid + Mul) becomes one elementwise `silu(x)`.

Why: x has two readers (the sigmoid and the mul), so fusion must materialize it and run the
activation as a kernel of its own, one more pass over the tensor after every convolution;
`silu(x)` has one reader and joins the convolution's epilogue."""

from __future__ import annotations

from ..ir import Graph


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
