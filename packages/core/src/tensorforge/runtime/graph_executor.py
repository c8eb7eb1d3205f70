"""The graph executor: runs a compiled model's kernels in order over planned buffers.

It imports numpy, ctypes (through the runtime module) and nothing of the compiler, so an
exported model runs after `tensorforge.load` without llvmlite, onnx, or tensorforge's IR.

Memory: one preallocated, 64-byte aligned byte pool per storage of the memory plan; every
intermediate value is a typed view at the start of its storage. Constants are bound once as
kernel arguments; graph inputs and outputs have their own buffers (inputs are copied in after
their names, shapes and dtypes are checked; outputs are copied out)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tensorforge.errors import TensorforgeError

__all__ = ["BenchmarkResult", "CompiledModel", "GraphExecutor", "InputError"]

_ALIGN = 64


class InputError(TensorforgeError, ValueError):
    """Inputs that do not match what the model expects."""


def aligned_empty(shape: Sequence[int], dtype: str, nbytes: int | None = None) -> np.ndarray:
    """An uninitialized C-contiguous array whose data starts on a 64-byte boundary."""
    dt = np.dtype(dtype)
    size = int(np.prod(shape, dtype=np.int64)) * dt.itemsize if nbytes is None else nbytes
    raw = np.empty(size + _ALIGN, dtype=np.uint8)
    off = (-raw.ctypes.data) % _ALIGN
    buf = raw[off:off + size]
    if nbytes is not None:
        return buf
    return buf.view(dt).reshape(tuple(shape))


def _bind(fn: Any, args: list[np.ndarray]) -> tuple[Any, list[np.ndarray], Any, tuple]:
    """(fn, args, raw C function, argument pointers): the executor's arrays never move, so a
    kernel's argument checks run once here and each run calls the C function directly (a
    model of hundreds of small kernels, like an unrolled LSTM, spends its time in the checks
    otherwise). Kernels that are not plain CFunctions keep the checked call (cfunc None)."""
    cfunc = getattr(fn, "_cfunc", None)
    checks = getattr(fn, "_checks", None)
    if cfunc is None or checks is None or len(checks) != len(args) or any(
            c.param.kind != "buffer" for c in checks):
        return fn, args, None, ()
    ptrs = tuple(fn._convert(c, a) for c, a in zip(checks, args))
    if getattr(fn, "_n_buffers", 0) > 1:
        fn._check_distinct(list(ptrs))
    return fn, args, cfunc, ptrs


def _skipped() -> None:
    """Stands for a kernel whose work `get_outputs` does (see `_reshape_to_output`)."""


class GraphExecutor:
    """Kernels of `module` run in the order of `desc["kernels"]` (see `compiler.describe`)."""

    def __init__(self, module: Any, desc: Mapping[str, Any], params: Mapping[str, np.ndarray]):
        self.desc = desc
        self.module = module
        self.pools = [aligned_empty((), "uint8", int(n)) for n in desc["storages"]]
        arrays: list[np.ndarray] = []
        for v in desc["values"]:
            shape, dtype = tuple(v["shape"]), v["dtype"]
            if v["kind"] == "const":
                arr = aligned_empty(shape, dtype)
                arr[...] = np.asarray(params[v["param"]], dtype=dtype).reshape(shape)
            elif v["kind"] == "intermediate":
                nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
                arr = self.pools[v["storage"]][:nbytes].view(dtype).reshape(shape)
            else:
                arr = aligned_empty(shape, dtype)
            arrays.append(arr)
        self.arrays = arrays
        self.inputs = list(desc["inputs"])
        self.outputs = list(desc["outputs"])
        self._calls = [(module[k["name"]], [arrays[a] for a in k["args"]])
                       for k in desc["kernels"]]
        self._fast = [_bind(fn, args) for fn, args in self._calls]
        self._output_source: dict[int, int] = {}
        for i, k in enumerate(desc["kernels"]):
            src = self._reshape_to_output(i, k)
            if src is not None:  # the kernel only copies: read the output from its source
                self._output_source[k["args"][1]] = src
                self._fast[i] = (_skipped, [], None, ())

    def _reshape_to_output(self, i: int, k: Mapping[str, Any]) -> int | None:
        """The source value of kernel `i` if it only reshapes an intermediate into a graph
        output that nothing reads later and whose source storage no later kernel touches
        (a model ending in a reshape: the copy is left to `get_outputs`), else None."""
        vals = self.desc["values"]
        if set(k.get("ops", ())) != {"reshape"} or len(k["args"]) != 2 or k["outputs"] != 1:
            return None
        src, dst = k["args"]
        if vals[dst]["kind"] != "output" or vals[src]["kind"] != "intermediate" or \
                vals[src]["dtype"] != vals[dst]["dtype"]:
            return None
        later = {a for k2 in self.desc["kernels"][i + 1:] for a in k2["args"]}
        storage = vals[src]["storage"]
        if dst in later or storage is None or any(
                vals[a]["kind"] == "intermediate" and vals[a]["storage"] == storage
                for a in later):
            return None
        return src

    # inputs ---------------------------------------------------------------------------------
    def expected(self) -> str:
        return ", ".join(f"{i['name']}: {i['dtype']}{list(i['shape'])}" for i in self.inputs)

    def _fail(self, what: str) -> None:
        raise InputError(f"{what}. The model expects {len(self.inputs)} input(s): "
                         f"{self.expected()}.")

    def set_inputs(self, inputs: Mapping[str, Any] | Sequence[Any]) -> None:
        if isinstance(inputs, np.ndarray):
            inputs = [inputs]
        if isinstance(inputs, Mapping):
            names = [i["name"] for i in self.inputs]
            unknown = [k for k in inputs if k not in names]
            missing = [n for n in names if n not in inputs]
            if unknown or missing:
                parts = []
                if unknown:
                    parts.append(f"unknown input name(s) {', '.join(map(repr, unknown))}")
                if missing:
                    parts.append(f"missing input(s) {', '.join(map(repr, missing))}")
                self._fail(f"Wrong inputs: {'; '.join(parts)} (given: "
                           f"{', '.join(map(repr, inputs)) or 'none'})")
            items = [(i, inputs[i["name"]]) for i in self.inputs]
        else:
            seq = list(inputs)
            if len(seq) != len(self.inputs):
                self._fail(f"Wrong inputs: {len(seq)} positional input(s) given")
            items = list(zip(self.inputs, seq))
        for spec, x in items:
            if not isinstance(x, np.ndarray):
                x = np.asarray(x)
                if x.dtype == np.float64 and spec["dtype"] == "float32":
                    x = x.astype("float32")  # a Python list of floats
            if x.dtype != np.dtype(spec["dtype"]) or tuple(x.shape) != tuple(spec["shape"]):
                self._fail(f"Wrong input {spec['name']!r}: given {x.dtype}{list(x.shape)}, "
                           f"expected {spec['dtype']}{list(spec['shape'])}"
                           + (f" (convert with .astype('{spec['dtype']}'))"
                              if x.dtype != np.dtype(spec["dtype"]) else ""))
            np.copyto(self.arrays[spec["value"]], x)

    # running --------------------------------------------------------------------------------
    def execute(self) -> None:
        for fn, args, cfunc, ptrs in self._fast:
            if cfunc is None:
                fn(*args)
            elif cfunc(*ptrs):
                fn(*args)  # the checked call raises with the kernel's message

    def profile(self, repeat: int = 10) -> list[list[float]]:
        """Seconds of every kernel call, in order, for each of `repeat` executions (the
        kernels run in sequence as in `execute`, each timed on its own)."""
        clock = time.perf_counter
        runs = []
        for _ in range(max(1, repeat)):
            ts = []
            for fn, args, cfunc, ptrs in self._fast:
                t0 = clock()
                if cfunc is None:
                    fn(*args)
                elif cfunc(*ptrs):
                    fn(*args)
                ts.append(clock() - t0)
            runs.append(ts)
        return runs

    def get_outputs(self) -> list[np.ndarray]:
        outs = []
        for o in self.outputs:
            src = self._output_source.get(o["value"])
            arr = self.arrays[o["value"]] if src is None else \
                self.arrays[src].reshape(tuple(o["shape"]))
            outs.append(arr.copy())
        return outs

    def run(self, inputs: Mapping[str, Any] | Sequence[Any]) -> list[np.ndarray]:
        self.set_inputs(inputs)
        self.execute()
        return self.get_outputs()


@dataclass
class BenchmarkResult:
    """Seconds per run: `median`, `mean`, `std`, `min`, `max` and every repeat's `times`."""

    median: float
    mean: float
    std: float
    min: float
    max: float
    times: list[float]

    def __str__(self) -> str:
        return (f"median {self.median * 1e3:.3f} ms, mean {self.mean * 1e3:.3f} ms "
                f"± {self.std * 1e3:.3f}, min {self.min * 1e3:.3f}, max {self.max * 1e3:.3f} "
                f"({len(self.times)} repeats)")


