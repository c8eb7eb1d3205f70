"""Everything that needs the TensorFlow runtime: reading a model into a frozen GraphDef.

* a Keras model object, or a `.keras` / `.h5` file (`keras.models.load_model`): traced as a
  `tf.function` at static shapes (unknown dims from `input_shapes`, the batch 1 by default);
* a SavedModel directory: its signature (`serving_default` unless `signature=`) as saved;
* a concrete function, a loaded SavedModel object, a `GraphDef`;
* a frozen GraphDef `.pb`: as is (inputs: its Placeholders, outputs: the sinks, unless given).

Functions are frozen with `convert_variables_to_constants_v2` (variables become constants,
control flow stays functional: While / If with their bodies in the function library). Shapes
left unknown are made static later, by our own type inference from the input shapes."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import DynamicShapeError, ModelFileError, TensorFlowMissingError
from .graphdef import called_functions, data_inputs, needed_nodes, node_of, tensor_ref

Shape = tuple[int | None, ...] | None


def import_tensorflow() -> Any:
    """`tensorflow`, imported quietly (TF_CPP_MIN_LOG_LEVEL=2, its load-time notes discarded),
    or a clear error."""
    from tensorforge.quiet_import import import_quietly

    try:
        tf = import_quietly("tensorflow")
    except ImportError as e:
        raise TensorFlowMissingError(
            f"reading TensorFlow and Keras models needs TensorFlow, which is not installed "
            f"here ({e}). Install it: pip install 'tensorforge-frontend-tensorflow[tensorflow]' "
            "(tensorflow-cpu), or pip install tensorflow.") from None
    return tf


@dataclass
class InputSpec:
    """A graph input: its name, shape (None: an unknown dim or rank), dtype, and the
    Placeholder node that holds it (by default named as the input)."""

    name: str
    shape: Shape
    dtype: str
    node: str = ""

    def __post_init__(self) -> None:
        self.node = self.node or self.name


@dataclass
class FunctionGraph:
    """A library function as a graph: its nodes in order, argument Placeholders, results."""

    name: str
    nodes: list[Any]
    args: list[str]
    outputs: list[str]


@dataclass
class TFModel:
    """A frozen GraphDef with its inputs and named outputs (tensor references)."""

    graph_def: Any
    inputs: list[InputSpec]
    outputs: list[tuple[str, str]]
    label: str
    keep_alive: Any = None  # the loaded object whose graph this is
    _functions: dict[str, FunctionGraph] = field(default_factory=dict)

    def main_nodes(self) -> list[Any]:
        return needed_nodes(self.graph_def.node, [r for _, r in self.outputs], self.label,
                            bound=[i.node for i in self.inputs])

    def has_function(self, name: str) -> bool:
        return any(f.signature.name == name for f in self.graph_def.library.function)

    def function(self, name: str) -> FunctionGraph:
        """Library function `name` as a graph (converted once)."""
        if name not in self._functions:
            fdef = next((f for f in self.graph_def.library.function
                         if f.signature.name == name), None)
            if fdef is None:
                raise ModelFileError(f"{self.label} calls function {name!r}, which its function "
                                     "library does not hold; the graph is incomplete.")
            gd, nested = self._function_graph_def(fdef)
            args = [a.name for a in fdef.signature.input_arg]
            outs = [tensor_ref(nested.get(fdef.ret[o.name], fdef.ret[o.name]))
                    for o in fdef.signature.output_arg]
            label = f"function {name!r} of {self.label}"
            self._functions[name] = FunctionGraph(name, needed_nodes(gd.node, outs, label, args),
                                                  args, outs)
        return self._functions[name]

    def _function_graph_def(self, fdef: Any) -> tuple[Any, dict[str, str]]:
        """TensorFlow's flattening of a FunctionDef, with the library's functions known as
        ops (a node may call one by naming it as its op)."""
        from tensorflow.python.framework.function_def_to_graph import function_def_to_graph_def

        tf = import_tensorflow()
        with tf.Graph().as_default():
            library = tf.compat.v1.GraphDef()
            library.library.CopyFrom(self.graph_def.library)
            tf.graph_util.import_graph_def(library, name="")
            return function_def_to_graph_def(fdef)

    def all_nodes(self) -> list[tuple[Any, str]]:
        """Every node the outputs need, with the graph or function it is in, following calls
        into the library."""
        out = [(n, self.label) for n in self.main_nodes()]
        seen: set[str] = set()
        todo = [f for n, _ in out for f in called_functions(n)]
        while todo:
            name = todo.pop()
            if name in seen or not self.has_function(name):
                continue
            seen.add(name)
            for n in self.function(name).nodes:
                out.append((n, f"function {name!r}"))
                todo.extend(called_functions(n))
        return out


# reading ------------------------------------------------------------------------------------
def read_model(model: Any, input_shapes: Mapping[str, Sequence[int]],
               signature: str | None = None, inputs: Sequence[str] | None = None,
               outputs: Sequence[str] | None = None) -> TFModel:
    if isinstance(model, (str, os.PathLike)):
        return _read_path(Path(model), input_shapes, signature, inputs, outputs)
    tf = import_tensorflow()
    if isinstance(model, tf.compat.v1.GraphDef):
        return _graph_def_model(model, "the GraphDef", inputs, outputs)
    if isinstance(model, tf.types.experimental.ConcreteFunction):
        return _freeze(model, "the concrete function", None)
    if hasattr(model, "signatures") and not _is_keras(model):
        return _signature_model(model, signature, "the SavedModel object")
    if _is_keras(model):
        return _trace_keras(model, input_shapes)
    raise ModelFileError(
        f"the TensorFlow frontend reads Keras models, SavedModel directories and objects, "
        f"concrete functions, GraphDefs and .pb/.keras/.h5 files, not {type(model).__name__}.")


def _is_keras(model: Any) -> bool:
    roots = {c.__module__.partition(".")[0] for c in type(model).__mro__}
    return bool(roots & {"keras", "tf_keras"}) and callable(model)


def _read_path(path: Path, input_shapes: Mapping[str, Sequence[int]], signature: str | None,
               inputs: Sequence[str] | None, outputs: Sequence[str] | None) -> TFModel:
    if not path.exists():
        raise ModelFileError(f"TensorFlow model {str(path)!r} does not exist (resolved to "
                             f"{path.resolve()}). Check the path.")
    if path.is_dir():
        if not (path / "saved_model.pb").is_file():
            raise ModelFileError(
                f"{str(path)!r} is a directory without saved_model.pb, so not a SavedModel. "
                "Pass a SavedModel directory (model.export(dir) or tf.saved_model.save), a "
                ".keras/.h5 file or a frozen GraphDef .pb file.")
        if not (path / "variables").is_dir():
            raise ModelFileError(
                f"SavedModel {str(path)!r} has no variables/ folder: its weights are missing "
                "(a partial copy?). Copy the whole SavedModel directory, variables/ included, "
                "or export it again.")
        tf = import_tensorflow()
        try:
            obj = tf.saved_model.load(str(path))
        except Exception as e:  # noqa: BLE001  (TF raises many kinds, all mean "unreadable")
            raise ModelFileError(
                f"SavedModel {str(path)!r} could not be loaded: {type(e).__name__}: "
                f"{_first_line(e)}. Export it again, or check that variables/ is complete."
            ) from None
        return _signature_model(obj, signature, f"SavedModel {path.name!r}")
    if path.suffix.lower() in (".keras", ".h5"):
        import_tensorflow()
        import keras

        try:
            model = keras.models.load_model(str(path), compile=False)
        except Exception as e:  # noqa: BLE001
            raise ModelFileError(
                f"Keras model file {str(path)!r} could not be loaded: {type(e).__name__}: "
                f"{_first_line(e)}. Save it again with model.save({path.name!r}).") from None
        return _trace_keras(model, input_shapes, f"Keras model {path.name!r}")
    return _read_graph_def(path, inputs, outputs)


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0][:300] if text else "no details"


def _read_graph_def(path: Path, inputs: Sequence[str] | None, outputs: Sequence[str] | None
                    ) -> TFModel:
    data = path.read_bytes()
    if not data:
        raise ModelFileError(f"TensorFlow graph file {str(path)!r} is empty (0 bytes): the "
                             "export or copy did not finish. Write it again.")
    tf = import_tensorflow()
    from google.protobuf.message import DecodeError

    gd = tf.compat.v1.GraphDef()
    try:
        gd.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError) as e:
        raise ModelFileError(
            f"{str(path)!r} ({len(data)} bytes) does not parse as a TensorFlow GraphDef: it is "
            f"truncated or corrupt, or not a frozen graph ({e}). Write the frozen graph again "
            "(graph_def.SerializeToString()) and compare its size with the source.") from None
    if not gd.node or any(not n.name or not n.op for n in gd.node):
        hint = (" It is the saved_model.pb of a SavedModel: pass the SavedModel directory."
                if path.name == "saved_model.pb" else "")
        raise ModelFileError(
            f"{str(path)!r} is not a TensorFlow GraphDef (it holds no named nodes; it starts "
            f"with {data[:16]!r}).{hint} Pass a frozen GraphDef .pb, a SavedModel directory or "
            "a .keras/.h5 file.")
    return _graph_def_model(gd, f"TensorFlow graph {path.name!r}", inputs, outputs)


def _graph_def_model(gd: Any, label: str, inputs: Sequence[str] | None,
                     outputs: Sequence[str] | None) -> TFModel:
    by_name = {n.name: n for n in gd.node}
    names = list(inputs) if inputs else [n.name for n in gd.node if n.op == "Placeholder"]
    specs = []
    for name in names:
        node = by_name.get(node_of(name))
        if node is None or node.op != "Placeholder":
            have = [n.name for n in gd.node if n.op == "Placeholder"]
            raise ModelFileError(f"{label} has no Placeholder {name!r} to be an input; its "
                                 f"Placeholders: {have}")
        specs.append(placeholder_spec(node))
    if outputs:
        outs = [(node_of(o) if tensor_ref(o).endswith(":0") else o, tensor_ref(o))
                for o in outputs]
    else:
        outs = [(n, f"{n}:0") for n in _sinks(gd)]
        if not outs:
            raise ModelFileError(f"{label} has no output (every node's result is read by "
                                 "another node); pass outputs=[...] to name them.")
    return TFModel(gd, specs, outs, label)


def _sinks(gd: Any) -> list[str]:
    """Nodes nothing reads (through data or control edges) that produce a tensor and depend
    on an input: the graph's results (NoOps, constants and dangling variable reads left out)."""
    from tensorflow.python.framework import op_def_registry

    read = {node_of(i.lstrip("^")) for n in gd.node for i in n.input}
    readers: dict[str, list[str]] = {}
    for n in gd.node:
        for i in data_inputs(n):
            readers.setdefault(node_of(i), []).append(n.name)
    fed = {n.name for n in gd.node if n.op == "Placeholder"}
    todo = list(fed)
    while todo:  # everything an input reaches
        for r in readers.get(todo.pop(), []):
            if r not in fed:
                fed.add(r)
                todo.append(r)
    out = []
    for n in gd.node:
        if n.name in read or n.name not in fed or n.op in ("Placeholder", "NoOp"):
            continue
        op_def = op_def_registry.get(n.op)
        if op_def is None or op_def.output_arg:
            out.append(n.name)
    return out


