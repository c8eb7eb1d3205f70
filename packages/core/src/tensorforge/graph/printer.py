"""Readable text form of a graph (one node a line)."""

from __future__ import annotations

from typing import Any

from .ir import Graph


def _attr(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def graph_str(g: Graph) -> str:
    lines = [f"graph {g.name}(" + ", ".join(repr(v) for v in g.inputs) + "):"]
    for n in g.nodes:
        outs = ", ".join(f"%{o.name}: {o.dtype}{list(o.shape)}" for o in n.outputs)
        ins = ", ".join(f"%{v.name}" for v in n.inputs)
        attrs = ", ".join(f"{k}={_attr(v)}" for k, v in sorted(n.attrs.items()))
        attrs = f" {{{attrs}}}" if attrs else ""
        lines.append(f"  {outs} = {n.op}({ins}){attrs}")
    lines.append("  return " + ", ".join(f"%{v.name}" for v in g.outputs))
    return "\n".join(lines)
