"""Checks of an ONNX model before any converter runs, so a malformed model is an
`InvalidModelError` naming the node or value and what to do, never a KeyError, a
ZeroDivisionError or a wrong graph.

In order: the opset and IR version (not newer than the onnx library knows), initializers
(a known element type, data that fits the dims), value names (one producer per value: no
node writes a name another node, a graph input or an initializer already has), node inputs
and graph outputs that something produces, the node order (sorted topologically, as ONNX
Runtime does; a cycle is an error naming its nodes), every node against its op's schema
(input counts, required and unknown attributes: `onnx.checker.check_node`), positive
`kernel_shape`/`strides`/`dilations`/`group` and non-negative pads, and ONNX's strict type
and shape inference over a light copy of the graph (large weights as typed inputs), in a
child process (`isolated.py`: onnx's C++ aborts on some malformed shapes)."""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from tensorforge.graph.narrow_types import is_narrow

from .context import node_label
from .errors import InvalidModelError
from .isolated import InferenceCrash, infer_shapes_isolated
from .validate_rules import check_rules

__all__ = ["MAX_OPSET", "check_text", "check_versions", "initializer_arrays", "validate_model"]

#: The newest default-domain opset the installed onnx library describes: past it, an op may
#: have changed in a way neither onnx nor the converters know.
MAX_OPSET = onnx.defs.onnx_opset_version()
_INLINE_ELEMENTS = 4096  # initializers up to this size keep their data for shape inference
_WINDOW_OPS = {"Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool", "MaxUnpool",
               "ConvInteger", "QLinearConv", "MaxRoiPool"}
_POSITIVE_ATTRS = ("kernel_shape", "strides", "dilations")
_HINT = ("Re-export the model, or find the problem with onnx.checker.check_model(model, "
         "full_check=True).")


def _node_name(n: onnx.NodeProto) -> str:
    return f"node {n.name or (n.output[0] if n.output else '?')!r} ({n.op_type})"


def check_text(m: onnx.ModelProto, label: str) -> None:
    """Every string in the model is UTF-8. Protobuf does not check proto2 strings when it
    parses: a damaged name comes back as bytes, or raises UnicodeDecodeError when read, and
    would fail somewhere later. Walks every message field (tensor data are bytes: skipped)."""
    todo: list[tuple[Any, str]] = [(m, "the model")]
    while todo:
        msg, where = todo.pop()
        try:
            for fd, value in msg.ListFields():
                here = f"{where}.{fd.name}" if where != "the model" else fd.name
                items = list(value) if fd.is_repeated else [value]
                if fd.type == fd.TYPE_MESSAGE:
                    todo.extend((x, f"{here}[{k}]" if fd.is_repeated else here)
                                for k, x in enumerate(items))
                elif fd.type == fd.TYPE_STRING and any(not isinstance(x, str) for x in items):
                    raise UnicodeDecodeError("utf-8", b"", 0, 1, here)
        except UnicodeDecodeError as e:
            raise InvalidModelError(
                f"{label} holds text that is not UTF-8 (in {e.reason if e.reason else where}"
                "): the file is damaged or was not written by an ONNX exporter. Export or "
                "download it again.") from None
    for n in m.graph.node:
        for a in n.attribute:
            for raw in (a.s, *a.strings):
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError:
                    raise InvalidModelError(
                        f"{node_label(n)} in {label}: attribute {a.name!r} holds text that is "
                        "not UTF-8; the file is damaged. Export or download it again.") from None


def check_versions(m: onnx.ModelProto, label: str, opset: int) -> None:
    """The IR version and default-domain opset are ones the onnx library knows."""
    if not 1 <= m.ir_version <= onnx.IR_VERSION:
        raise InvalidModelError(
            f"{label} has IR version {m.ir_version}; this onnx library reads 1 to "
            f"{onnx.IR_VERSION}. Re-export the model (or upgrade onnx if it is newer).")
    if not 1 <= opset <= MAX_OPSET:
        first = m.graph.node[0] if len(m.graph.node) else None
        where = f" ({_node_name(first)} and every other node)" if first is not None else ""
        raise InvalidModelError(
            f"{label} imports the default ONNX opset {opset}{where}; the installed onnx "
            f"library knows opsets 1 to {MAX_OPSET}, so what its ops mean cannot be checked. "
            "Convert it to a known opset with onnx.version_converter.convert_version(model, "
            f"{min(max(opset, 1), MAX_OPSET)}) or export it again with a supported opset "
            "(13-21 are tested).")