def placeholder_spec(node: Any) -> InputSpec:
    tf = import_tensorflow()
    dtype = tf.dtypes.as_dtype(node.attr["dtype"].type).name
    shape_attr = node.attr["shape"].shape if "shape" in node.attr else None
    if shape_attr is None or shape_attr.unknown_rank:
        return InputSpec(node.name, None, dtype)
    return InputSpec(node.name, tuple(d.size if d.size >= 0 else None for d in shape_attr.dim),
                     dtype)


# freezing -------------------------------------------------------------------------------------
def _freeze(fn: Any, label: str, output_names: list[str] | None, keep: Any = None) -> TFModel:
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    try:
        frozen = convert_variables_to_constants_v2(fn, lower_control_flow=False)
    except Exception as e:  # noqa: BLE001
        raise ModelFileError(f"{label} could not be frozen (variables to constants): "
                             f"{type(e).__name__}: {_first_line(e)}") from None
    gd = frozen.graph.as_graph_def()
    by_name = {n.name: n for n in gd.node}
    specs = [placeholder_spec(by_name[t.op.name]) for t in frozen.inputs]
    refs = [tensor_ref(t.name) for t in frozen.outputs]
    names = output_names or [f"output_{k}" for k in range(len(refs))]
    return TFModel(gd, specs, list(zip(names, refs)), label, keep_alive=keep)


