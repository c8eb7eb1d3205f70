"""ONNX model mutations for the fuzzer: hypothesis strategies that draw a plan (a seed model
and 1-3 mutations, plus an optional byte-level damage), and `apply_plan`, which turns a plan
into model bytes. Plans are plain JSON, so a failing case can be printed and replayed.

Mutations (indices are taken modulo what the model has when the mutation applies):
graph structure (drop, duplicate, swap or re-type nodes; rewire, add or drop node inputs;
point graph outputs elsewhere), attributes (set to interesting ints, lists, floats, strings;
drop; add unknown ones), graph inputs (dims, rank, dtype), initializers (dims without data,
dtype, truncated bytes, special values, one element), the opset, and the serialized bytes
(truncate, flip a byte)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import onnx
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from seeds import SEEDS

INTS = [0, -1, 1, 2, 3, 4, 5, 7, 8, 16, -2, 100, 2**31 - 1, -(2**31), 2**40, 10**6]
FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e-30, 1e30, math.inf, -math.inf, math.nan, 3.0]
DIMS = [0, -1, 1, 2, 3, 4, 5, 16, 100, 10**5, 10**7, 10**12]
STRINGS = ["NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", "constant", "reflect", "edge",
           "nearest", "linear", "cubic", "forward", "reverse", "bidirectional", "", "junk\udcff"]
ELEM_TYPES = [TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT8,
              TensorProto.UINT8, TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL,
              TensorProto.STRING, TensorProto.BFLOAT16, TensorProto.UINT64,
              TensorProto.COMPLEX64, 0, 99]
ATTR_NAMES = ["axis", "axes", "perm", "kernel_shape", "strides", "pads", "dilations", "group",
              "keepdims", "alpha", "beta", "epsilon", "mode", "to", "transA", "transB",
              "hidden_size", "auto_pad", "ceil_mode", "count_include_pad", "split", "direction",
              "value", "bogus_attr"]
OPS = ["Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Exp", "Log", "Sqrt", "Reciprocal", "Add",
       "Mul", "Sub", "Div", "Max", "Min", "Pow", "MatMul", "Gemm", "Conv", "ConvTranspose",
       "MaxPool", "AveragePool", "GlobalAveragePool", "BatchNormalization", "Reshape",
       "Transpose", "Concat", "Split", "Slice", "Squeeze", "Unsqueeze", "Flatten", "Expand",
       "Pad", "Gather", "Softmax", "LogSoftmax", "ReduceMean", "ReduceSum", "ReduceMax",
       "Cast", "Where", "Greater", "Equal", "Clip", "Identity", "Dropout", "LSTM", "Resize",
       "LayerNormalization", "Shape", "ConstantOfShape", "Range", "Foo"]
OPSETS = [0, 1, 5, 7, 9, 11, 13, 17, 21, 23, 28, 29, 99]
VALUE_KINDS = ["nan", "inf", "-inf", "zero", "huge", "negative", "big_int", "minus_one"]

_idx = st.integers(0, 63)


def _m(name: str, **fields: st.SearchStrategy) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"op": st.just(name), **fields})


_attr_value = st.one_of(
    st.tuples(st.just("int"), st.sampled_from(INTS)),
    st.tuples(st.just("ints"), st.lists(st.sampled_from(INTS), max_size=5)),
    st.tuples(st.just("float"), st.sampled_from(FLOATS)),
    st.tuples(st.just("string"), st.sampled_from(STRINGS)),
    st.tuples(st.just("elem"), _idx),  # one element of an existing ints/floats list
)

MUTATIONS = st.one_of(
    _m("drop_node", node=_idx),
    _m("duplicate_node", node=_idx, rename=st.booleans()),
    _m("swap_nodes", a=_idx, b=_idx),
    _m("change_op", node=_idx, to=st.sampled_from(OPS)),
    _m("rewire", node=_idx, slot=_idx, src=st.integers(-2, 63)),
    _m("add_input", node=_idx, src=st.integers(-2, 63)),
    _m("drop_input", node=_idx, slot=_idx),
    _m("set_attr", node=_idx, attr=st.one_of(_idx, st.sampled_from(ATTR_NAMES)),
       value=_attr_value, elem_value=st.sampled_from(INTS)),
    _m("drop_attr", node=_idx, attr=_idx),
    _m("input_dim", input=_idx, pos=_idx, dim=st.sampled_from(DIMS + ["drop", "param"])),
    _m("input_dtype", input=_idx, elem=st.sampled_from(ELEM_TYPES)),
    _m("init_dims", init=_idx, pos=_idx, dim=st.sampled_from(DIMS + ["drop", "add"])),
    _m("init_dtype", init=_idx, elem=st.sampled_from(ELEM_TYPES)),
    _m("init_truncate", init=_idx, keep=st.sampled_from([0.0, 0.25, 0.5, 0.9])),
    _m("init_values", init=_idx, kind=st.sampled_from(VALUE_KINDS)),
    _m("init_element", init=_idx, pos=_idx, value=st.sampled_from(INTS + FLOATS)),
    _m("opset", version=st.sampled_from(OPSETS)),
    _m("output", output=_idx, src=st.integers(-1, 63)),
)

BYTE_DAMAGE = st.one_of(
    st.fixed_dictionaries({"op": st.just("truncate"), "frac": st.floats(0.0, 0.999)}),
    st.fixed_dictionaries({"op": st.just("flip"), "frac": st.floats(0.0, 0.999),
                           "xor": st.integers(1, 255)}),
)


def plans() -> st.SearchStrategy[dict[str, Any]]:
    """A fuzz case: seed model, mutations, optional byte damage, input-data seed."""
    return st.fixed_dictionaries({
        "seed": st.sampled_from(sorted(SEEDS)),
        "mutations": st.lists(MUTATIONS, min_size=1, max_size=3),
        "bytes": st.lists(BYTE_DAMAGE, max_size=1),
        "data_seed": st.integers(0, 2**16),
    })


# -- applying a plan ---------------------------------------------------------------------------
def apply_plan(plan: dict[str, Any]) -> bytes:
    """The model bytes of `plan` (its seed model, mutated)."""
    m = SEEDS[plan["seed"]]()
    for mut in plan["mutations"]:
        _APPLY[mut["op"]](m, mut)
    data = m.SerializeToString()
    for dmg in plan["bytes"]:
        pos = int(dmg["frac"] * len(data))
        if dmg["op"] == "truncate":
            data = data[:pos]
        else:
            data = data[:pos] + bytes([data[pos] ^ dmg["xor"]]) + data[pos + 1:]
    return data


def _pick(seq: Any, i: int) -> Any:
    return seq[i % len(seq)] if len(seq) else None


def _value_names(m: onnx.ModelProto) -> list[str]:
    names = [i.name for i in m.graph.input] + [t.name for t in m.graph.initializer]
    names += [o for n in m.graph.node for o in n.output if o]
    return list(dict.fromkeys(names))


def _source(m: onnx.ModelProto, src: int) -> str:
    if src == -1:
        return f"dangling_{len(m.graph.node)}"
    if src == -2:
        return ""
    return _pick(_value_names(m), src) or "x"


def _drop_node(m: onnx.ModelProto, mut: dict) -> None:
    if len(m.graph.node):
        del m.graph.node[mut["node"] % len(m.graph.node)]


def _duplicate_node(m: onnx.ModelProto, mut: dict) -> None:
    if not len(m.graph.node):
        return
    k = mut["node"] % len(m.graph.node)
    copy = onnx.NodeProto()
    copy.CopyFrom(m.graph.node[k])
    if mut["rename"]:
        copy.name += "_dup"
        for i, o in enumerate(copy.output):
            copy.output[i] = f"{o}_dup" if o else o
    m.graph.node.insert(k + 1, copy)


def _swap_nodes(m: onnx.ModelProto, mut: dict) -> None:
    n = len(m.graph.node)
    if n < 2:
        return
    a, b = mut["a"] % n, mut["b"] % n
    na, nb = onnx.NodeProto(), onnx.NodeProto()
    na.CopyFrom(m.graph.node[a])
    nb.CopyFrom(m.graph.node[b])
    m.graph.node[a].CopyFrom(nb)
    m.graph.node[b].CopyFrom(na)


def _change_op(m: onnx.ModelProto, mut: dict) -> None:
    node = _pick(m.graph.node, mut["node"])
    if node is not None:
        node.op_type = mut["to"]


def _rewire(m: onnx.ModelProto, mut: dict) -> None:
    node = _pick(m.graph.node, mut["node"])
    if node is not None and len(node.input):
        node.input[mut["slot"] % len(node.input)] = _source(m, mut["src"])


def _add_input(m: onnx.ModelProto, mut: dict) -> None:
    node = _pick(m.graph.node, mut["node"])
    if node is not None:
        node.input.append(_source(m, mut["src"]))


def _drop_input(m: onnx.ModelProto, mut: dict) -> None:
    node = _pick(m.graph.node, mut["node"])
    if node is not None and len(node.input):
        del node.input[mut["slot"] % len(node.input)]


def _set_attr(m: onnx.ModelProto, mut: dict) -> None:
    node = _pick(m.graph.node, mut["node"])
    if node is None:
        return
    attr = mut["attr"]
    existing = None
    if isinstance(attr, int):
        existing = _pick(node.attribute, attr)
        name = existing.name if existing is not None else "axis"
    else:
        name = attr
        existing = next((a for a in node.attribute if a.name == name), None)
    kind, value = mut["value"]
    if kind == "elem":
        if existing is None or not (len(existing.ints) or len(existing.floats)):
            return
        if len(existing.ints):
            existing.ints[value % len(existing.ints)] = mut["elem_value"]
        else:
            existing.floats[value % len(existing.floats)] = float(mut["elem_value"])
        return
    if kind == "string":
        value = value.encode("utf-8", "surrogateescape") if value else b""
    if kind == "ints" and not value:
        new = helper.make_attribute(name, [], attr_type=onnx.AttributeProto.INTS)
    else:
        new = helper.make_attribute(name, value)
    for i, a in enumerate(node.attribute):
        if a.name == name:
            node.attribute[i].CopyFrom(new)
            return
    node.attribute.append(new)


def _drop_attr(m: onnx.ModelProto, mut: dict) -> None:
    node = _pick(m.graph.node, mut["node"])
    if node is not None and len(node.attribute):
        del node.attribute[mut["attr"] % len(node.attribute)]


def _real_inputs(m: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    inits = {t.name for t in m.graph.initializer}
    return [i for i in m.graph.input if i.name not in inits]


def _input_dim(m: onnx.ModelProto, mut: dict) -> None:
    vi = _pick(_real_inputs(m), mut["input"])
    if vi is None:
        return
    dims = vi.type.tensor_type.shape.dim
    dim = mut["dim"]
    if dim == "drop":
        if len(dims):
            del dims[mut["pos"] % len(dims)]
        return
    pos = mut["pos"] % (len(dims) + 1)
    d = dims.add() if pos == len(dims) else dims[pos]
    if dim == "param":
        d.dim_param = "N"
    else:
        d.dim_value = dim


def _input_dtype(m: onnx.ModelProto, mut: dict) -> None:
    vi = _pick(_real_inputs(m), mut["input"])
    if vi is not None:
        vi.type.tensor_type.elem_type = mut["elem"]


def _init_dims(m: onnx.ModelProto, mut: dict) -> None:
    t = _pick(m.graph.initializer, mut["init"])
    if t is None:
        return
    dim = mut["dim"]
    if dim == "drop":
        if len(t.dims):
            del t.dims[mut["pos"] % len(t.dims)]
    elif dim == "add":
        t.dims.append(1)
    elif len(t.dims):
        t.dims[mut["pos"] % len(t.dims)] = dim
    else:
        t.dims.append(dim)


def _init_dtype(m: onnx.ModelProto, mut: dict) -> None:
    t = _pick(m.graph.initializer, mut["init"])
    if t is not None:
        t.data_type = mut["elem"]


def _init_truncate(m: onnx.ModelProto, mut: dict) -> None:
    t = _pick(m.graph.initializer, mut["init"])
    if t is not None and t.raw_data:
        t.raw_data = t.raw_data[: int(len(t.raw_data) * mut["keep"])]


_SPECIAL = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "zero": 0, "huge": 1e30,
            "negative": -3, "big_int": 2**40, "minus_one": -1}


def _array(t: onnx.TensorProto | None) -> np.ndarray | None:
    """The initializer's data, or None if an earlier mutation broke it."""
    if t is None:
        return None
    try:
        return numpy_helper.to_array(t)
    except (ValueError, TypeError, KeyError):
        return None


