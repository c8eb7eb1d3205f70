"""An `onnx.backend.base.Backend` over the frontend, for ONNX's backend node tests.

Execution goes through `_execute(graph, inputs)`, the single place to switch from the numpy
reference interpreter to compiled kernels."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep

from tensorforge.graph import Graph

from .errors import DynamicShapeError, OnnxImportError
from .frontend import load

#: the target node tests compile for; one thread keeps CI's two cores for pytest itself
TARGET = "llvm -num-threads=1"


def _compile(graph: Graph) -> Any:
    """Compile `graph` for the CPU (generated kernels; numpy only moves the inputs in)."""
    import tensorforge

    return tensorforge.compile(graph, target=TARGET)


#: ops whose output depends on the shape of their input only, not on its values
_SHAPE_ONLY = {"Shape", "Size"}
#: operands that only size or place the result, or select the op's mode (Dropout's ratio
#: and training_mode): a specialized input may feed these
_SHAPE_OPERANDS: dict[str, set[int]] = {
    "Dropout": {1, 2},
    "Reshape": {1}, "Expand": {1}, "Tile": {1}, "ConstantOfShape": {0}, "Slice": {1, 2, 3, 4},
    "Pad": {1, 3}, "Resize": {1, 2, 3}, "Upsample": {1}, "Squeeze": {1}, "Unsqueeze": {1},
    "Split": {1}, "TopK": {1}, "OneHot": {1}, "CenterCropPad": {1}, "Range": {1},
    "CumSum": {1}, "CumProd": {1}, "Col2Im": {1, 2}, "DFT": {1, 2}, "STFT": {1, 3},
    "AffineGrid": {1}, "MaxUnpool": {2}, "ReduceSum": {1}, "ReduceMean": {1},
    "ReduceMax": {1}, "ReduceMin": {1}, "ReduceProd": {1}, "ReduceL1": {1}, "ReduceL2": {1},
    "ReduceLogSum": {1}, "ReduceLogSumExp": {1}, "ReduceSumSquare": {1},
}


class TensorforgeRep(BackendRep):
    """A converted model; `run` takes inputs in the order of the model's inputs.

    A model whose shapes depend on input values (a Reshape's shape fed as an input, as ONNX's
    node tests do) or on symbolic dims is converted at `run` with the actual input shapes,
    and the inputs that shapes depend on *specialized*: they stay inputs of the compiled
    model (its kernels read them), and import also knows their values, so one compiled model
    is cached per distinct value of those inputs (a JIT specializing on shape arguments)."""

    def __init__(self, model: onnx.ModelProto, graph: Graph | None, **options: Any):
        self.model = model
        self.graph = graph
        self.options = options
        inits = {t.name for t in model.graph.initializer}
        self.input_names = [i.name for i in model.graph.input if i.name not in inits]
        self._specialized: set[str] = set()
        self._cache: dict[Any, Any] = {}

    def _key(self, feed: dict[str, np.ndarray]) -> Any:
        if self.graph is not None:
            return "static"
        return tuple(sorted((k, v.shape, v.dtype.str,
                             v.tobytes() if k in self._specialized else b"")
                            for k, v in feed.items()))

    def _compiled_for(self, feed: dict[str, np.ndarray]) -> Any:
        key = self._key(feed)
        if key not in self._cache:
            graph = self.graph if self.graph is not None else self._convert(feed)
            key = self._key(feed)  # converting may have learned which inputs to specialize
            if key not in self._cache:
                self._cache[key] = _compile(graph)
        return self._cache[key]

    def _convert(self, feed: dict[str, np.ndarray]) -> Graph:
        while True:
            spec = {n: feed[n] for n in self._specialized}
            shapes = {k: v.shape for k, v in feed.items() if k not in spec}
            try:
                g = load(self.model, shapes, specialize=spec, **self.options)
                self._check_not_folded(g)
                return g
            except DynamicShapeError as e:
                need = [n for n in self._input_ancestors(e.value_name)
                        if n not in self._specialized]
                if not need:
                    raise
                self._specialized.update(need)

    def _check_not_folded(self, g: Graph) -> None:
        """Inputs stay inputs: an output that import computed (a constant) must not depend
        on the values of a specialized input other than through shape operands; that would
        be the answer folded from the data, not computed by the kernels."""
        producer = {o: n for n in self.model.graph.node for o in n.output}
        for out, v in zip(self.model.graph.output, g.outputs):
            if not v.is_const:
                continue
            stack, seen = [out.name], set()
            while stack:
                name = stack.pop()
                if name in seen:
                    continue
                seen.add(name)
                if name in self._specialized:
                    raise OnnxImportError(
                        f"output {out.name!r} would be folded at import from the value of "
                        f"input {name!r} (specialized for the shapes it decides); the "
                        "kernels must compute it. This is a frontend bug: report it.")
                n = producer.get(name)
                if n is None or n.op_type in _SHAPE_ONLY:
                    continue
                skip = _SHAPE_OPERANDS.get(n.op_type, set())
                stack.extend(x for i, x in enumerate(n.input) if x and i not in skip)

    def _input_ancestors(self, name: str | None) -> list[str]:
        """The model inputs whose values `name` is computed from."""
        producer = {o: n for n in self.model.graph.node for o in n.output}
        out, stack, seen = [], [name], set()
        while stack:
            v = stack.pop()
            if v is None or v in seen:
                continue
            seen.add(v)
            if v in self.input_names:
                out.append(v)
            elif v in producer and producer[v].op_type not in _SHAPE_ONLY:
                stack.extend(producer[v].input)
        return out

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        if isinstance(inputs, Mapping):
            feed = {k: np.asarray(v) for k, v in inputs.items()}
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            feed = {n: np.asarray(a) for n, a in zip(self.input_names, inputs)}
        cm = self._compiled_for(feed)
        outs = cm.run({i["name"]: feed[i["name"]] for i in cm.input_specs})
        return tuple(np.asarray(o) for o in outs)


class TensorforgeBackend(Backend):
    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        return device.upper() == "CPU"

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any
                ) -> TensorforgeRep:
        super().prepare(model, device, **kwargs)
        options = {k: v for k, v in kwargs.items() if k in ("input_shapes",)}
        try:
            graph: Graph | None = load(model, **options)
        except DynamicShapeError:
            graph = None  # shapes depend on input values: convert at run
        return TensorforgeRep(model, graph)

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU",
                  **kwargs: Any) -> tuple[np.ndarray, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device.upper() == "CPU"


prepare = TensorforgeBackend.prepare
run_model = TensorforgeBackend.run_model
supports_device = TensorforgeBackend.supports_device

__all__: Sequence[str] = ["TensorforgeBackend", "TensorforgeRep", "prepare", "run_model",
                          "supports_device"]