def _signature_model(obj: Any, signature: str | None, label: str) -> TFModel:
    signature = signature or "serving_default"
    sigs = dict(getattr(obj, "signatures", {}) or {})
    if signature not in sigs:
        have = ", ".join(repr(k) for k in sigs) or "none"
        raise ModelFileError(f"{label} has no signature {signature!r} (its signatures: {have}). "
                             "Pass signature=NAME, or export the model with a serving "
                             "signature (model.export(dir)).")
    fn = sigs[signature]
    structured = fn.structured_outputs
    names = sorted(structured) if isinstance(structured, dict) else None
    return _freeze(fn, f"{label} (signature {signature!r})", names, keep=obj)


def _trace_keras(model: Any, input_shapes: Mapping[str, Sequence[int]], label: str = ""
                 ) -> TFModel:
    tf = import_tensorflow()
    label = label or f"Keras model {getattr(model, 'name', type(model).__name__)!r}"
    specs = keras_inputs(model, input_shapes, label)
    check_input_names(input_shapes, specs, label)
    tensor_specs = [tf.TensorSpec(static_shape(s, input_shapes, label, specs), s.dtype,
                                  name=_op_name(s.name)) for s in specs]
    many = len(specs) > 1

    def call(*xs: Any) -> Any:
        return model(list(xs) if many else xs[0], training=False)

    try:
        fn = tf.function(call).get_concrete_function(*tensor_specs)
    except Exception as e:  # noqa: BLE001
        raise ModelFileError(f"{label} could not be traced at input shapes "
                             f"{[tuple(t.shape) for t in tensor_specs]}: {type(e).__name__}: "
                             f"{_first_line(e)}") from None
    out = fn.structured_outputs
    names = sorted(out) if isinstance(out, dict) else None
    tfm = _freeze(fn, label, names, keep=model)
    # graph inputs keep the Keras names (TensorFlow may have changed them for Placeholders)
    tfm.inputs = [InputSpec(s.name, p.shape, p.dtype, p.node) for s, p in zip(specs, tfm.inputs)]
    return tfm


