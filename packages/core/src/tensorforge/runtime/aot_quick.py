"""The ahead-of-time executor's native quick path: `run`'s checks, pointer tables and entry call
as one generated function that Python calls as a builtin (no ctypes call on the way).

After the kernels of a small model have streamed their weights through the caches, every line
of Python around the entry runs cold; on the DQN the input checks, the pool and the ctypes
call cost more than a tenth of the run. So the checks move into generated code, next to the
entry: `QUICK_SYMBOL` (built by the CPU target's `quick_entry.py`, in the JIT engine and in
an exported library, generic: nothing in it depends on the model) is a `METH_FASTCALL`
C function, wrapped by `PyCFunction_NewEx` around a state array (`self`). Called with the
model's inputs, then the output arrays, in the entry's table order, it

* checks each argument exactly as the Python quick path does: type `numpy.ndarray` (no
  subclass), the expected dtype (the same descriptor object), shape and C strides, data
  aligned to the item size; outputs also writeable. Anything else returns `NOT_QUICK` and
  Python takes its own path, which accepts or refuses the call as before;
* takes the executor's *fast arena* (a flag in the state, compare-and-swap while the GIL is
  held), or returns `BUSY` (another call holds it: Python takes an arena from the pool);
* writes the arrays' data pointers into the fast arena's tables, releases the GIL around the
  entry call, takes it back and gives the arena back. A kernel's non-zero status returns
  `FAILED` with the arena still held (Python builds the error from it, then gives it back);
  `NOTIFY` says a thread waits in the pool for this arena (Python wakes it).

Called with no arguments it only tries to take the fast arena (the pool's general path,
`ArenaPool.set_fast`).

The function reads numpy's array struct and CPython's object header at fixed offsets
(`ABI`, version 1 of the symbol). `abi_problem` checks them once per process against numpy's
own view of a few probe arrays, and refuses builds whose layout or locking differ
(free-threaded, debug); the executor then keeps the Python quick path and says why
(`AotRunner.native_reason`)."""

from __future__ import annotations

import ctypes
import functools
import sys
import sysconfig
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["ABI", "NativeQuick", "QUICK_SYMBOL", "abi_problem"]

#: the generated function's symbol; the version changes with `ABI` or the state layout
QUICK_SYMBOL = "tensorforge_aot_quick_v1"
METH_FASTCALL = 0x0080
NPY_ARRAY_WRITEABLE = 0x0400

#: byte offsets the generated code reads: CPython's object header (64-bit, GIL build), then
#: numpy's `PyArrayObject_fields` (data, nd, dimensions, strides, base, descr, flags)
ABI = {"ob_type": 8, "data": 16, "nd": 24, "dimensions": 32, "strides": 40, "descr": 56,
       "flags": 64}

# the state: int64 words (see the module docstring); arguments' records follow ARGS
(BUSY, WAITING, CLOSED, INCREF, SAVE_THREAD, RESTORE_THREAD, NDARRAY, ENTRY, IN_TABLE,
 OUT_TABLE, PARAMS, WORKSPACE, FAILED_AT, STATUS, N_IN, N_ARGS) = range(16)
CODES = 16  #: five words: the objects returned for OK, NOTIFY, NOT_QUICK, BUSY, FAILED
OK, NOTIFY, NOT_QUICK, TAKEN_ELSEWHERE, FAILED = range(5)
ARGS = CODES + 5  #: one word per argument: the word index of its record
#: an argument's record: nd, descriptor address, item size, flags it needs, then nd
#: dimensions and nd strides
REC_ND, REC_DESCR, REC_ITEMSIZE, REC_FLAGS, REC_DIMS = range(5)

_PYAPI = ("Py_IncRef", "PyEval_SaveThread", "PyEval_RestoreThread", "PyCFunction_NewEx")


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


def _read(obj: Any, field: str, ctype: Any) -> Any:
    return ctype.from_address(id(obj) + ABI[field]).value


def _probe_array(a: np.ndarray) -> str:
    """"" when the fields of `a` read at `ABI`'s offsets are numpy's own values."""
    vp = ctypes.c_void_p
    dims, strides = _read(a, "dimensions", vp), _read(a, "strides", vp)
    seen = {
        "ob_type": _read(a, "ob_type", vp) == id(np.ndarray),
        "data": _read(a, "data", vp) == a.__array_interface__["data"][0],
        "nd": _read(a, "nd", ctypes.c_int) == a.ndim,
        "dimensions": a.ndim == 0 or tuple((ctypes.c_int64 * a.ndim).from_address(dims))
        == a.shape,
        "strides": a.ndim == 0 or tuple((ctypes.c_int64 * a.ndim).from_address(strides))
        == a.strides,
        "descr": _read(a, "descr", vp) == id(a.dtype),
        "flags": _read(a, "flags", ctypes.c_int) == a.flags.num,
    }
    bad = [k for k, ok in seen.items() if not ok]
    return f"numpy's array fields {', '.join(bad)} are not at the offsets " \
           f"{QUICK_SYMBOL} reads" if bad else ""


