"""Failed kernel statuses -> clear errors, for the checks generated code makes on its data.

A kernel returns status k > 0 when its k-th assertion fails (`CFunction`). An assertion
message that starts with ``check:`` is the JSON description of a data check that
`tensorforge.te.runtime_check` put into the generated code:

- ``{"kind": "index", "op": "Gather", "axis": 0, "bound": 10000, "tensor": "tokens",
  "node": 0, "component": null}``: an index read from the data was outside
  ``[-bound, bound - 1]`` (ONNX's range: negative indices count from the end). `component`
  is the position in the last dimension of a GatherND/ScatterND index tuple.
- ``{"kind": "div_zero", "op": "Div", "tensor": "b", "node": 0}``: an integer division by 0.

`tensor` names the kernel parameter that holds the checked data; the offending value is
found by scanning that argument with numpy (only on the error path, so the check itself
stays a compare and a branch in the kernel). `node` is the position of the graph node in its
fused group; the executor passes the group's node names so the error names the model's
node. `CFunction.error` calls `check_error` first. Kept numpy-only: a loaded package uses it
without the compiler.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from tensorforge.errors import DataCheckError

from .cfunction import KernelError

__all__ = ["CHECK_PREFIX", "KernelCheckError", "check_error", "decode_check", "node_label"]

CHECK_PREFIX = "check:"  # (the same prefix as tensorforge.te.intrin.CHECK_PREFIX)


class KernelCheckError(KernelError, DataCheckError):
    """A kernel stopped because its input data failed a check (an index out of range, an
    integer division by zero): the data is wrong, not the compiler. `info` is the check's
    description, `value` the offending value when it could be found."""

    def __init__(self, message: str, kernel: str, status: int, context: str = "",
                 info: dict[str, Any] | None = None, value: int | None = None):
        super().__init__(message, kernel, status, context)
        self.info = info or {}
        self.value = value


def decode_check(message: str) -> dict[str, Any] | None:
    """The description of a data check, or None for another assertion message."""
    if not message.startswith(CHECK_PREFIX):
        return None
    try:
        info = json.loads(message[len(CHECK_PREFIX):])
    except ValueError:
        return None
    return info if isinstance(info, dict) else None


def node_label(name: str) -> str:
    """The model's node name in a graph node name: the ONNX frontend names graph nodes
    `<onnx node>:<graph op>`."""
    return name.rpartition(":")[0] or name


def check_error(fn: Any, status: int, context: str = "", args: Sequence[Any] = (),
                nodes: Sequence[str] | None = None) -> KernelCheckError | None:
    """The error for `status` returned by kernel `fn` (a `CFunction`: name, asserts, params)
    called with `args` when it is a failed data check, else None. `nodes`: the graph nodes of
    the kernel's group (the executor knows them), `context`: where it ran."""
    asserts = getattr(fn, "asserts", ())
    if not 0 < status <= len(asserts):
        return None
    info = decode_check(asserts[status - 1])
    if info is None:
        return None
    data = _argument(info.get("tensor"), getattr(fn, "params", ()), args)
    where = _where(fn.name, info, nodes, context)

    def err(what: str, value: int | None = None) -> KernelCheckError:
        return KernelCheckError(f"{where}: {what}", fn.name, status, context, info, value)

    if info.get("kind") == "index":
        return _index_error(err, info, data)
    if info.get("kind") == "div_zero":
        found = ""
        if data is not None:
            zeros = np.argwhere(np.asarray(data) == 0)
            if len(zeros):
                found = f" (the divisor is 0 at position {tuple(int(i) for i in zeros[0])})"
        return err(f"integer division by zero{found}")
    return err(f"data check failed: {info}")


def _where(kernel: str, info: dict[str, Any], nodes: Sequence[str] | None,
           context: str) -> str:
    op = info.get("op", "kernel")
    pos = info.get("node")
    if nodes is not None and isinstance(pos, int) and 0 <= pos < len(nodes):
        return f"{op} node {node_label(nodes[pos])!r}"
    return f"{op} in {context or f'kernel {kernel!r}'}"


def _argument(name: Any, params: Sequence[Any], args: Sequence[Any]) -> np.ndarray | None:
    for p, a in zip(params, args):
        if getattr(p, "name", None) == name and isinstance(a, np.ndarray):
            return a
    return None


def _index_error(err: Any, info: dict[str, Any], data: np.ndarray | None) -> KernelCheckError:
    n = int(info.get("bound", 0))
    comp = info.get("component")
    rng = f"out of range [{-n}, {n - 1}] on axis {info.get('axis', 0)}"
    if data is not None and data.dtype.kind in "iu" and data.size:
        vals = data[..., comp] if comp is not None and data.ndim else data
        bad = np.argwhere((vals < -n) | (vals >= n))
        if len(bad):
            value = int(vals[tuple(bad[0])])
            return err(f"index {value} {rng}", value)
    return err(f"an index is {rng}")
