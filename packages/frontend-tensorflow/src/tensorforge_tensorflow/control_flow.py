"""Graph plumbing, function calls and control flow, resolved at import:

* `(Stateful)PartitionedCall` (and an op named after a library function): the function's
  body converted inline;
* `(Stateless)If` with a predicate known at import: the chosen branch inline;
* `(Stateless)While` whose condition folds at import: unrolled, the body converted once per
  iteration (at most `MAX_ITERATIONS`), as TVM's relay frontend does for static loops;
* `TensorList*` (TensorArrays, e.g. a Keras RNN's inputs and outputs over time): Python lists
  of graph values, indexed by the constants the unrolled loop gives them."""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorforge.graph import Value

from .context import Context, Entry, TensorList, node_label, shape_of
from .dispatch import converter
from .errors import DynamicShapeError, TensorFlowImportError

MAX_ITERATIONS = 4096


@converter("Const")
def const(ctx: Context, node: Any) -> list[Entry]:
    arr = ctx.attr(node, "value")
    if arr.dtype.kind not in "biuf":
        raise ctx.fail(node, f"a constant of type {arr.dtype}")
    return [ctx.constant(arr, "")]


@converter("Placeholder")
def placeholder(ctx: Context, node: Any) -> list[Entry]:
    inputs = [i.node for i in ctx.model.inputs]
    raise DynamicShapeError(
        f"Placeholder {node.name!r} of {ctx.label} feeds the outputs but is not among its "
        f"inputs ({inputs}); name it with inputs=[...], or name fewer outputs.", node.name)


@converter("Identity", "StopGradient", "Snapshot", "PreventGradient", "EnsureShape",
           "CheckNumerics")
def identity(ctx: Context, node: Any) -> list[Entry]:
    return [ctx.entry(node, 0)]


@converter("IdentityN")
def identity_n(ctx: Context, node: Any) -> list[Entry]:
    return [ctx.entry(node, i) for i in range(ctx.n_inputs(node))]


@converter("NoOp")
def no_op(ctx: Context, node: Any) -> list[Entry]:
    return []


# function calls ---------------------------------------------------------------------------------
def call(ctx: Context, name: str, args: list[Entry], where: str) -> list[Entry]:
    """Convert library function `name` inline on `args`; its result entries. Its nodes are
    named `where/<node>`."""
    from .frontend import convert_nodes

    fn = ctx.model.function(name)
    if len(args) != len(fn.args):
        raise TensorFlowImportError(f"{node_label(ctx.node)} in {ctx.label} calls {name!r} with "
                                    f"{len(args)} arguments; it takes {len(fn.args)}.")
    saved = ctx.values, ctx.prefix, ctx.node
    ctx.values = {f"{a}:0": e for a, e in zip(fn.args, args)}
    ctx.prefix = where + "/"
    try:
        convert_nodes(ctx, fn.nodes)
        return [ctx.values[r] for r in fn.outputs]
    finally:
        ctx.values, ctx.prefix, ctx.node = saved


def _args(ctx: Context, node: Any, start: int = 0) -> list[Entry]:
    return [ctx.entry(node, i) for i in range(start, ctx.n_inputs(node))]


@converter("PartitionedCall", "StatefulPartitionedCall")
def partitioned_call(ctx: Context, node: Any) -> list[Entry]:
    return call(ctx, ctx.attr(node, "f"), _args(ctx, node), ctx._name(""))


def function_op(ctx: Context, node: Any) -> list[Entry]:
    """A node whose op is a library function's name: a call of that function."""
    return call(ctx, node.op, _args(ctx, node), ctx._name(""))


def _known_bool(ctx: Context, e: Entry, what: str) -> bool:
    v = ctx.tf(e)
    if not v.is_const:
        raise DynamicShapeError(
            f"{node_label(ctx.node)} in {ctx.label}: its {what} depends on run-time data; "
            "tensorforge resolves control flow at import, so the condition must follow from "
            "constants and static shapes (fix the input shapes, or unroll the loop when "
            "building the model).", ctx.node.name)
    # TensorFlow: a scalar is true when non-zero, any other tensor when it is not empty
    return bool(v.const.reshape(())) if v.const.ndim == 0 else v.const.size > 0


@converter("If", "StatelessIf")
def if_(ctx: Context, node: Any) -> list[Entry]:
    branch = "then_branch" if _known_bool(ctx, ctx.entry(node, 0), "predicate") else \
        "else_branch"
    return call(ctx, ctx.attr(node, branch), _args(ctx, node, 1), ctx._name(branch))