def initializer_arrays(m: onnx.ModelProto, label: str) -> dict[str, np.ndarray]:
    """Every initializer as a numpy array, checked: a known numeric element type and data
    whose size fits its dims."""
    arrays: dict[str, np.ndarray] = {}
    for t in m.graph.initializer:
        what = f"initializer {t.name!r} of {label}"
        if t.name in arrays:
            raise InvalidModelError(f"{what} is defined twice; initializer names must be "
                                    f"unique. {_HINT}")
        try:
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type))
        except (KeyError, TypeError, ValueError):
            raise InvalidModelError(f"{what} has element type {t.data_type}, which is not an "
                                    f"ONNX tensor type. {_HINT}") from None
        if dtype.kind not in "biuf" and not is_narrow(str(dtype)):
            name = onnx.TensorProto.DataType.Name(t.data_type)
            raise InvalidModelError(f"{what} has element type {name}; only numeric and bool "
                                    "tensors are supported.")
        if any(d < 0 for d in t.dims):
            raise InvalidModelError(f"{what} has negative dims {list(t.dims)}. {_HINT}")
        if t.data_location == onnx.TensorProto.EXTERNAL:
            raise InvalidModelError(
                f"{what} keeps its data in an external file; load the model from its path "
                "(with the .data files next to it), not from bytes.")
        count = int(np.prod(t.dims, dtype=np.float64)) if len(t.dims) else 1
        try:
            arr = numpy_helper.to_array(t)
        except (ValueError, TypeError) as e:
            held = (f"{len(t.raw_data)} bytes of raw data" if t.HasField("raw_data")
                    else "a different number of values")
            raise InvalidModelError(
                f"{what} declares dims {list(t.dims)} ({count} {dtype} values, "
                f"{count * dtype.itemsize} bytes) but holds {held} ({e}). The file is "
                "damaged or was written wrongly; export or download it again.") from None
        if arr.size != count:
            raise InvalidModelError(f"{what} declares dims {list(t.dims)} but holds "
                                    f"{arr.size} values. {_HINT}")
        arrays[t.name] = arr
    return arrays


def _producers(m: onnx.ModelProto, label: str) -> dict[str, str]:
    """Value name -> what produces it; two producers of one name are an error."""
    made: dict[str, str] = {}
    inits = {t.name for t in m.graph.initializer}
    for vi in m.graph.input:
        if vi.name in made:
            raise InvalidModelError(f"{label} lists graph input {vi.name!r} twice. {_HINT}")
        made[vi.name] = "a graph input"
    for name in inits:
        made.setdefault(name, "an initializer")
    for n in m.graph.node:
        for o in n.output:
            if not o:
                continue
            if o in made:
                raise InvalidModelError(
                    f"{_node_name(n)} in {label} writes {o!r}, which {made[o]} already "
                    "defines; in ONNX every value has exactly one producer. Rename one of "
                    f"the outputs. {_HINT}")
            made[o] = _node_name(n)
    return made


def sorted_nodes(m: onnx.ModelProto, label: str) -> list[onnx.NodeProto]:
    """The nodes in a topological order (the file's order where it allows), after checking
    that every node input and graph output has a producer; a cycle is an error."""
    made = _producers(m, label)
    for n in m.graph.node:
        for i in n.input:
            if i and i not in made:
                raise InvalidModelError(
                    f"{_node_name(n)} in {label} reads {i!r}, which no node, graph input or "
                    f"initializer produces (a dangling input). {_HINT}")
    if not len(m.graph.output):
        raise InvalidModelError(f"{label} has no graph outputs, so it computes nothing. "
                                f"{_HINT}")
    for o in m.graph.output:
        if o.name not in made:
            raise InvalidModelError(f"graph output {o.name!r} of {label} is not produced by "
                                    f"any node, input or initializer. {_HINT}")
    nodes = list(m.graph.node)
    producer = {o: k for k, n in enumerate(nodes) for o in n.output if o}
    waits = [{producer[i] for i in n.input if i in producer} for n in nodes]
    readers: dict[int, list[int]] = {}
    for k, deps in enumerate(waits):
        for d in deps:
            readers.setdefault(d, []).append(k)
    ready = [k for k, deps in enumerate(waits) if not deps]
    heapq.heapify(ready)
    order: list[int] = []
    left = [len(deps) for deps in waits]
    while ready:
        k = heapq.heappop(ready)
        order.append(k)
        for r in readers.get(k, []):
            left[r] -= 1
            if left[r] == 0:
                heapq.heappush(ready, r)
    if len(order) < len(nodes):
        raise InvalidModelError(f"{label} has a cycle: {_cycle(nodes, waits, set(order))}; "
                                "an ONNX graph must be acyclic (loops belong in Loop or Scan "
                                f"ops). {_HINT}")
    return [nodes[k] for k in order]


def _cycle(nodes: list[onnx.NodeProto], waits: list[set[int]], done: set[int]) -> str:
    """'node a (Add) -> node b (Mul) -> node a (Add)': one cycle among the unsorted nodes."""
    k = next(i for i in range(len(nodes)) if i not in done)
    path: list[int] = []
    seen: dict[int, int] = {}
    while k not in seen:
        seen[k] = len(path)
        path.append(k)
        k = min(d for d in waits[k] if d not in done)
    loop = path[seen[k]:] + [k]
    return " reads ".join(_node_name(nodes[i]) for i in loop)


