"""`load`: a TensorFlow or Keras model -> a `tensorforge.graph.Graph` with static shapes.

Reading (loader.py) yields a frozen GraphDef; every op it needs, in the graph and in the
functions it calls, is checked against the converter table first (one error lists them all),
then the nodes the outputs depend on are converted in topological order. Graph inputs keep
their TensorFlow (Keras) names and layouts; outputs are named `output_0`... (a SavedModel
signature's keys; a .pb's output node names)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from tensorforge.errors import TensorforgeError
from tensorforge.graph import Graph, Value

from .context import Context, Nchw, node_label
from .dispatch import table
from .errors import DynamicShapeError, TensorFlowImportError, UnsupportedOpError
from .graphdef import tensor_ref
from .loader import TFModel, check_input_names, read_model, static_shape


def load(model: Any, input_shapes: Mapping[str, Sequence[int]] | None = None,
         signature: str | None = None, inputs: Sequence[str] | None = None,
         outputs: Sequence[str] | None = None, **options: Any) -> Graph:
    """Import `model`: a Keras model, a .keras/.h5 file, a SavedModel directory (its
    `signature`, default `serving_default`), a frozen GraphDef .pb (`inputs`: Placeholder
    names, default all; `outputs`: tensor names, default the graph's sinks), a concrete
    function or a GraphDef. `input_shapes` fixes unknown dims (the batch is 1 by default)."""
    if options:
        raise TensorFlowImportError(f"unknown option(s) {sorted(options)} of the TensorFlow "
                                    "frontend; it takes input_shapes, signature, inputs, "
                                    "outputs.")
    shapes = dict(input_shapes or {})
    return convert(read_model(model, shapes, signature, inputs, outputs), shapes)


def unsupported_ops(model: Any, signature: str | None = None) -> list[str]:
    """Every op of `model` the frontend cannot convert, with its nodes (for tforge inspect):
    `["Op (node 'a', 'b')", ...]`, empty when all are supported."""
    shapes: dict[str, Sequence[int]] = {}
    try:
        tfm = read_model(model, shapes, signature)
    except DynamicShapeError:  # a Keras model traced at unknown shapes: not an op question
        return []
    return [f"{op} ({_nodes(names)})" for op, names in sorted(_unsupported(tfm).items())]


def _unsupported(tfm: TFModel) -> dict[str, list[str]]:
    tab = table()
    missing: dict[str, list[str]] = {}
    for n, where in tfm.all_nodes():
        if n.op not in tab and not tfm.has_function(n.op):
            shown = repr(n.name) if where == tfm.label else f"{n.name!r} in {where}"
            missing.setdefault(n.op, []).append(shown)
    return missing


def _nodes(names: list[str]) -> str:
    shown = ", ".join(names[:5])
    more = f", ... ({len(names)} in all)" if len(names) > 5 else ""
    return f"node{'s' if len(names) > 1 else ''} {shown}{more}"


def check_supported(tfm: TFModel) -> None:
    """Raise one error naming every unsupported op of the model and where it is."""
    missing = _unsupported(tfm)
    if not missing:
        return
    parts = [f"{op} ({_nodes(names)})" for op, names in sorted(missing.items())]
    raise UnsupportedOpError(
        f"{tfm.label} uses {len(parts)} unsupported op{'s' if len(parts) > 1 else ''}: "
        f"{'; '.join(parts)}. tensorforge_tensorflow.supported_ops() lists the "
        f"{len(table())} ops the TensorFlow frontend converts. Express these ops with "
        "supported ones before saving, or add a converter in packages/frontend-tensorflow "
        "(see docs/plugin-authoring.md).")


# conversion ---------------------------------------------------------------------------------
def convert(tfm: TFModel, input_shapes: dict[str, Sequence[int]]) -> Graph:
    check_supported(tfm)
    check_input_names(input_shapes, tfm.inputs, tfm.label)
    g = Graph(_graph_name(tfm.label))
    ctx = Context(g, tfm)
    for spec in tfm.inputs:
        shape = static_shape(spec, input_shapes, tfm.label, tfm.inputs)
        ctx.values[tensor_ref(spec.node)] = g.add_input(spec.name, shape, spec.dtype)
    convert_nodes(ctx, tfm.main_nodes())
    ctx.node, ctx.prefix = None, ""
    seen: list[Value] = []
    for name, ref in tfm.outputs:
        if ref not in ctx.values:
            raise TensorFlowImportError(f"output {name!r} ({ref}) of {tfm.label} is not "
                                        "produced by the graph (an op with fewer results?)")
        g.outputs.append(ctx.output(ctx.tf(ctx.values[ref]), name, seen))
    return g


def _graph_name(label: str) -> str:
    quoted = label.split("'")
    return os.path.splitext(quoted[1])[0] if len(quoted) > 2 else "main"


def convert_nodes(ctx: Context, nodes: list[Any]) -> None:
    """Convert `nodes` (in topological order) into ctx.values; names already bound (inputs,
    function arguments) are skipped."""
    from .control_flow import function_op

    tab = table()
    for n in nodes:
        if f"{n.name}:0" in ctx.values:
            continue
        ctx.node, ctx.fresh = n, set()
        fn = tab.get(n.op) or function_op
        try:
            outs = fn(ctx, n)
        except TensorFlowImportError:
            raise
        except TensorforgeError as e:
            raise TensorFlowImportError(f"{node_label(n)} in {ctx.label} could not be "
                                        f"converted: {e}") from e
        for k, e in enumerate(outs):
            v = e.value if isinstance(e, Nchw) else e
            if isinstance(v, Value) and id(v) in ctx.fresh:
                _rename(ctx, v, ctx.prefix + (n.name if k == 0 else f"{n.name}:{k}"))
            ctx.values[f"{n.name}:{k}"] = e


def _rename(ctx: Context, v: Value, name: str) -> None:
    """Give a value made by the node being converted the node's name (readable graphs)."""
    g = ctx.g
    ctx.fresh.discard(id(v))
    if v.name == name or v in g.inputs:
        return
    g._names.discard(v.name)
    v.name = g.unique_name(name)
