"""The ahead-of-time executor: a whole run as one call of the model's generated entry.

The graph executor (`graph_executor.py`) decides whether a model can run this way
(`plan_for`: every kernel a compiled C function of buffers, all in one module on this
machine), asks the module for the entry of the plan (`entry_for`: the JIT compiles it, a
package's library carries it) and, when there is one, gives each arena the entry's arguments
(`entry_args`). `GraphExecutor.execute` then makes one native call per run, and `run` goes
through `AotRunner.run`, which keeps the Python work around that call small: the inputs are
checked as before (names, shapes, dtypes) but read where they are when the kernels can read
them there, and the outputs are written straight into the arrays `run` returns where the
model's outputs allow (no copies). After the kernels have streamed their weights through the
caches, every line of Python runs cold, so this path matters for small models: where it can,
`run` hands the inputs to the native quick path (`aot_quick.py`: the checks, the outputs,
the pointer tables, a fast arena and the entry call in generated code, called as a builtin),
and keeps the checks in Python otherwise (`AotRunner.native_reason` says why).

Concurrency is the graph executor's: each call holds its own arena (workspace and pointer
tables) from the pool; the entry keeps no state of its own."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from tensorforge.errors import PackageError, TensorforgeError

from . import aot_quick
from .aot_plan import AotPlan, aot_plan
from .aot_quick import NativeQuick, _c_strides
from .module import ModuleSet

__all__ = ["AotRunner", "EntryArgs", "entry_args", "entry_for", "plan_for"]

ENTRY_PROTO = ctypes.CFUNCTYPE(ctypes.c_int32, *[ctypes.c_void_p] * 5)


def plan_for(ex: Any) -> tuple[AotPlan | None, str]:
    """(the ahead-of-time plan, "") when every kernel of the graph executor `ex` can be called
    from one native entry, else (None, why not)."""
    from .graph_executor import _where

    if ex._device_constants is not None:
        return None, "kernels run on a device (placement): the graph executor drives it"
    if isinstance(ex.module, ModuleSet):
        return None, "the kernels are in several modules (one per device)"
    if not ex.desc["kernels"]:
        return None, "the model has no kernels"
    if not hasattr(ex.module, "graph_entry"):
        return None, f"a {getattr(ex.module, 'type_key', '?')} module has no entry builder"
    for fn, k in zip(ex._functions, ex.desc["kernels"]):
        params = getattr(fn, "params", None)
        if getattr(fn, "_cfunc", None) is None or params is None:
            return None, f"{_where(k)} is not a compiled C function of this machine"
        if any(p.kind != "buffer" for p in params):
            return None, f"{_where(k)} takes scalar arguments"
    return aot_plan(ex.desc, ex._skip), ""


def entry_for(module: Any, plan: AotPlan) -> tuple[Any, str]:
    """(the entry of `plan` as a ctypes function, "") or (None, why the module has none); a
    package whose description does not match its entry raises `PackageError`."""
    try:
        address = module.graph_entry(plan)
    except PackageError:
        raise
    except TensorforgeError as e:
        return None, str(e)
    return ENTRY_PROTO(address), ""


def _table(arrays: Sequence[np.ndarray]) -> Any:
    return (ctypes.c_void_p * max(1, len(arrays)))(*[a.ctypes.data for a in arrays])


class EntryArgs(NamedTuple):
    """An arena's entry arguments (kept alive here; the arrays by the arena)."""

    inputs: Any  #: pointer table of the arena's own input buffers
    outputs: Any  #: pointer table of the arena's own output buffers
    params: Any  #: pointer table of the parameters
    workspace: int  #: the arena's workspace address
    failed_at: int  #: address of `failed`
    failed: ctypes.c_int32  #: the failed kernel's index, read on a non-zero status
    run_inputs: Any  #: a table `AotRunner` fills per call (inputs read in place)
    run_outputs: Any  #: a table `AotRunner` fills per call (outputs written directly)

    def call(self, entry: Any, inputs: Any = None, outputs: Any = None) -> int:
        """The entry's status on these tables (the arena's own ones by default)."""
        return entry(self.inputs if inputs is None else inputs,
                     self.outputs if outputs is None else outputs,
                     self.params, self.workspace, self.failed_at)