def check_schemas(m: onnx.ModelProto, nodes: list[onnx.NodeProto], label: str) -> None:
    """Each default-domain node against its op schema (input and output counts, required,
    unknown and mistyped attributes), and window attributes in range."""
    ctx = onnx.checker.C.CheckerContext()
    ctx.ir_version = m.ir_version
    ctx.opset_imports = {o.domain or "": o.version for o in m.opset_import}
    for n in nodes:
        if n.domain not in ("", "ai.onnx"):
            continue
        try:
            onnx.checker.check_node(n, ctx)
        except (onnx.checker.ValidationError, RuntimeError) as e:
            first = str(e).split("==>")[0].strip()
            raise InvalidModelError(f"{node_label(n)} in {label} does not match the ONNX "
                                    f"schema of {n.op_type}: {first}. {_HINT}") from None
        _check_window_attrs(n, label)


def _check_window_attrs(n: onnx.NodeProto, label: str) -> None:
    for a in n.attribute:
        values = list(a.ints) if a.type == onnx.AttributeProto.INTS else (
            [a.i] if a.type == onnx.AttributeProto.INT else [])
        if a.name in _POSITIVE_ATTRS and any(v <= 0 for v in values):
            raise InvalidModelError(f"{node_label(n)} in {label} has {a.name}={values}; every "
                                    f"{a.name} value must be at least 1. {_HINT}")
        if a.name == "group" and any(v < 1 for v in values):
            raise InvalidModelError(f"{node_label(n)} in {label} has group={values[0]}; it "
                                    f"must be at least 1. {_HINT}")
        if a.name == "pads" and n.op_type in _WINDOW_OPS and any(v < 0 for v in values):
            raise InvalidModelError(f"{node_label(n)} in {label} has pads={values}; "
                                    f"{n.op_type} pads must not be negative. {_HINT}")


def check_types(m: onnx.ModelProto, nodes: list[onnx.NodeProto],
                arrays: dict[str, np.ndarray], label: str
                ) -> dict[str, tuple[int | None, ...] | None]:
    """ONNX's strict type and shape inference over a copy holding the sorted nodes, the
    declared inputs and the small initializers (large ones become typed inputs). Returns
    every value's shape as inferred (None: unknown; a dim is None when symbolic)."""
    g = m.graph
    inputs = list(g.input)
    declared = {vi.name for vi in inputs}
    inits = []
    for t in g.initializer:
        if arrays[t.name].size <= _INLINE_ELEMENTS:
            inits.append(t)
        elif t.name not in declared:
            inputs.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    made = {o for n in nodes for o in n.output}
    # outputs with their declared element types but not their shapes (exporters write stale
    # shapes and ONNX Runtime only warns; a wrong type it refuses), and only those nodes make
    # (an output that is also an input hides the whole check)
    outputs = [_output_type(o) for o in g.output if o.name in made]
    light = helper.make_graph(nodes, g.name or "main", inputs, outputs, inits)
    copy = helper.make_model(light, opset_imports=list(m.opset_import),
                             ir_version=max(m.ir_version, 4))
    copy.functions.extend(m.functions)
    try:
        status, result = infer_shapes_isolated(copy.SerializeToString())
    except InferenceCrash as e:
        raise InvalidModelError(f"{label} is not valid ONNX: {e} (ONNX's C++ inference "
                                f"aborts on some malformed shapes). {_HINT}") from None
    if status != "ok":
        msg = " ".join(str(result).split())
        raise InvalidModelError(f"{label} is not valid ONNX: type and shape inference fails: "
                                f"{msg[:1500]}. {_HINT}")
    inferred = onnx.ModelProto()
    inferred.ParseFromString(result)
    shapes: dict[str, tuple[int | None, ...] | None] = {
        name: tuple(int(d) for d in arr.shape) for name, arr in arrays.items()}
    ig = inferred.graph
    for vi in (*ig.input, *ig.value_info, *ig.output):
        tt = vi.type.tensor_type
        shapes.setdefault(vi.name, tuple(
            d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim)
            if vi.type.HasField("tensor_type") and tt.HasField("shape") else None)
    return shapes


def _output_type(vi: onnx.ValueInfoProto) -> onnx.ValueInfoProto:
    elem = vi.type.tensor_type.elem_type if vi.type.HasField("tensor_type") else 0
    if elem:
        return helper.make_tensor_value_info(vi.name, elem, None)
    return helper.make_value_info(vi.name, onnx.TypeProto())


def validate_model(m: onnx.ModelProto, label: str
                   ) -> tuple[list[onnx.NodeProto], dict[str, np.ndarray]]:
    """The checks after `check_versions` (and the frontend's op support check), in order;
    returns (nodes in topological order, initializer arrays)."""
    arrays = initializer_arrays(m, label)
    nodes = sorted_nodes(m, label)
    check_schemas(m, nodes, label)
    shapes = check_types(m, nodes, arrays, label)
    check_rules(nodes, lambda name: shapes.get(name), label)
    return nodes, arrays
