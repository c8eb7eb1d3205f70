"""Bounded dynamic dimensions: ``compile(model, input_shapes={"input_ids": (1, "seq<=512")})``.

A dimension written as a string names a size that varies between calls, with its bounds:
``"seq<=512"`` (1 to 512) or ``"16<=seq<=512"``. The same name in several inputs is one size
(BERT's ids, segment ids and mask share ``seq``). `compile` then returns a `DynamicModel`.

What it does (and what it does not yet): the compiler's graph level is static (every value
has a shape of ints), so a `DynamicModel` is a set of *static specializations* of one
model: the one at the upper bounds is compiled at once (so a model that cannot take the
bounds fails at `compile`, and the largest memory plan is known); any other size in the
bounds is compiled the first time `run` sees it, then cached (`specialize`, `precompile`);
constants equal across specializations (the weights) are held once.
Sizes outside the bounds, a static dimension that differs, or one name bound to two sizes
in one call are a clear `InputError` before any work. This is the nearest real thing to the
issue's symbolic compile (one compile, symbolic loop bounds with guards); what is missing
for that is symbolic shapes in the graph IR and its passes (docs/architecture.md)."""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import TensorforgeError

_BOUND = re.compile(r"^\s*(?:(\d+)\s*<=\s*)?([A-Za-z_]\w*)\s*<=\s*(\d+)\s*$")


@dataclass(frozen=True)
class DimBound:
    """A named dynamic size and its inclusive bounds."""

    name: str
    low: int
    high: int

    def __str__(self) -> str:
        return f"{self.low}<={self.name}<={self.high}"


def parse_dim(text: str, where: str) -> DimBound:
    """``"seq<=512"`` or ``"16<=seq<=512"`` -> DimBound; anything else is a clear error."""
    m = _BOUND.match(text)
    if m is None:
        raise TensorforgeError(
            f"{where}: dynamic dimension {text!r} is not understood; write 'name<=MAX' or "
            "'MIN<=name<=MAX' (e.g. 'seq<=512'): a dynamic size needs an upper bound")
    low, name, high = int(m.group(1) or 1), m.group(2), int(m.group(3))
    if not 1 <= low <= high:
        raise TensorforgeError(f"{where}: dynamic dimension {text!r} has bounds {low}..{high}; "
                               "need 1 <= MIN <= MAX")
    return DimBound(name, low, high)


def split_input_shapes(input_shapes: Mapping[str, Sequence[Any]] | None
                       ) -> tuple[dict[str, tuple[int | DimBound, ...]], dict[str, DimBound]]:
    """input name -> dims (ints and DimBounds), and name -> DimBound of every dynamic size;
    empty dicts when nothing is dynamic. One name with two different bounds is an error."""
    template: dict[str, tuple[int | DimBound, ...]] = {}
    dims: dict[str, DimBound] = {}
    for inp, shape in (input_shapes or {}).items():
        row: list[int | DimBound] = []
        for k, d in enumerate(shape):
            if not isinstance(d, str):
                row.append(d)
                continue
            b = parse_dim(d, f"input_shapes[{inp!r}][{k}]")
            if dims.setdefault(b.name, b) != b:
                raise TensorforgeError(f"dynamic size {b.name!r} has two bounds: "
                                       f"{dims[b.name]} and {b}; give it one")
            row.append(b)
        template[inp] = tuple(row)
    return (template, dims) if dims else ({}, {})