class CompiledModel:
    """A compiled model: `run(inputs)`, `benchmark()`, `export(path)`.

    Made by `tensorforge.compile` (kernels JIT-compiled in this process) or by
    `tensorforge.load` (kernels from an exported shared library)."""

    def __init__(self, module: Any, desc: Mapping[str, Any], params: Mapping[str, np.ndarray]):
        self.module = module
        self.desc = dict(desc)
        self.params = dict(params)
        self.executor = GraphExecutor(module, desc, params)

    @property
    def input_specs(self) -> list[dict[str, Any]]:
        return [{"name": i["name"], "shape": tuple(i["shape"]), "dtype": i["dtype"]}
                for i in self.desc["inputs"]]

    @property
    def output_specs(self) -> list[dict[str, Any]]:
        return [{"name": o["name"], "shape": tuple(o["shape"]), "dtype": o["dtype"]}
                for o in self.desc["outputs"]]

    @property
    def kernels(self) -> list[str]:
        return [k["name"] for k in self.desc["kernels"]]

    def run(self, inputs: Mapping[str, Any] | Sequence[Any] | np.ndarray) -> list[np.ndarray]:
        """Inputs by name (dict) or position (list); returns the outputs as numpy arrays."""
        return self.executor.run(inputs)

    def random_inputs(self, seed: int = 0) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        out = {}
        for spec in self.input_specs:
            dt = np.dtype(spec["dtype"])
            if dt.kind == "f":
                out[spec["name"]] = rng.standard_normal(spec["shape"]).astype(dt)
            elif dt.kind == "b":
                out[spec["name"]] = rng.integers(0, 2, spec["shape"]).astype(dt)
            else:
                out[spec["name"]] = rng.integers(0, 10, spec["shape"]).astype(dt)
        return out

    def benchmark(self, inputs: Any = None, repeat: int = 10, number: int = 1,
                  warmup: int = 1) -> BenchmarkResult:
        """Time `run` without the input/output copies: `repeat` samples of the mean of
        `number` executions each, after `warmup` executions."""
        self.executor.set_inputs(self.random_inputs() if inputs is None else inputs)
        for _ in range(warmup):
            self.executor.execute()
        times = []
        for _ in range(max(1, repeat)):
            t0 = time.perf_counter()
            for _ in range(max(1, number)):
                self.executor.execute()
            times.append((time.perf_counter() - t0) / max(1, number))
        return BenchmarkResult(statistics.median(times), statistics.fmean(times),
                               statistics.pstdev(times), min(times), max(times), times)

    def profile(self, inputs: Any = None, repeat: int = 10,
                warmup: int = 1) -> list[dict[str, Any]]:
        """Per-kernel medians over `repeat` executions, in call order: one dict per call with
        `name`, `group`, `schedule`, `median` and `share` (of the summed medians) seconds."""
        self.executor.set_inputs(self.random_inputs() if inputs is None else inputs)
        for _ in range(warmup):
            self.executor.execute()
        runs = self.executor.profile(repeat)
        meds = [statistics.median(col) for col in zip(*runs)]
        total = sum(meds) or 1.0
        return [{"name": k["name"], "group": k.get("group", k["name"]),
                 "schedule": k.get("schedule", ""), "median": t, "share": t / total}
                for k, t in zip(self.desc["kernels"], meds)]

    def export(self, path: Any) -> str:
        """Write one `.tfpkg` file (library, its signatures, graph description, params)."""
        from .package import export_package

        return export_package(self, path)

    def __repr__(self) -> str:
        ins = ", ".join(f"{s['name']}: {s['dtype']}{list(s['shape'])}" for s in self.input_specs)
        return (f"<CompiledModel {self.desc.get('name', '')}({ins}) -> "
                f"{len(self.desc['outputs'])} output(s), {len(self.kernels)} kernels, "
                f"target {self.desc.get('target')!r}>")