@functools.cache
def abi_problem() -> str:
    """"" when this interpreter and numpy have the layout `QUICK_SYMBOL` reads (checked on
    probe arrays), else why not."""
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        return "a 32-bit interpreter"
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        return "a free-threaded Python build (the quick path relies on the GIL)"
    if hasattr(sys, "gettotalrefcount"):
        return "a debug Python build"
    if object.__basicsize__ != ABI["data"]:
        return f"a Python object header of {object.__basicsize__} bytes, not {ABI['data']}"
    for name in _PYAPI:
        if not hasattr(ctypes.pythonapi, name):
            return f"the interpreter does not export {name}"
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    ro = np.zeros(5, np.int64)
    ro.flags.writeable = False
    for a in (base, base[1:, ::2], ro, np.zeros((), np.uint8)):
        why = _probe_array(a)
        if why:
            return why
    return ""


def _address(fn: Any) -> int:
    return int(ctypes.cast(fn, ctypes.c_void_p).value or 0)


def _c_strides(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    """The strides of a C-contiguous array of `shape` (as numpy gives a fresh one)."""
    out, step = [], itemsize
    for d in reversed(tuple(shape)):
        out.append(step)
        step *= int(d)
    return tuple(reversed(out))


class NativeQuick:
    """The quick path of one executor: `call` (the builtin; see the module docstring) over
    the state array, plus the fast arena's slot for `ArenaPool.set_fast` (`take`, `give`,
    `waiting`, `close`, `busy`).

    `address`: of `QUICK_SYMBOL`; `entry`: of the graph entry; `specs`: (shape, dtype) per
    argument, the inputs then the outputs in the entry's table order; `args`: the fast
    arena's `EntryArgs`. Call `abi_problem()` first: on another layout `call` would read
    the wrong fields."""

    def __init__(self, address: int, entry: int, specs: Sequence[tuple[Sequence[int], Any]],
                 n_inputs: int, args: Any):
        api = ctypes.pythonapi
        dtypes = [np.dtype(d) for _, d in specs]
        self._codes = tuple(range(5))  # the objects `call` returns (small ints: shared)
        records: list[list[int]] = []
        for k, ((shape, _), dt) in enumerate(zip(specs, dtypes)):
            shape = tuple(int(d) for d in shape)
            records.append([len(shape), id(dt), dt.itemsize,
                            NPY_ARRAY_WRITEABLE if k >= n_inputs else 0, *shape,
                            *_c_strides(shape, dt.itemsize)])
        words = [0] * (ARGS + len(specs))
        words[INCREF] = _address(api.Py_IncRef)
        words[SAVE_THREAD] = _address(api.PyEval_SaveThread)
        words[RESTORE_THREAD] = _address(api.PyEval_RestoreThread)
        words[NDARRAY] = id(np.ndarray)
        words[ENTRY] = entry
        words[IN_TABLE] = ctypes.addressof(args.run_inputs)
        words[OUT_TABLE] = ctypes.addressof(args.run_outputs)
        words[PARAMS] = ctypes.addressof(args.params)
        words[WORKSPACE] = args.workspace
        words[FAILED_AT] = args.failed_at
        words[N_IN], words[N_ARGS] = n_inputs, len(specs)
        words[CODES:CODES + 5] = [id(c) for c in self._codes]
        for k, rec in enumerate(records):
            words[ARGS + k] = len(words)
            words.extend(rec)
        self.state = np.array(words, dtype=np.int64)
        self._dtypes = dtypes  # the descriptors the records name stay alive
        self._args = args  # the tables and workspace the state points into
        self._def = _MethodDef(QUICK_SYMBOL.encode(), address, METH_FASTCALL, None)
        new = api.PyCFunction_NewEx
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.c_void_p]
        #: the builtin: call(*inputs, *outputs) -> a code (OK ... FAILED)
        self.call = new(ctypes.addressof(self._def), self.state, None)

    # the fast arena's slot (ArenaPool.set_fast); all under the GIL
    def take(self) -> bool:
        """Take the fast arena if it is free (the native compare-and-swap)."""
        return self.call() == OK  # type: ignore[no-any-return]

    def give(self) -> None:
        self.state[BUSY] = 0

    def waiting(self, n: int) -> None:
        """How many threads wait in the pool: the native path then answers NOTIFY."""
        self.state[WAITING] = n

    def close(self) -> None:
        """No call takes the fast arena any more (one running finishes)."""
        self.state[CLOSED] = 1

    def busy(self) -> bool:
        return bool(self.state[BUSY])

    @property
    def status(self) -> int:
        """The failed kernel's status (after `FAILED`)."""
        return int(self.state[STATUS])
