"""`SymbolicModel`: a model compiled once for every size within bounds (`compiler.symbolic`).

Its description is the one at the upper bounds plus `desc["symbolic"]`: the dims with their
bounds, the symbolic shape of each value that has a dynamic dim (an int, or ``[name, a, b]``
for ``a * name + b``), and the size names each kernel takes after its buffers. A call binds
each name from the inputs' shapes (the same name must have one value; it must lie in the
bounds: else an `InputError` naming the dim, the value and the bound), then runs a
`GraphExecutor` bound at those sizes: the same kernels and constants (a constant with a
dynamic axis is viewed at its prefix), values viewed at the actual sizes in storages sized
at the bounds, outputs allocated at the actual sizes. Executors are cached per size (at most
`max_sizes`, least recently used dropped); binding one is a few ms, no compile.

Like `graph_executor`, it imports nothing of the compiler, so a package runs after
`tensorforge.load` anywhere within its bounds."""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tensorforge.errors import PackageError

from .graph_executor import BenchmarkResult, CompiledModel, GraphExecutor, InputError

__all__ = ["SymbolicModel"]


def eval_dim(d: Any, sizes: Mapping[str, int]) -> int:
    """An int, or ``[name, a, b]`` -> a * sizes[name] + b."""
    if isinstance(d, int):
        return d
    name, a, b = d
    return int(a) * int(sizes[name]) + int(b)