@converter("While", "StatelessWhile")
def while_(ctx: Context, node: Any) -> list[Entry]:
    cond, body = ctx.attr(node, "cond"), ctx.attr(node, "body")
    state = _args(ctx, node)
    where = ctx._name("")
    for it in range(MAX_ITERATIONS + 1):
        ctx.node = node
        (c,) = call(ctx, cond, state, f"{where}/cond{it}")
        ctx.node = node
        if not _known_bool(ctx, c, "loop condition"):
            return state
        if it == MAX_ITERATIONS:
            break
        state = call(ctx, body, state, f"{where}/iter{it}")
    raise TensorFlowImportError(
        f"{node_label(node)} in {ctx.label} runs more than {MAX_ITERATIONS} iterations; "
        "tensorforge unrolls loops at import. Shorten the sequence (input_shapes) or split "
        "the model.")


# TensorLists ------------------------------------------------------------------------------------
def _list(ctx: Context, node: Any, i: int = 0) -> TensorList:
    e = ctx.entry(node, i)
    if not isinstance(e, TensorList):
        raise ctx.fail(node, "a tensor where a TensorList is expected")
    return e


def _index(ctx: Context, node: Any, i: int, n: int) -> int:
    k = int(np.asarray(ctx.const(node, i, "index")).reshape(()))
    k = k + n if k < 0 else k
    if not 0 <= k < n:
        raise ctx.fail(node, f"index {k} of a TensorList of {n} items")
    return k


def _element_shape(ctx: Context, node: Any, i: int) -> tuple[int, ...] | None:
    shape = np.asarray(ctx.const(node, i, "element_shape")).reshape(-1)
    if shape.size == 0 and np.asarray(ctx.const(node, i)).ndim == 0:
        return None  # -1: unknown rank
    return None if (shape < 0).any() else tuple(int(s) for s in shape)


@converter("TensorListReserve")
def list_reserve(ctx: Context, node: Any) -> list[Entry]:
    n = int(np.asarray(ctx.const(node, 1, "num_elements")).reshape(()))
    return [TensorList((None,) * max(n, 0), ctx.dtype(node, "element_dtype"),
                       _element_shape(ctx, node, 0))]


@converter("EmptyTensorList")
def list_empty(ctx: Context, node: Any) -> list[Entry]:
    return [TensorList((), ctx.dtype(node, "element_dtype"), _element_shape(ctx, node, 0))]


@converter("TensorListFromTensor")
def list_from_tensor(ctx: Context, node: Any) -> list[Entry]:
    x = ctx.value(node, 0)
    rest = tuple(x.shape[1:])
    items = []
    for t in range(x.shape[0]):  # row t: a slice that fuses into its reader
        begin = (t,) + (0,) * len(rest)
        row = ctx.emit("strided_slice", x, begin=begin, step=(1,) * len(x.shape),
                       size=(1, *rest))
        items.append(ctx.reshape(row, rest))
    return [TensorList(tuple(items), x.dtype, rest)]


@converter("TensorListGetItem")
def list_get(ctx: Context, node: Any) -> list[Entry]:
    lst = _list(ctx, node)
    item = lst.items[_index(ctx, node, 1, len(lst.items))]
    if item is None:
        raise ctx.fail(node, "a read of a TensorList item never written")
    return [item]


@converter("TensorListSetItem")
def list_set(ctx: Context, node: Any) -> list[Entry]:
    lst = _list(ctx, node)
    k = int(np.asarray(ctx.const(node, 1, "index")).reshape(()))
    if k < 0:
        raise ctx.fail(node, f"index {k}")
    return [lst.set(k, ctx.entry(node, 2))]


@converter("TensorListPushBack")
def list_push(ctx: Context, node: Any) -> list[Entry]:
    lst = _list(ctx, node)
    return [lst.set(len(lst.items), ctx.entry(node, 1))]


@converter("TensorListLength")
def list_length(ctx: Context, node: Any) -> list[Entry]:
    return [ctx.constant(np.array(len(_list(ctx, node).items), "int32"), "length")]


@converter("TensorListStack")
def list_stack(ctx: Context, node: Any) -> list[Entry]:
    lst = _list(ctx, node)
    if any(item is None for item in lst.items) or not lst.items:
        missing = [k for k, item in enumerate(lst.items) if item is None]
        raise ctx.fail(node, f"a stack of a TensorList with unwritten items {missing}"
                       if lst.items else "a stack of an empty TensorList")
    vals: list[Value] = [ctx.tf(item) for item in lst.items]
    shape = shape_of(vals[0])
    parts = [ctx.reshape(v, (1, *shape)) for v in vals]
    if len(parts) == 1:
        return [parts[0]]
    return [ctx.emit_multi("concat", parts, {"axis": 0})[0]]