class DynamicModel:
    """One model compiled for sizes within bounds (module docstring): `run(inputs)` at any
    size in the bounds; `specialize(**sizes)` the static `CompiledModel` of one size;
    `precompile(seq=[32, 128])` compiles sizes ahead; `compiled_sizes` lists them."""

    def __init__(self, model: Any, target: Any, template: Mapping[str, tuple[Any, ...]],
                 dims: Mapping[str, DimBound], **compile_args: Any):
        from ..graph.ir import Graph

        if isinstance(model, Graph):
            raise TensorforgeError("dynamic input_shapes need a model file or an ONNX "
                                   "ModelProto (a tensorforge Graph has static shapes)")
        self.model, self.target = model, target
        self.template, self.dims = dict(template), dict(dims)
        # the specializations share their weights (`compile.share_params`)
        self._compile_args = {**compile_args, "shared_params": {}}
        self._cache: dict[tuple[int, ...], Any] = {}
        self._lock = threading.Lock()
        self.bounds_model = self.specialize(**{n: b.high for n, b in self.dims.items()})

    @property
    def compiled_sizes(self) -> list[dict[str, int]]:
        return [dict(zip(self.dims, key)) for key in self._cache]

    def _key(self, sizes: Mapping[str, int]) -> tuple[int, ...]:
        unknown = set(sizes) - set(self.dims)
        if unknown:
            raise TensorforgeError(f"unknown dynamic sizes {sorted(unknown)}; this model's "
                                   f"are {', '.join(map(str, self.dims.values()))}")
        key = []
        for name, b in self.dims.items():
            if name not in sizes:
                raise TensorforgeError(f"size {name!r} not given (bounds {b})")
            v = int(sizes[name])
            if not b.low <= v <= b.high:
                from ..runtime.graph_executor import InputError

                raise InputError(f"{name} = {v} is outside the bounds the model was compiled "
                                 f"for ({b}); compile with a larger bound")
            key.append(v)
        return tuple(key)

    def specialize(self, **sizes: int) -> Any:
        """The `CompiledModel` for these sizes (compiled now if not yet; thread-safe)."""
        key = self._key(sizes)
        with self._lock:
            cm = self._cache.get(key)
            if cm is None:
                from .compile import compile as compile_static

                shapes = {inp: tuple(sizes[d.name] if isinstance(d, DimBound) else d
                                     for d in row) for inp, row in self.template.items()}
                cm = compile_static(self.model, self.target, shapes, **self._compile_args)
                self._cache[key] = cm
            return cm

    def precompile(self, **sizes: Sequence[int]) -> None:
        """Compile ahead each combination of the given sizes, e.g. ``seq=[32, 128]``."""
        import itertools

        names = list(sizes)
        for combo in itertools.product(*(sizes[n] for n in names)):
            self.specialize(**dict(zip(names, combo)))

    def sizes_of(self, inputs: Mapping[str, Any]) -> dict[str, int]:
        """The dynamic sizes of a call's inputs (checked against the template)."""
        from ..runtime.graph_executor import InputError

        if not isinstance(inputs, Mapping):
            raise InputError("a model with dynamic sizes takes its inputs by name (a dict)")
        sizes: dict[str, tuple[int, str]] = {}
        for inp, row in self.template.items():
            if inp not in inputs:
                raise InputError(f"input {inp!r} is missing")
            shape = getattr(inputs[inp], "shape", None)
            if shape is None or len(shape) != len(row):
                raise InputError(f"input {inp!r} must have {len(row)} dims "
                                 f"({', '.join(map(str, row))}), got shape {shape}")
            for k, (want, got) in enumerate(zip(row, shape)):
                if isinstance(want, DimBound):
                    prev = sizes.setdefault(want.name, (int(got), inp))
                    if prev[0] != got:
                        raise InputError(f"size {want.name!r} is {prev[0]} in input {prev[1]!r} "
                                         f"but {got} in input {inp!r} (dim {k})")
                elif want != got:
                    raise InputError(f"input {inp!r} dim {k} must be {want}, got {got}")
        return {n: v for n, (v, _) in sizes.items()}

    def run(self, inputs: Mapping[str, Any]) -> list[Any]:
        """Run at the inputs' sizes (compiling that size the first time)."""
        sizes = self.sizes_of(inputs)
        self._key(sizes)  # bounds first: a clear error, no compile
        return self.specialize(**sizes).run(inputs)

    def export(self, path: Any) -> str:
        raise TensorforgeError(
            "a model with dynamic sizes is a set of static specializations; export one: "
            f"model.specialize({', '.join(f'{n}=...' for n in self.dims)}).export(path)")

    def close(self) -> None:
        with self._lock:
            for cm in self._cache.values():
                cm.close()
            self._cache.clear()

    def __repr__(self) -> str:
        sizes = ", ".join(str(b) for b in self.dims.values())
        return f"<DynamicModel ({sizes}), {len(self._cache)} specialization(s) compiled>"