class SymbolicModel:
    """`run(inputs)` at any size within the bounds; `dims` (name -> (low, high)),
    `executor_for(sizes)`, `benchmark(inputs)`, `export(path)`, `close()`."""

    def __init__(self, module: Any, desc: Mapping[str, Any], params: Mapping[str, np.ndarray],
                 max_concurrency: int | None = None, derived: Mapping[str, Any] | None = None,
                 on_close: Sequence[Any] = (), max_sizes: int = 8):
        sym = desc.get("symbolic")
        if not isinstance(sym, Mapping) or not isinstance(sym.get("dims"), Mapping):
            raise PackageError("a symbolic model description lacks its 'symbolic' dims")
        self.module = module
        self.desc = dict(desc)
        self.derived = dict(derived or {})
        self.dims = {n: (int(lo), int(hi)) for n, (lo, hi) in sym["dims"].items()}
        self.shapes = {int(i): s for i, s in sym.get("shapes", {}).items()}
        self.kernel_sizes = {int(i): list(n) for i, n in sym.get("kernel_sizes", {}).items()}
        for names in self.kernel_sizes.values():
            for n in names:
                if n not in self.dims:
                    raise PackageError(f"a kernel takes size {n!r}, which is not a dim of the "
                                       "model")
        self.max_concurrency = max_concurrency
        self.max_sizes = max_sizes
        self._params = dict(params)
        self._on_close = list(on_close)
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[int, ...], GraphExecutor] = OrderedDict()
        self._closed = False
        #: the executor at the bounds (bound at load: a description that does not match the
        #: kernels fails here); its kernels take sizes, so it runs kernel by kernel (no
        #: ahead-of-time entry: `aot_plan` is None)
        self.executor = self.executor_for({n: hi for n, (_, hi) in self.dims.items()})

    # sizes ----------------------------------------------------------------------------------
    def sizes_of(self, inputs: Mapping[str, Any] | Sequence[Any]) -> dict[str, int]:
        """Each dim's size from the inputs' shapes, checked: consistent, within bounds; the
        static dims are checked by the executor."""
        specs = self.desc["inputs"]
        if isinstance(inputs, np.ndarray):
            inputs = [inputs]
        if isinstance(inputs, Mapping):
            given = [(s, inputs.get(s["name"])) for s in specs]
        else:
            given = list(zip(specs, inputs))
        found: dict[str, tuple[int, str]] = {}
        for spec, x in given:
            sym = self.shapes.get(spec["value"])
            shape = getattr(x, "shape", None)
            if sym is None or shape is None or len(shape) != len(sym):
                continue  # (missing, wrong rank: the executor's check says so)
            for k, (d, got) in enumerate(zip(sym, shape)):
                if isinstance(d, int):
                    continue
                name, a, b = d
                size, rem = divmod(int(got) - int(b), int(a))
                if rem:
                    raise InputError(f"input {spec['name']!r} dim {k} is {got}, which is not "
                                     f"{a} * {name} + {b} for any {name}")
                prev = found.setdefault(name, (size, spec["name"]))
                if prev[0] != size:
                    raise InputError(f"{name} is {prev[0]} in input {prev[1]!r} but {size} "
                                     f"in input {spec['name']!r} (dim {k}); the inputs must "
                                     f"agree on {name}")
        for name, (lo, hi) in self.dims.items():
            if name not in found:
                raise InputError(f"no input gives the size {name!r}; pass every input")
            v = found[name][0]
            if not lo <= v <= hi:
                raise InputError(f"{name} = {v} (input {found[name][1]!r}) is outside the "
                                 f"bounds the model was compiled for ({lo} <= {name} <= {hi}); "
                                 "compile with a larger bound")
        return {n: found[n][0] for n in self.dims}

    def concrete(self, sizes: Mapping[str, int]) -> tuple[dict[str, Any], dict[str, Any]]:
        """(description, params) of a static model at `sizes` (same kernels, storages)."""
        desc = copy.deepcopy(self.desc)
        del desc["symbolic"]
        values = desc["values"]
        params = dict(self._params)
        for i, sym in self.shapes.items():
            shape = [eval_dim(d, sizes) for d in sym]
            v = values[i]
            if v["kind"] == "const":
                arr = self._params[v["param"]]
                params[v["param"]] = np.ascontiguousarray(
                    np.asarray(arr).reshape(v["shape"])[tuple(slice(0, s) for s in shape)])
            v["shape"] = shape
        for entry in list(desc["inputs"]) + list(desc["outputs"]):
            entry["shape"] = list(values[entry["value"]]["shape"])
        for i, names in self.kernel_sizes.items():
            desc["kernels"][i]["scalars"] = [int(sizes[n]) for n in names]
        return desc, params

    def executor_for(self, sizes: Mapping[str, int]) -> GraphExecutor:
        """The executor bound at `sizes` (made on first use, cached)."""
        key = tuple(int(sizes[n]) for n in self.dims)
        with self._lock:
            if self._closed:
                from .arena import ClosedError

                raise ClosedError("this model is closed")
            ex = self._cache.get(key)
            if ex is not None:
                self._cache.move_to_end(key)
                return ex
        desc, params = self.concrete(sizes)
        ex = GraphExecutor(self.module, desc, params, self.max_concurrency)
        with self._lock:
            self._cache[key] = ex
            while len(self._cache) > self.max_sizes:
                _, old = self._cache.popitem(last=False)
                old.pool.close()
        return ex

    # running --------------------------------------------------------------------------------
    def run(self, inputs: Mapping[str, Any] | Sequence[Any]) -> list[np.ndarray]:
        return self.executor_for(self.sizes_of(inputs)).run(inputs)

    def benchmark(self, inputs: Any = None, repeat: int = 10, number: int = 1,
                  warmup: int = 1) -> BenchmarkResult:
        """`CompiledModel.benchmark` at the inputs' sizes (random inputs at the bounds when
        none are given)."""
        inputs = self.random_inputs() if inputs is None else inputs
        ex = self.executor_for(self.sizes_of(inputs))
        return CompiledModel.benchmark(_Bound(ex), inputs, repeat, number, warmup)

    def random_inputs(self, seed: int = 0, **sizes: int) -> dict[str, np.ndarray]:
        """`CompiledModel.random_inputs` at `sizes` (default: the bounds)."""
        at = {n: int(sizes.get(n, hi)) for n, (_, hi) in self.dims.items()}
        return CompiledModel.random_inputs(_Bound(self.executor_for(at)), seed)

    @property
    def executor_kind(self) -> str:
        return "graph"

    @property
    def executor_reason(self) -> str:
        return self.executor.reason

    @property
    def output_specs(self) -> list[dict[str, Any]]:
        return self._specs(o for o in self.desc["outputs"] if not o.get("hidden"))

    @property
    def params(self) -> Mapping[str, np.ndarray]:
        return self._params

    @property
    def kernels(self) -> list[str]:
        return [k["name"] for k in self.desc["kernels"]]

    @property
    def input_specs(self) -> list[dict[str, Any]]:
        """Inputs with their dynamic dims as names (``(1, 'seq')``)."""
        return self._specs(self.desc["inputs"])

    def _specs(self, entries: Any) -> list[dict[str, Any]]:
        out = []
        for spec in entries:
            sym = self.shapes.get(spec["value"], spec["shape"])
            out.append({"name": spec["name"], "dtype": spec["dtype"], "shape": tuple(
                d if isinstance(d, int) else d[0] if list(d[1:]) == [1, 0]
                else f"{d[1]}*{d[0]}+{d[2]}" for d in sym)})
        return out

    def export(self, path: Any) -> str:
        """Write one `.tfpkg` carrying the symbolic signature; `tensorforge.load` returns a
        SymbolicModel."""
        from .package import export_package

        return export_package(self, path)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            cache, self._cache = list(self._cache.values()), OrderedDict()
        for ex in cache:
            ex.pool.close()
        hooks, self._on_close = self._on_close, []
        for hook in hooks:
            hook()

    def __enter__(self) -> SymbolicModel:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        dims = ", ".join(f"{lo}<={n}<={hi}" for n, (lo, hi) in self.dims.items())
        return (f"<SymbolicModel {self.desc.get('name', '')} ({dims}), "
                f"{len(self.desc['kernels'])} kernels compiled once>")


class _Bound:
    """What `CompiledModel.benchmark` and `random_inputs` read: an executor, its specs."""

    def __init__(self, executor: GraphExecutor):
        self.executor = executor
        self.input_specs = [{"name": i["name"], "shape": tuple(i["shape"]),
                             "dtype": i["dtype"]} for i in executor.desc["inputs"]]

    def random_inputs(self, seed: int = 0) -> dict[str, np.ndarray]:
        return CompiledModel.random_inputs(self, seed)
