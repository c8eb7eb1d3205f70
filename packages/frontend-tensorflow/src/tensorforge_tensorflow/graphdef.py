"""GraphDef plumbing that needs no TensorFlow runtime: tensor references, the data inputs of a
node, the nodes the outputs need in topological order, and the functions they call."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from .errors import ModelFileError

#: NodeDef attributes that name a function of the library, by op
FUNCTION_ATTRS = ("f", "body", "cond", "then_branch", "else_branch")


def tensor_ref(ref: str) -> str:
    """A tensor reference in canonical `node:index` form (`"x"` -> `"x:0"`)."""
    name, sep, index = ref.rpartition(":")
    if sep and index.isdigit():
        return f"{name}:{int(index)}"
    return f"{ref}:0"


def node_of(ref: str) -> str:
    return tensor_ref(ref).rpartition(":")[0]


def data_inputs(node: Any) -> list[str]:
    """The node's data inputs (control inputs `^name` dropped), canonical."""
    return [tensor_ref(i) for i in node.input if not i.startswith("^")]


def called_functions(node: Any) -> Iterator[str]:
    """Names of the library functions `node` calls (PartitionedCall f, While body and cond,
    If branches)."""
    for key in FUNCTION_ATTRS:
        if key in node.attr and node.attr[key].WhichOneof("value") == "func":
            yield node.attr[key].func.name


def needed_nodes(nodes: Iterable[Any], outputs: Iterable[str], label: str,
                 bound: Iterable[str] = ()) -> list[Any]:
    """The nodes that `outputs` (tensor references) depend on through data edges, in
    topological order; nodes named in `bound` are given (inputs) and not walked through."""
    by_name = {n.name: n for n in nodes}
    stop = set(bound)
    order: list[Any] = []
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    for out in outputs:
        root = node_of(out)
        if root not in by_name:
            raise ModelFileError(f"{label} has no node {root!r} (asked for as output "
                                 f"{out!r}); its nodes include "
                                 f"{', '.join(repr(n) for n in list(by_name)[:8])}")
        if state.get(root) == 2:
            continue
        state[root] = 1
        stack = [(root, iter(data_inputs(by_name[root]) if root not in stop else ()))]
        while stack:
            name, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                state[name] = 2
                order.append(by_name[name])
                continue
            dep = node_of(nxt)
            if dep not in by_name:
                raise ModelFileError(f"{label}: node {name!r} reads {nxt!r}, which no node of "
                                     "the graph produces; the graph is incomplete.")
            if state.get(dep) == 1:
                raise ModelFileError(
                    f"{label} has a cycle through {dep!r} and {name!r}: TensorFlow 1 control "
                    "flow (NextIteration/Merge loops) is not supported; save the model from "
                    "TensorFlow 2 (tf.function / Keras) so loops are While ops.")
            if state.get(dep) != 2:
                state[dep] = 1
                stack.append((dep, iter(data_inputs(by_name[dep]) if dep not in stop
                                        else ())))
    return order
