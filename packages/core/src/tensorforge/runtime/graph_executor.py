"""The graph executor: runs a compiled model's kernels in order over planned buffers.

It imports numpy, ctypes (through the runtime module) and nothing of the compiler, so an
exported model runs after `tensorforge.load` without llvmlite, onnx, or tensorforge's IR.

Memory: the memory plan gives one 64-byte aligned byte pool per storage; every intermediate
value is a typed view at its offset in its storage (0, or its slice of a zero-copy concat).
One *arena* holds one call's pools, its input and output buffers and every kernel's bound
argument pointers; constants are shared by all arenas, read-only, and held once
(`CompiledModel.params` is the executor's arrays).

Concurrency: `run`, `benchmark` and `profile` take an arena from a bounded pool
(`runtime.arena.ArenaPool`) for the length of the call, so any number of threads may call one
model at once, and a call may re-enter the model; kernels run outside the GIL (ctypes releases
it), so threads really run in parallel. At most `max_concurrency` arenas exist (default: the
CPUs this process may use); further callers wait for a free one.

Errors: a kernel's non-zero status becomes a `KernelError` (see `cfunction.py`) naming the
graph kernel (group and ops) that returned it; the arena goes back to the pool either way.

Data-dependent output sizes (NonZero, NonMaxSuppression ...): such an output's buffer holds
its bound, its kernel also writes the actual size into a hidden output (`size_from`), and
`get_outputs` returns that many entries. Narrow dtypes (bfloat16, float8 ...) are held as
their stored bits and viewed as the narrow type at the inputs and outputs."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from tensorforge.errors import PackageError, TensorforgeError

from .aot_executor import AotRunner, EntryArgs, entry_args, entry_for, plan_for
from .aot_plan import workspace_layout
from .arena import ArenaPool, default_limit
from .device import DeviceUnavailable
from .device_execution import DeviceConstants, KernelStep, bind_devices, is_device_function
from .validate import check_description

__all__ = ["BenchmarkResult", "CompiledModel", "GraphExecutor", "InputError"]

_ALIGN = 64
#: "auto": the ahead-of-time entry where there is one; "graph": kernel by kernel from Python
EXECUTORS = ("auto", "graph")


class InputError(TensorforgeError, ValueError):
    """Inputs that do not match what the model expects."""


def np_dtype(name: str) -> np.dtype:
    """numpy's dtype for a model input/output dtype; narrow types (bfloat16, float8_e4m3fn
    ...) come from ml_dtypes, imported only for models that use them. Their buffers hold
    the stored bits (uint8/uint16: the `values` dtype), viewed at the inputs and outputs."""
    try:
        return np.dtype(name)
    except TypeError:
        import ml_dtypes  # noqa: F401  (registers the narrow types with numpy)

        return np.dtype(name)


def aligned_empty(shape: Sequence[int], dtype: str, nbytes: int | None = None) -> np.ndarray:
    """An uninitialized C-contiguous array whose data starts on a 64-byte boundary."""
    dt = np.dtype(dtype)
    size = int(np.prod(shape, dtype=np.int64)) * dt.itemsize if nbytes is None else nbytes
    try:
        raw = np.empty(size + _ALIGN, dtype=np.uint8)
    except MemoryError:
        raise TensorforgeError(f"out of memory allocating {size} bytes for the model's "
                               "buffers; lower max_concurrency or free memory") from None
    off = (-raw.ctypes.data) % _ALIGN
    buf = raw[off:off + size]
    if nbytes is not None:
        return buf
    return buf.view(dt).reshape(tuple(shape))


def _shared_const(arr: np.ndarray, shape: Sequence[int], dtype: str) -> np.ndarray:
    """The array constants are read from by every arena: `arr` itself when it already has the
    layout kernels take (C-contiguous, of the value's dtype and shape), else one copy; made
    read-only, so a kernel binding that would write into it is refused."""
    arr = np.asarray(arr)
    if arr.dtype != np.dtype(dtype) or not arr.flags.c_contiguous or \
            tuple(arr.shape) != tuple(shape):
        out = aligned_empty(shape, dtype)
        out[...] = arr.reshape(tuple(shape))
        arr = out
    view = arr.view()
    view.flags.writeable = False
    return view


def _where(k: Mapping[str, Any]) -> str:
    """How errors name a graph kernel: its group (the fused graph nodes) and ops."""
    ops = "+".join(k.get("ops", ())) or "?"
    group = k.get("group", k["name"])
    return f"graph kernel {group!r} ({ops})"


def _bind(fn: Any, args: list[np.ndarray], k: Mapping[str, Any]
          ) -> tuple[Any, list[np.ndarray], Any, tuple]:
    """(fn, args, raw C function, argument pointers): an arena's arrays never move, so a
    kernel's argument checks run once here and each run calls the C function directly (a
    model of hundreds of small kernels, like an unrolled LSTM, spends its time in the checks
    otherwise). The checks compare the description's values with the kernel's own signature
    (for a package: the library's kernel table), so a description that gives a kernel fewer
    arguments, smaller shapes or other dtypes than it was compiled for is refused here, before
    any run. Kernels that are not `CFunction`s (Python callables) are called as they are."""
    cfunc = getattr(fn, "_cfunc", None)
    checks = getattr(fn, "_checks", None)
    if cfunc is None or checks is None:
        return fn, args, None, ()
    n_buf = sum(isinstance(a, np.ndarray) for a in args)  # then the sizes (symbolic models)
    if len(checks) != len(args) or any(c.param.kind != ("buffer" if i < n_buf else "scalar")
                                       for i, c in enumerate(checks)):
        raise PackageError(
            f"{_where(k)}: the model description passes {len(args)} buffers to kernel "
            f"{fn.signature}; the description does not match the compiled kernel (a corrupt "
            "or edited package)")
    try:
        ptrs = tuple(fn._convert(c, a) for c, a in zip(checks, args))
        if getattr(fn, "_n_buffers", 0) > 1:
            fn._check_distinct(list(ptrs))
    except PackageError:
        raise
    except TensorforgeError as e:
        raise PackageError(f"{_where(k)}: {e}; the model description does not match the "
                           "compiled kernel (a corrupt or edited package)") from None
    return fn, args, cfunc, ptrs


def _skipped() -> None:
    """Stands for a kernel whose work `outputs` does (see `_reshape_to_output`)."""


@dataclass
class Arena:
    """One call's private memory: `arrays` (one per value of the description; constants are
    the executor's shared read-only arrays), the storage `pools` the intermediates view, and
    `calls` (per kernel: function, arrays, raw C function or None, argument pointers). A model
    with device kernels also holds, in `device`, the device array of every value a device
    kernel writes (see `device_execution.py`)."""

    arrays: list[np.ndarray]
    pools: list[np.ndarray]
    calls: list[tuple[Any, list[np.ndarray], Any, tuple]]
    device: dict[int, Any] = field(default_factory=dict)
    #: the ahead-of-time entry's arguments and failed-kernel slot (None: kernel by kernel)
    entry_args: EntryArgs | None = None
    #: the bytes the storages are parts of (`aot_plan.workspace_layout`)
    workspace: Any = None


class GraphExecutor:
    """Kernels of `module` run in the order of `desc["kernels"]` (see `compiler.describe`).

    The description is checked first (`validate.check_description`), and one arena is made and
    bound at once, so a description that does not match the kernels fails here, not in a run.
    Safe to use from many threads: see the module docstring.

    `executor`: "auto" runs the whole kernel sequence as one native call (the ahead-of-time
    entry, `runtime.aot_plan`) where the module provides one, else kernel by kernel from
    Python; "graph" always kernel by kernel. `kind` says which runs ("aot" or "graph") and
    `reason` why not "aot". `profile` and `execute_kernel` always go kernel by kernel."""

    def __init__(self, module: Any, desc: Mapping[str, Any], params: Mapping[str, np.ndarray],
                 max_concurrency: int | None = None, executor: str = "auto"):
        if executor not in EXECUTORS:
            raise TensorforgeError(f"executor {executor!r} is not one of "
                                   f"{', '.join(EXECUTORS)}")
        check_description(desc, params)
        self.desc = desc
        self.module = module
        self.inputs = list(desc["inputs"])
        self.outputs = list(desc["outputs"])
        values = desc["values"]
        self.params: dict[str, np.ndarray] = {}
        self.consts: dict[int, np.ndarray] = {}
        for i, v in enumerate(values):
            if v["kind"] == "const":
                key = v["param"]
                if key not in self.params:
                    self.params[key] = _shared_const(params[key], v["shape"], v["dtype"])
                self.consts[i] = self.params[key]
        if desc["kernels"] and module is None:
            raise PackageError("the model description lists kernels but no module holds them")
        self._functions = [self._function(k) for k in desc["kernels"]]
        self._output_source: dict[int, int] = {}
        self._skip: set[int] = set()
        # device kernels: constants uploaded once for every arena, copies where planned
        self._device_constants = DeviceConstants() if any(
            is_device_function(fn) for fn in self._functions) else None
        for i, k in enumerate(desc["kernels"] if self._device_constants is None else ()):
            src = self._reshape_to_output(i, k)
            if src is not None:  # the kernel only copies: read the output from its source
                self._output_source[k["args"][1]] = src
                self._skip.add(i)
        self.aot_plan, self.reason = plan_for(self)
        self._entry: Any = None
        self._aot: AotRunner | None = None
        self.kind = "graph"
        self.pool: ArenaPool[Arena] = ArenaPool(self.new_arena, max_concurrency or
                                                default_limit())
        try:
            first = self.new_arena()  # binds every kernel now: mismatches fail at load
        except DeviceUnavailable:
            first = None  # built for a device this machine lacks: it exports; a run says why
        if executor == "graph":
            self.reason = "the graph executor was asked for"
        elif self.aot_plan is not None:  # after the bindings: their errors say more
            self._entry, self.reason = entry_for(self.module, self.aot_plan)
        if self._entry is not None and first is not None:
            self.kind = "aot"
            first.entry_args = entry_args(self.aot_plan, first.arrays, self.params,
                                          first.workspace)
            self._aot = AotRunner(self, first)
        if self._aot is not None and self._aot.native is not None:
            self.pool.set_fast(first, self._aot.native)  # the native quick path's arena
        elif first is not None:
            self.pool.add(first)

    def _function(self, k: Mapping[str, Any]) -> Any:
        if k["name"] not in self.module:
            known = ", ".join(getattr(self.module, "function_names", [])[:8])
            raise PackageError(f"{_where(k)}: the model description names kernel {k['name']!r}, "
                               f"which the module does not define (it has: {known}, ...); a "
                               "corrupt or edited package")
        return self.module[k["name"]]

    def _reshape_to_output(self, i: int, k: Mapping[str, Any]) -> int | None:
        """The source value of kernel `i` if it only reshapes an intermediate into a graph
        output that nothing reads later and whose source storage no later kernel touches
        (a model ending in a reshape: the copy is left to `outputs`), else None."""
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

    # arenas ---------------------------------------------------------------------------------
    def new_arena(self) -> Arena:
        """Allocate one call's buffers and bind every kernel to them. The storages are parts of
        one workspace (`aot_plan.workspace_layout`), as the ahead-of-time entry addresses
        them."""
        offsets, total = workspace_layout(self.desc["storages"])
        workspace = aligned_empty((), "uint8", total)
        pools = [workspace[o:o + int(n)] for o, n in zip(offsets, self.desc["storages"])]
        arrays: list[np.ndarray] = []
        for i, v in enumerate(self.desc["values"]):
            shape, dtype = tuple(v["shape"]), v["dtype"]
            if v["kind"] == "const":
                arr = self.consts[i]
            elif v["kind"] == "intermediate":
                nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
                off = int(v.get("offset", 0))  # a part of a zero-copy concat
                arr = pools[v["storage"]][off:off + nbytes].view(dtype).reshape(shape)
            else:
                arr = aligned_empty(shape, dtype)
            arrays.append(arr)
        if self._device_constants is not None:
            steps, on_device = bind_devices(
                self.desc, [(fn, [arrays[a] for a in k["args"]])
                            for fn, k in zip(self._functions, self.desc["kernels"])],
                arrays, self._device_constants)
            return Arena(arrays, pools, [(st, [], None, ()) for st in steps], on_device)
        calls = []
        for i, (fn, k) in enumerate(zip(self._functions, self.desc["kernels"])):
            if i in self._skip:
                calls.append((_skipped, [], None, ()))
            else:
                calls.append(_bind(fn, [arrays[a] for a in k["args"]]
                                   + list(k.get("scalars", ())), k))
        arena = Arena(arrays, pools, calls, workspace=workspace)
        if self._entry is not None:
            arena.entry_args = entry_args(self.aot_plan, arrays, self.params, workspace)
        return arena

    @contextmanager
    def arena(self) -> Iterator[Arena]:
        """An arena for the calling thread until the block ends (waits at the bound)."""
        with self.pool.borrow() as a:
            yield a

    # inputs ---------------------------------------------------------------------------------
    def expected(self) -> str:
        return ", ".join(f"{i['name']}: {i['dtype']}{list(i['shape'])}" for i in self.inputs)

    def _fail(self, what: str) -> None:
        raise InputError(f"{what}. The model expects {len(self.inputs)} input(s): "
                         f"{self.expected()}.")

    def check_inputs(self, inputs: Mapping[str, Any] | Sequence[Any]
                     ) -> list[tuple[int, np.ndarray]]:
        """(value index, array) per model input, after checking names, shapes and dtypes."""
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
        checked = []
        for spec, x in items:
            if not isinstance(x, np.ndarray):
                x = np.asarray(x)
                if x.dtype == np.float64 and spec["dtype"] == "float32":
                    x = x.astype("float32")  # a Python list of floats
            want = np_dtype(spec["dtype"])
            if x.dtype != want or tuple(x.shape) != tuple(spec["shape"]):
                self._fail(f"Wrong input {spec['name']!r}: given {x.dtype}{list(x.shape)}, "
                           f"expected {spec['dtype']}{list(spec['shape'])}"
                           + (f" (convert with .astype('{spec['dtype']}'))"
                              if x.dtype != want else ""))
            stored = self.desc["values"][spec["value"]]["dtype"]
            if stored != spec["dtype"]:  # a narrow type: its buffer holds the bits
                x = x.view(stored)
            checked.append((spec["value"], x))
        return checked

    def set_inputs(self, arena: Arena, inputs: Mapping[str, Any] | Sequence[Any]) -> None:
        for vi, x in self.check_inputs(inputs):
            np.copyto(arena.arrays[vi], x)

    # running --------------------------------------------------------------------------------
    def _kernel_error(self, i: int, fn: Any, status: int, args: Sequence[Any] = ()
                      ) -> TensorforgeError:
        k = self.desc["kernels"][i]  # a failed data check names a node of the group
        return fn.error(status, context=_where(k), args=args, nodes=k.get("nodes"))

    def execute(self, arena: Arena) -> None:
        """Run every kernel once over `arena` (inputs already set): one call of the
        ahead-of-time entry, or kernel by kernel."""
        if arena.entry_args is not None:
            status = arena.entry_args.call(self._entry)
            if status:
                i = arena.entry_args.failed.value
                fn, args, _, _ = arena.calls[i]
                raise self._kernel_error(i, fn, status, args)
            return
        for i, (fn, args, cfunc, ptrs) in enumerate(arena.calls):
            if cfunc is None:
                fn(*args)
            else:
                status = cfunc(*ptrs)
                if status:
                    raise self._kernel_error(i, fn, status, args)

    def execute_kernel(self, arena: Arena, i: int) -> None:
        """Run kernel `i` alone over `arena` (for `verify` and `profile`); a device kernel is
        waited for."""
        fn, args, cfunc, ptrs = arena.calls[i]
        if cfunc is None:
            fn(*args)
            if isinstance(fn, KernelStep):
                fn.synchronize()
        else:
            status = cfunc(*ptrs)
            if status:
                raise self._kernel_error(i, fn, status, args)

    def profile(self, arena: Arena, repeat: int = 10) -> list[list[float]]:
        """Seconds of every kernel call, in order, for each of `repeat` executions (the
        kernels run in sequence as in `execute`, each timed on its own)."""
        clock = time.perf_counter
        runs = []
        for _ in range(max(1, repeat)):
            ts = []
            for i in range(len(arena.calls)):
                t0 = clock()
                self.execute_kernel(arena, i)
                ts.append(clock() - t0)
            runs.append(ts)
        return runs

    def value(self, arena: Arena, vi: int) -> np.ndarray:
        """The array holding value `vi` in `arena` after a run (an output left to the output
        copy is read from its source)."""
        src = self._output_source.get(vi)
        if vi in arena.device:  # written on a device: read it back
            arena.device[vi].copy_to(arena.arrays[vi])
        if src is None:
            return arena.arrays[vi]
        return arena.arrays[src].reshape(tuple(self.desc["values"][vi]["shape"]))

    def get_outputs(self, arena: Arena) -> list[np.ndarray]:
        """Copies of the outputs (the arena's buffers are reused by the next call)."""
        outs = []
        for o in self.outputs:
            if o.get("hidden"):  # the size of a data-dependent output, applied below
                continue
            out = self.value(arena, o["value"]).copy()
            if out.dtype.name != o["dtype"]:  # a narrow type held as its bits
                out = out.view(np_dtype(o["dtype"]))
            if "size_from" in o:  # the kernel wrote its data-dependent size: keep that many
                n = int(arena.arrays[o["size_from"]["value"]].reshape(-1)[0])
                out = np.take(out, np.arange(n), axis=o["size_from"]["axis"])
            outs.append(out)
        return outs

    def run(self, inputs: Mapping[str, Any] | Sequence[Any]) -> list[np.ndarray]:
        if self._aot is not None:
            return self._aot.run(inputs)
        checked = self.check_inputs(inputs)
        with self.pool.borrow() as arena:
            for vi, x in checked:
                np.copyto(arena.arrays[vi], x)
            self.execute(arena)
            return self.get_outputs(arena)


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
    """A compiled model: `run(inputs)`, `benchmark()`, `profile()`, `export(path)`, `close()`.

    Made by `tensorforge.compile` (kernels JIT-compiled in this process) or by
    `tensorforge.load` (kernels from a package's shared library).

    Executor: `run` and `benchmark` call the model's ahead-of-time entry (its whole kernel
    sequence as one generated function, `runtime.aot_plan`) where the kernels allow one, else
    the kernels one by one from Python; `executor_kind` ("aot" / "graph") and
    `executor_reason` say which and why. `executor="graph"` (or the environment variable
    TENSORFORGE_EXECUTOR=graph) asks for the Python path; `profile` always takes it.

    Thread safety: `run`, `benchmark` and `profile` may be called from any number of threads
    at once, and re-entrantly; each call works in its own arena (buffers of the memory plan,
    inputs, outputs) taken from a pool of at most `max_concurrency` arenas (default: the CPUs
    this process may use; callers beyond it wait), and gets results bit-identical to a call
    made alone. Constants are shared and read-only. `close()` waits for running calls, then
    frees the arenas and anything the model holds on disk; the model is also a context manager.

    `params` maps each constant's key to the one array the kernels read (read-only)."""

    def __init__(self, module: Any, desc: Mapping[str, Any], params: Mapping[str, np.ndarray],
                 max_concurrency: int | None = None, derived: Mapping[str, Any] | None = None,
                 on_close: Sequence[Any] = (), executor: str | None = None):
        self.module = module
        self.desc = dict(desc)
        if executor is None:  # the environment may ask for the debugging path everywhere
            executor = os.environ.get("TENSORFORGE_EXECUTOR") or "auto"
        self.executor = GraphExecutor(module, self.desc, params, max_concurrency, executor)
        #: param key -> `params_store.Derived`: how a constant was computed from a smaller
        #: stored array (export writes that array and the recipe instead of the constant)
        self.derived = dict(derived or {})
        self._on_close = list(on_close)

    @property
    def params(self) -> Mapping[str, np.ndarray]:
        return MappingProxyType(self.executor.params)

    @property
    def executor_kind(self) -> str:
        """"aot": `run` and `benchmark` call the whole kernel sequence as one native function;
        "graph": kernel by kernel from Python (see `executor_reason`)."""
        return self.executor.kind

    @property
    def executor_reason(self) -> str:
        """Why the model runs on the graph executor ("" when it runs ahead-of-time)."""
        return self.executor.reason

    @property
    def max_concurrency(self) -> int:
        """How many calls may run at once; more wait for a free arena (settable)."""
        return self.executor.pool.limit

    @max_concurrency.setter
    def max_concurrency(self, value: int) -> None:
        self.executor.pool.limit = value

    @property
    def input_specs(self) -> list[dict[str, Any]]:
        return [{"name": i["name"], "shape": tuple(i["shape"]), "dtype": i["dtype"]}
                for i in self.desc["inputs"]]

    @property
    def output_specs(self) -> list[dict[str, Any]]:
        return [{"name": o["name"], "shape": tuple(o["shape"]), "dtype": o["dtype"]}
                for o in self.desc["outputs"] if not o.get("hidden")]

    @property
    def kernels(self) -> list[str]:
        return [k["name"] for k in self.desc["kernels"]]

    def run(self, inputs: Mapping[str, Any] | Sequence[Any] | np.ndarray) -> list[np.ndarray]:
        """Inputs by name (dict) or position (list); returns the outputs as new numpy arrays.
        Safe to call from many threads at once (see the class docstring)."""
        return self.executor.run(inputs)

    def random_inputs(self, seed: int = 0) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        out = {}
        for spec in self.input_specs:
            dt = np_dtype(spec["dtype"])
            if dt.kind not in "biuf":  # a narrow type (bfloat16, float8 ...)
                out[spec["name"]] = rng.standard_normal(spec["shape"]).astype(
                    "float32").astype(dt)
            elif dt.kind == "f":
                out[spec["name"]] = rng.standard_normal(spec["shape"]).astype(dt)
            elif dt.kind == "b":
                out[spec["name"]] = rng.integers(0, 2, spec["shape"]).astype(dt)
            else:
                out[spec["name"]] = rng.integers(0, 10, spec["shape"]).astype(dt)
        return out

    def benchmark(self, inputs: Any = None, repeat: int = 10, number: int = 1,
                  warmup: int = 1) -> BenchmarkResult:
        """Time `run` without the input/output copies: `repeat` samples of the mean of
        `number` executions each, after `warmup` executions (in one arena of the pool)."""
        ex = self.executor
        with ex.arena() as arena:
            ex.set_inputs(arena, self.random_inputs() if inputs is None else inputs)
            for _ in range(warmup):
                ex.execute(arena)
            times = []
            for _ in range(max(1, repeat)):
                t0 = time.perf_counter()
                for _ in range(max(1, number)):
                    ex.execute(arena)
                times.append((time.perf_counter() - t0) / max(1, number))
        return BenchmarkResult(statistics.median(times), statistics.fmean(times),
                               statistics.pstdev(times), min(times), max(times), times)

    def profile(self, inputs: Any = None, repeat: int = 10,
                warmup: int = 1) -> list[dict[str, Any]]:
        """Per-kernel medians over `repeat` executions, in call order: one dict per call with
        `name`, `group`, `schedule`, `median` and `share` (of the summed medians) seconds."""
        ex = self.executor
        with ex.arena() as arena:
            ex.set_inputs(arena, self.random_inputs() if inputs is None else inputs)
            for _ in range(warmup):
                ex.execute(arena)
            runs = ex.profile(arena, repeat)
        meds = [statistics.median(col) for col in zip(*runs)]
        total = sum(meds) or 1.0
        return [{"name": k["name"], "group": k.get("group", k["name"]),
                 "schedule": k.get("schedule", ""), "median": t, "share": t / total}
                for k, t in zip(self.desc["kernels"], meds)]

    def export(self, path: Any) -> str:
        """Write one `.tfpkg` file (see `runtime.package`); returns its path."""
        from .package import export_package

        return export_package(self, path)

    def close(self) -> None:
        """Wait for running calls, free the arenas and whatever the model holds on disk (a
        loaded package's temporary files). Later calls raise `ClosedError`. Idempotent."""
        self.executor.pool.close()
        hooks, self._on_close = self._on_close, []
        for hook in hooks:
            hook()

    @property
    def closed(self) -> bool:
        return self.executor.pool.closed

    def __enter__(self) -> CompiledModel:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        ins = ", ".join(f"{s['name']}: {s['dtype']}{list(s['shape'])}" for s in self.input_specs)
        return (f"<CompiledModel {self.desc.get('name', '')}({ins}) -> "
                f"{len(self.desc['outputs'])} output(s), {len(self.kernels)} kernels, "
                f"target {self.desc.get('target')!r}>")