def _op_name(name: str) -> str:
    """A name TensorFlow accepts for a Placeholder."""
    name = re.sub(r"[^A-Za-z0-9_.\-/]", "_", name)
    return name if re.match(r"[A-Za-z0-9.]", name) else f"x{name}"


def keras_inputs(model: Any, input_shapes: Mapping[str, Sequence[int]], label: str
                 ) -> list[InputSpec]:
    """The model's declared inputs (Keras 3 or tf_keras), or those of `input_shapes`."""
    try:
        tensors = list(getattr(model, "inputs", None) or [])
    except (AttributeError, ValueError):  # a subclassed model that was never built
        tensors = []
    if not tensors:
        if input_shapes:
            return [InputSpec(k, tuple(int(d) for d in v), "float32")
                    for k, v in input_shapes.items()]
        raise DynamicShapeError(
            f"{label} declares no inputs (a subclassed model not built from keras.Input), so "
            "their shapes are unknown: pass input_shapes={'x': (1, ...)} (float32 inputs).")
    specs = []
    for t in tensors:
        dims = list(t.shape) if t.shape is not None else None
        shape = None if dims is None else tuple(None if d is None else int(d) for d in dims)
        dtype = getattr(t.dtype, "name", None) or str(t.dtype)
        specs.append(InputSpec(str(getattr(t, "name", "input")).split(":")[0], shape, dtype))
    return specs


def check_input_names(input_shapes: Mapping[str, Sequence[int]], specs: Sequence[InputSpec],
                      label: str) -> None:
    names = [s.name for s in specs]
    unknown = set(input_shapes) - set(names)
    if unknown:
        raise DynamicShapeError(f"input_shapes names {sorted(unknown)}, which {label} does "
                                f"not have as inputs; its inputs are {names}.")


def static_shape(spec: InputSpec, input_shapes: Mapping[str, Sequence[int]], label: str,
                 specs: Sequence[InputSpec]) -> tuple[int, ...]:
    """The shape an input is compiled for: `input_shapes[name]`, else its own with an unknown
    batch (dim 0) set to 1; any other unknown dim is a DynamicShapeError."""
    given = input_shapes.get(spec.name)
    if given is not None:
        given = tuple(int(d) for d in given)
        if spec.shape is not None:
            fixed = [(k, d, g) for k, (d, g) in enumerate(zip(spec.shape, given))
                     if d is not None and d != g]
            if len(given) != len(spec.shape) or fixed:
                raise DynamicShapeError(
                    f"input_shapes[{spec.name!r}] = {given} does not fit input {spec.name!r} of "
                    f"{label}, whose shape is {_show(spec.shape)}; give every dim, keeping "
                    "the known ones.", spec.name)
        return given
    if spec.shape is None:
        raise DynamicShapeError(
            f"input {spec.name!r} of {label} has an unknown rank; pass its shape with "
            f"input_shapes={{{spec.name!r}: (...)}}.", spec.name)
    unknown = [k for k, d in enumerate(spec.shape) if d is None and k > 0]
    if unknown:
        example = {s.name: tuple(1 if d is None else d for d in (s.shape or ())) for s in specs}
        raise DynamicShapeError(
            f"input {spec.name!r} of {label} has the shape {_show(spec.shape)}, unknown in dim "
            f"{', '.join(map(str, unknown))}; tensorforge compiles for static shapes. Pass "
            f"the shape, e.g. input_shapes={example} (or --input-shape on the command line).",
            spec.name)
    return tuple(1 if d is None else d for d in spec.shape)


def _show(shape: Shape) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in shape or ()) + ")"