def entry_args(plan: AotPlan, arrays: Sequence[np.ndarray], params: Mapping[str, np.ndarray],
               workspace: np.ndarray) -> EntryArgs:
    """An arena's entry arguments (see `EntryArgs`)."""
    ins = [arrays[v] for v in plan.inputs]
    outs = [arrays[v] for v in plan.outputs]
    failed = ctypes.c_int32(-1)
    return EntryArgs(_table(ins), _table(outs), _table([params[k] for k in plan.params]),
                     workspace.ctypes.data, ctypes.addressof(failed), failed, _table(ins),
                     _table(outs))


class AotRunner:
    """`run` of a graph executor whose model has an ahead-of-time entry (see the module
    docstring)."""

    def __init__(self, ex: Any, fast: Any):
        self.ex = ex
        plan: AotPlan = ex.aot_plan
        values = ex.desc["values"]
        self.in_slot = {vi: j for j, vi in enumerate(plan.inputs)}
        out_slot = {vi: j for j, vi in enumerate(plan.outputs)}
        # inputs read back by `get_outputs` (an input that is also an output) stay copied
        self.read_back = {o["value"] for o in ex.outputs} | {
            o["size_from"]["value"] for o in ex.outputs if "size_from" in o}
        written = {at for c in plan.calls for kind, at in c.args if kind == "out"}
        vis = [o["value"] for o in ex.outputs]
        direct = len(set(vis)) == len(vis) and all(
            not o.get("hidden") and "size_from" not in o and o["value"] in out_slot
            and out_slot[o["value"]] in written and values[o["value"]]["dtype"] == o["dtype"]
            and o["value"] not in ex._output_source for o in ex.outputs)
        #: (slot, shape, dtype) per output written straight into the returned array
        self.direct = [(out_slot[o["value"]], tuple(o["shape"]), np.dtype(o["dtype"]))
                       for o in ex.outputs] if direct else None
        #: (name, value, dtype, shape, C strides) per input, for the quick path: a dict of
        #: C-contiguous arrays of the right dtype and shape, read in place, outputs written
        #: directly (None: narrow types, inputs read back, or outputs that need `get_outputs`)
        self.quick = None if self.direct is None or self.read_back & set(self.in_slot) or any(
            values[i["value"]]["dtype"] != i["dtype"] for i in ex.inputs) else [
            (i["name"], i["value"], np.dtype(i["dtype"]), tuple(i["shape"]),
             _c_strides(i["shape"], np.dtype(i["dtype"]).itemsize)) for i in ex.inputs]
        self.in_slots = [self.in_slot[q[1]] for q in self.quick or ()]
        #: the arena the native quick path holds while it runs (`ArenaPool.set_fast`)
        self.fast = fast
        self.native, self.native_reason = self._native()
        self._call = None if self.native is None else self.native.call
        self._names = [q[0] for q in self.quick or ()]  # in the entry's table order
        self._n_in = len(self._names)

    def _native(self) -> tuple[NativeQuick | None, str]:
        """(the native quick path, "") or (None, why `run` checks inputs in Python)."""
        ex, plan = self.ex, self.ex.aot_plan
        if self.quick is None:
            return None, "the inputs or outputs need the general path (narrow dtypes, an " \
                         "input that is also an output, outputs read back by get_outputs)"
        if self.in_slots != list(range(len(plan.inputs))) or \
                [s for s, _, _ in self.direct or ()] != list(range(len(plan.outputs))):
            return None, "the entry's tables are not the model's inputs and outputs in order"
        if os.environ.get("TENSORFORGE_AOT_QUICK") == "python":
            return None, "TENSORFORGE_AOT_QUICK=python asks for the checks in Python"
        why = aot_quick.abi_problem()
        if why:
            return None, why
        if not hasattr(ex.module, "aot_quick"):
            return None, f"a {getattr(ex.module, 'type_key', '?')} module has no quick path"
        try:
            address = ex.module.aot_quick()
        except TensorforgeError as e:
            return None, str(e)
        specs = [(q[3], q[2]) for q in self.quick] + [(s, d) for _, s, d in self.direct or ()]
        entry = ctypes.cast(ex._entry, ctypes.c_void_p).value
        return NativeQuick(address, entry, specs, len(self.quick), self.fast.entry_args,
                           ex.pool.fast_returned), ""

    def run(self, inputs: Any) -> list[np.ndarray]:
        """One run: the native quick path, else the Python quick path when `inputs` fits it
        (every check of `check_inputs` passes on it by construction), else the general one."""
        call, kind = self._call, type(inputs)
        if call is not None:
            n = self._n_in
            if kind is dict and len(inputs) == n:
                ins: Any = map(inputs.get, self._names)
            elif (kind is list or kind is tuple) and len(inputs) == n:
                ins = inputs
            else:
                ins = (inputs,) if kind is np.ndarray and n == 1 else None
            if ins is not None:
                done = call(*ins)
                if type(done) is list:  # the outputs
                    return done
                if done == aot_quick.FAILED:
                    raise self._native_error(inputs)
                # NOT_QUICK, or the fast arena is taken: the paths below decide
        quick = self.quick
        if quick is not None and type(inputs) is dict and len(inputs) == len(quick):
            xs, ptrs = [], []
            for name, _, dt, shape, strides in quick:
                x = inputs.get(name)
                if type(x) is not np.ndarray or x.dtype != dt or x.shape != shape or \
                        x.strides != strides:
                    break
                ptr = x.__array_interface__["data"][0]  # a C getter: cheaper than .ctypes
                if ptr % dt.itemsize:
                    break
                xs.append(x)
                ptrs.append(ptr)
            else:
                return self._run_quick(xs, ptrs)
        return self._run(self.ex.check_inputs(inputs))

    def _run_quick(self, xs: list[np.ndarray], ptrs: list[int]) -> list[np.ndarray]:
        direct = self.direct
        assert direct is not None
        results = [np.empty(shape, dt) for _, shape, dt in direct]
        pool = self.ex.pool
        arena = pool.acquire()
        try:
            args = arena.entry_args
            ins, outs = args.run_inputs, args.run_outputs
            for slot, ptr in zip(self.in_slots, ptrs):
                ins[slot] = ptr
            for (slot, _, _), r in zip(direct, results):
                outs[slot] = r.__array_interface__["data"][0]
            status = args.call(self.ex._entry, ins, outs)
            if status:
                raise self._error(arena, [(q[1], x) for q, x in zip(self.quick or (), xs)],
                                  status)
            return results
        finally:
            pool.release(arena)

    def _run(self, checked: list[tuple[int, np.ndarray]]) -> list[np.ndarray]:
        """The general path: inputs already checked; read in place when C-contiguous and
        element-aligned, else copied; outputs written directly where `direct` allows, else
        read by `get_outputs`."""
        ex = self.ex
        direct = self.direct
        results = None if direct is None else [np.empty(s, d) for _, s, d in direct]
        arena = ex.pool.acquire()
        try:
            args = arena.entry_args
            ins = args.run_inputs
            for vi, x in checked:
                if x.flags.c_contiguous and x.ctypes.data % x.itemsize == 0 and \
                        vi not in self.read_back:
                    ins[self.in_slot[vi]] = x.ctypes.data  # read where it is
                else:
                    np.copyto(arena.arrays[vi], x)
                    ins[self.in_slot[vi]] = arena.arrays[vi].ctypes.data
            if results is None:
                outs = args.outputs
            else:
                outs = args.run_outputs
                for (slot, _, _), r in zip(direct, results):  # type: ignore[arg-type]
                    outs[slot] = r.ctypes.data
            status = args.call(ex._entry, ins, outs)
            if status:
                raise self._error(arena, checked, status)
            return results if results is not None else ex.get_outputs(arena)
        finally:
            ex.pool.release(arena)

    def _native_error(self, inputs: Any) -> TensorforgeError:
        """The kernel error of a failed native run (whose inputs passed every check); the fast
        arena (still held) is given back after."""
        assert self.native is not None
        try:
            return self._error(self.fast, self.ex.check_inputs(inputs), self.native.status)
        finally:
            self.native.give()
            self.ex.pool.fast_returned()

    def _error(self, arena: Any, checked: list[tuple[int, np.ndarray]], status: int
               ) -> TensorforgeError:
        """The kernel error of a failed run; the inputs are copied into the arena first, as
        the error names the offending value it finds in the kernel's arguments."""
        for vi, x in checked:
            np.copyto(arena.arrays[vi], x)
        i = arena.entry_args.failed.value
        fn, args, _, _ = arena.calls[i]
        return self.ex._kernel_error(i, fn, status, args)  # type: ignore[no-any-return]