def _init_values(m: onnx.ModelProto, mut: dict) -> None:
    t = _pick(m.graph.initializer, mut["init"])
    arr = _array(t)
    if arr is None or arr.dtype.kind not in "biuf":
        return
    value = _SPECIAL[mut["kind"]]
    if arr.dtype.kind in "iub" and isinstance(value, float):
        return
    with np.errstate(all="ignore"):
        new = np.full(arr.shape, value).astype(arr.dtype)
    t.CopyFrom(numpy_helper.from_array(new, t.name))


def _init_element(m: onnx.ModelProto, mut: dict) -> None:
    t = _pick(m.graph.initializer, mut["init"])
    arr = _array(t)
    if arr is None or arr.size == 0 or arr.dtype.kind not in "biuf":
        return
    arr = arr.copy()
    value = mut["value"]
    if arr.dtype.kind in "iub" and isinstance(value, float):
        return
    with np.errstate(all="ignore"):
        arr.reshape(-1)[mut["pos"] % arr.size] = np.array(value).astype(arr.dtype)
    t.CopyFrom(numpy_helper.from_array(arr, t.name))


def _opset(m: onnx.ModelProto, mut: dict) -> None:
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = mut["version"]


def _output(m: onnx.ModelProto, mut: dict) -> None:
    out = _pick(m.graph.output, mut["output"])
    if out is not None:
        out.name = _source(m, mut["src"])


_APPLY = {
    "drop_node": _drop_node, "duplicate_node": _duplicate_node, "swap_nodes": _swap_nodes,
    "change_op": _change_op, "rewire": _rewire, "add_input": _add_input,
    "drop_input": _drop_input, "set_attr": _set_attr, "drop_attr": _drop_attr,
    "input_dim": _input_dim, "input_dtype": _input_dtype, "init_dims": _init_dims,
    "init_dtype": _init_dtype, "init_truncate": _init_truncate, "init_values": _init_values,
    "init_element": _init_element, "opset": _opset, "output": _output,
}
