"""`load`: an ONNX model (path, bytes or ModelProto) -> a `tensorforge.graph.Graph` with
fully static shapes. Graph inputs and outputs keep their ONNX names; constants are named
after their initializers."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from tensorforge.errors import TensorforgeError
from tensorforge.graph import Graph, Value
from tensorforge.graph.narrow_types import is_narrow

from .context import Context, node_label, np_dtype
from .dispatch import op_version, table
from .errors import (
    DynamicShapeError,
    ModelFileError,
    OnnxImportError,
    UnsupportedOpError,
)

TESTED_OPSETS = (11, 21)


def load(model: str | os.PathLike | bytes | onnx.ModelProto,
         input_shapes: Mapping[str, tuple[int, ...]] | None = None,
         constant_inputs: Mapping[str, Any] | None = None,
         specialize: Mapping[str, Any] | None = None, **options: Any) -> Graph:
    """Import an ONNX model. `input_shapes` fills or overrides input dims (e.g. the batch);
    `constant_inputs` freezes inputs to given values (they become constants);
    `specialize` gives the values of inputs that shapes depend on (a Reshape's shape fed as
    an input): they stay inputs, and the graph is valid for these values only."""
    proto, label = read_model(model)
    return convert(proto, label, dict(input_shapes or {}), dict(constant_inputs or {}),
                   dict(specialize or {}))


# reading -------------------------------------------------------------------------------------
def read_model(model: Any) -> tuple[onnx.ModelProto, str]:
    if isinstance(model, onnx.ModelProto):
        return model, f"model {model.graph.name!r}" if model.graph.name else "the model"
    if isinstance(model, (bytes, bytearray)):
        return _parse(bytes(model), "the given bytes", None), "the model"
    path = Path(model)
    label = path.name
    if not path.exists():
        raise ModelFileError(
            f"ONNX model file {str(path)!r} does not exist (resolved to "
            f"{path.resolve()}). Check the path, or pass the model as bytes or an "
            "onnx.ModelProto.")
    if path.is_dir():
        raise ModelFileError(f"{str(path)!r} is a directory, not an ONNX model file; pass "
                             "the path of the .onnx file inside it.")
    data = path.read_bytes()
    if not data:
        raise ModelFileError(
            f"ONNX model file {str(path)!r} is empty (0 bytes): the export or download "
            "probably did not finish. Export or download the model again.")
    return _parse(data, repr(str(path)), path), label


def _parse(data: bytes, what: str, path: Path | None) -> onnx.ModelProto:
    m = onnx.ModelProto()
    looks_onnx = data[:1] == b"\x08"  # ModelProto starts with field 1 (ir_version), a varint
    try:
        m.ParseFromString(data)
    except Exception as e:  # noqa: BLE001  (protobuf raises DecodeError and friends)
        if looks_onnx:
            raise ModelFileError(
                f"{what} ({len(data)} bytes) starts like an ONNX model but is truncated or "
                f"corrupted ({e}). Export or download the model again and check its size "
                "against the source.") from None
        raise ModelFileError(
            f"{what} is not an ONNX model (it does not parse as an ONNX ModelProto; it "
            f"starts with {data[:16]!r}). Pass an .onnx file (export with torch.onnx.export "
            "or tf2onnx; a TorchScript, SavedModel or text file is not ONNX).") from None
    if not m.ir_version or not m.HasField("graph"):
        raise ModelFileError(
            f"{what} is not an ONNX model (it parses but has no IR version or graph; it "
            f"starts with {data[:16]!r}). Pass an .onnx file exported by an ONNX exporter.")
    if path is not None and any(
            t.data_location == onnx.TensorProto.EXTERNAL for t in m.graph.initializer):
        try:
            onnx.external_data_helper.load_external_data_for_model(m, str(path.parent))
        except (OSError, ValueError) as e:
            raise ModelFileError(
                f"{what} keeps its weights in external data files that could not be read "
                f"({e}); keep the .data files next to the model.") from None
    return m


# checks --------------------------------------------------------------------------------------
def default_opset(m: onnx.ModelProto) -> int:
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            return int(o.version)
    return 1


def check_supported(m: onnx.ModelProto, label: str) -> None:
    """Raise one error naming every unsupported op (and op version) of the model."""
    opset = default_opset(m)
    tab = table()
    missing: dict[tuple[str, str], list[str]] = {}
    versions: dict[tuple[str, str], list[str]] = {}
    for n in _all_nodes(m.graph):
        name = n.name or (n.output[0] if n.output else "?")
        if n.domain not in ("", "ai.onnx") or n.op_type not in tab:
            key = (f"{n.domain}.{n.op_type}" if n.domain not in ("", "ai.onnx") else n.op_type,
                   "")
            missing.setdefault(key, []).append(name)
            continue
        c = tab[n.op_type]
        v = op_version(n.op_type, opset)
        if v is None or not c.min_version <= v <= c.max_version:
            key = (n.op_type, f"{n.op_type}-{v} (supported: versions "
                   f"{c.min_version}-{c.max_version})")
            versions.setdefault(key, []).append(name)
    if not missing and not versions:
        return
    parts = []
    for (op, detail), nodes in {**missing, **versions}.items():
        nl = ", ".join(repr(x) for x in nodes[:5]) + (f", ... ({len(nodes)} in all)"
                                                     if len(nodes) > 5 else "")
        parts.append(f"{detail or op} (node{'s' if len(nodes) > 1 else ''} {nl})")
    n = len(parts)
    raise UnsupportedOpError(
        f"{label} uses {n} unsupported op{'s' if n > 1 else ''} at opset {opset}: "
        f"{'; '.join(parts)}. tensorforge_onnx.supported_ops() lists the {len(tab)} ops "
        "the ONNX frontend converts (with their op versions; opsets "
        f"{TESTED_OPSETS[0]}-{TESTED_OPSETS[1]} are tested). Replace these ops before export "
        "(or simplify the model with onnx-simplifier), convert an old model to opset 13+ "
        "with onnx.version_converter.convert_version, or add a converter in "
        "packages/frontend-onnx (see docs/plugin-authoring.md).")


def _all_nodes(g: onnx.GraphProto) -> list[onnx.NodeProto]:
    return list(g.node)


# conversion ----------------------------------------------------------------------------------
def convert(m: onnx.ModelProto, label: str, input_shapes: dict[str, tuple[int, ...]],
            constant_inputs: dict[str, Any] | None = None,
            specialize: dict[str, Any] | None = None) -> Graph:
    check_supported(m, label)
    opset = default_opset(m)
    og = m.graph
    g = Graph(og.name or "main")
    ctx = Context(g, opset, label)
    inits = {t.name for t in og.initializer}
    onnx_names = {o for n in og.node for o in n.output if o}
    g._names.update(onnx_names)  # reserved: graph values take their ONNX names
    for t in og.initializer:
        ctx.values[t.name] = g.add_const(t.name, numpy_helper.to_array(t))
    real_inputs = [i for i in og.input if i.name not in inits]
    constant_inputs = constant_inputs or {}
    specialize = specialize or {}
    unknown = (set(input_shapes) | set(constant_inputs) | set(specialize)) - {
        i.name for i in real_inputs}
    if unknown:
        raise DynamicShapeError(
            f"input_shapes/constant_inputs/specialize name {sorted(unknown)}, which {label} "
            f"does not have as inputs; its inputs are {[i.name for i in real_inputs]}.")
    for i in real_inputs:
        if i.name in constant_inputs:
            ctx.values[i.name] = g.add_const(i.name, np.asarray(constant_inputs[i.name]))
            continue
        if i.name in specialize:
            arr = np.asarray(specialize[i.name])
            v = g.add_input(i.name, arr.shape, str(arr.dtype))
            ctx.known[id(v)] = arr
            ctx.values[i.name] = v
            continue
        shape, dtype = _input_type(i, input_shapes.get(i.name), label, real_inputs)
        ctx.values[i.name] = g.add_input(i.name, shape, dtype)
    tab = table()
    for n in og.node:
        ctx.node, ctx.fresh = n, set()
        ctx.op_version = op_version(n.op_type, opset) or opset
        try:
            outs = tab[n.op_type].fn(ctx, n)
        except OnnxImportError:
            raise
        except TensorforgeError as e:
            raise OnnxImportError(f"{node_label(n)} in {label} could not be converted: {e}"
                                  ) from e
        for name, v in zip(n.output, outs):
            if name and v is not None:
                _bind(ctx, name, v)
    _check_sized(ctx, label)
    seen: list[Value] = []
    g.outputs = [_output(ctx, o.name, seen) for o in og.output]
    for i, o in enumerate(og.output):  # data-dependent sizes: the count is a hidden output
        src = ctx.values.get(o.name)
        if src is not None and id(src) in ctx.sized:
            count, axis = ctx.sized[id(src)]
            g.outputs.append(count)
            g.sized_outputs[i] = (len(g.outputs) - 1, axis)
    return g


def _check_sized(ctx: Context, label: str) -> None:
    """A value of data-dependent size (NonZero's output ...) may only be a model output:
    the compiled kernels have static shapes, only the executor trims outputs."""
    for n in ctx.g.nodes:
        for v in n.inputs:
            if id(v) in ctx.sized:
                raise OnnxImportError(
                    f"{v.name!r} in {label} has a size that depends on the input values "
                    f"(NonZero, NonMaxSuppression, Unique, Compress ...) and is read by "
                    f"node {n.name!r}; tensorforge supports such values only as model "
                    "outputs (kernels have static shapes). Make it a model output, or bound "
                    "the size (e.g. TopK with a fixed k) in the model.")


def _input_type(vi: onnx.ValueInfoProto, override: tuple[int, ...] | None, label: str,
                inputs: list[onnx.ValueInfoProto]) -> tuple[tuple[int, ...], str]:
    tt = vi.type.tensor_type
    if not vi.type.HasField("tensor_type"):
        raise OnnxImportError(f"input {vi.name!r} of {label} is not a tensor (sequences, "
                              "maps and optionals are not supported).")
    try:
        dtype = np_dtype(tt.elem_type)
    except (KeyError, TypeError, ValueError):
        dtype = "object"
    if not is_narrow(dtype) and np.dtype(dtype).kind not in "biuf":
        raise OnnxImportError(f"input {vi.name!r} of {label} has element type "
                              f"{onnx.TensorProto.DataType.Name(tt.elem_type)}; only numeric "
                              "and bool tensors are supported.")
    dims = list(tt.shape.dim)
    if override is not None:
        if tt.HasField("shape") and len(override) != len(dims):
            raise DynamicShapeError(
                f"input_shapes[{vi.name!r}] = {tuple(override)} has {len(override)} dims but "
                f"input {vi.name!r} of {label} has rank {len(dims)}.")
        return tuple(int(d) for d in override), dtype
    shape = []
    for k, d in enumerate(dims):
        if d.HasField("dim_value") and d.dim_value > 0:
            shape.append(int(d.dim_value))
            continue
        sym = d.dim_param or "?"
        example = {i.name: tuple(
            x.dim_value if x.HasField("dim_value") and x.dim_value > 0 else 1
            for x in i.type.tensor_type.shape.dim) for i in inputs}
        raise DynamicShapeError(
            f"input {vi.name!r} of {label} has a symbolic dimension {sym!r} (dim {k}); "
            "tensorforge compiles for static shapes. Pass the concrete shape, e.g. "
            f"load(..., input_shapes={example}) (or `--input-shape` on the command line).")
    if not tt.HasField("shape"):
        raise DynamicShapeError(
            f"input {vi.name!r} of {label} has no shape; pass it with "
            f"input_shapes={{{vi.name!r}: (...)}}.")
    return tuple(shape), dtype


def _bind(ctx: Context, name: str, v: Value) -> None:
    """Bind ONNX value `name` to v, giving a value made by this node the ONNX name."""
    g = ctx.g
    if id(v) in ctx.fresh and v.name != name:
        g._names.discard(v.name)
        v.name = name
        ctx.fresh.discard(id(v))
    ctx.values[name] = v


def _output(ctx: Context, name: str, seen: list[Value]) -> Value:
    """The graph output value for ONNX output `name`: the bound value itself when it carries
    the name, else an identity node named `name` (aliases, inputs, repeated outputs)."""
    if name not in ctx.values:
        raise OnnxImportError(f"graph output {name!r} of {ctx.model_label} is not produced "
                              "by any node, input or initializer.")
    v = ctx.values[name]
    is_input = v.producer is None and not v.is_const
    if v.name == name and not is_input and all(v is not s for s in seen):
        seen.append(v)
        return v
    ctx.node = None
    ctx.g._names.discard(name)
    out = ctx.g.add_node("identity", [v], {}, name=name, out_names=[name])[0]
    seen.append(out)
    return out
