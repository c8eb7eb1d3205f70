"""The ahead-of-time executor's native quick path: `run`'s checks, pointer tables and entry call
as one generated function that Python calls as a builtin (no ctypes call on the way).

After the kernels of a small model have streamed their weights through the caches, every line
of Python around the entry runs cold; on the DQN the input checks, the pool and the ctypes
call cost more than a tenth of the run. So the checks move into generated code, next to the
entry: `QUICK_SYMBOL` (built by the CPU target's `quick_entry.py`, in the JIT engine and in
an exported library, generic: nothing in it depends on the model) is a `METH_FASTCALL`
C function, wrapped by `PyCFunction_NewEx` around a state array (`self`). Called with the
model's inputs in the entry's table order, it

* checks each input exactly as the Python quick path does: type `numpy.ndarray` (no
  subclass), the expected dtype (the same descriptor object), shape and C strides, data
  aligned to the item size. Anything else returns the code `NOT_QUICK` and Python takes its
  own path, which accepts or refuses the call as before;
* takes the executor's *fast arena* (a flag in the state, compare-and-swap while the GIL is
  held), or returns `TAKEN_ELSEWHERE` (Python then takes an arena from the pool);
* makes the outputs (`PyArray_NewFromDescr` from numpy's C-API table: new C-contiguous
  arrays the caller owns, as `numpy.empty` makes them), writes the data pointers into the
  fast arena's tables, releases the GIL around the entry call, takes it back, gives the arena
  back (calling the pool's `fast_returned` when a thread waits for it) and returns the list
  of outputs. A kernel's non-zero status returns `FAILED` with the arena still held (Python
  builds the error from it, then gives it back).

Called with no arguments it only tries to take the fast arena (the pool's general path,
`ArenaPool.set_fast`).

The function reads numpy's array struct and CPython's object header at fixed offsets
(`ABI`, version 1 of the symbol), and calls CPython and numpy only through the function
pointers Python puts in the state. `abi_problem` checks the offsets once per process against
numpy's own view of a few probe arrays, makes an array through the C-API table entry, and
refuses builds whose layout or locking differ (free-threaded, debug); the executor then keeps
the Python quick path and says why (`AotRunner.native_reason`)."""

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

#: byte offsets the generated code reads: CPython's object header (64-bit, GIL build), then
#: numpy's `PyArrayObject_fields` (data, nd, dimensions, strides, base, descr, flags)
ABI = {"ob_type": 8, "data": 16, "nd": 24, "dimensions": 32, "strides": 40, "descr": 56,
       "flags": 64}

#: numpy's C-API table index of PyArray_NewFromDescr (fixed by numpy's ABI since 1.0)
NEW_FROM_DESCR_INDEX = 94

# the state: int64 words (see the module docstring); the records follow ARGS
(BUSY, WAITING, CLOSED, STATUS, NDARRAY, ENTRY, IN_TABLE, OUT_TABLE, PARAMS, WORKSPACE,
 FAILED_AT, N_IN, N_OUT, ON_RETURN,  # the pool's fast_returned (a callable object)
 INCREF, DECREF, SAVE_THREAD, RESTORE_THREAD, CALL_OBJECT, LIST_NEW, LIST_SET_ITEM,
 NEW_ARRAY) = range(22)
CODES = 22  #: four words: the objects returned for each code below
OK, NOT_QUICK, TAKEN_ELSEWHERE, FAILED = range(4)  # OK: only from a take (no arguments)
ARGS = CODES + 4  #: per input, then per output: the word index of its record
#: a record: nd, descriptor address, item size, then nd dimensions and nd C strides
REC_ND, REC_DESCR, REC_ITEMSIZE, REC_DIMS = range(4)

#: CPython functions the generated code calls (state word: name)
_PYAPI = {INCREF: "Py_IncRef", DECREF: "Py_DecRef", SAVE_THREAD: "PyEval_SaveThread",
          RESTORE_THREAD: "PyEval_RestoreThread", CALL_OBJECT: "PyObject_CallObject",
          LIST_NEW: "PyList_New", LIST_SET_ITEM: "PyList_SetItem"}


class _MethodDef(ctypes.Structure):
    _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


def _pyapi(name: str, restype: Any, *argtypes: Any) -> Any:
    """CPython's `name` as a private ctypes function (GIL held), leaving the shared
    `ctypes.pythonapi` attributes as other code set them."""
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


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
    for name in (*_PYAPI.values(), "PyCFunction_NewEx", "PyCapsule_GetName",
                 "PyCapsule_GetPointer"):
        if not hasattr(ctypes.pythonapi, name):
            return f"the interpreter does not export {name}"
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    ro = np.zeros(5, np.int64)
    ro.flags.writeable = False
    for a in (base, base[1:, ::2], ro, np.zeros((), np.uint8)):
        why = _probe_array(a)
        if why:
            return why
    try:
        new = _new_from_descr()
    except (AttributeError, ImportError, ValueError) as e:
        return f"numpy's C-API table is not where it was ({e})"
    for shape, dt in (((3, 5), np.dtype(np.float32)), ((), np.dtype(np.int64))):
        made = _call_new_from_descr(new, shape, dt)
        if type(made) is not np.ndarray or made.shape != shape or made.dtype is not dt or \
                not made.flags.c_contiguous or not made.flags.owndata:
            return "numpy's C-API table entry of PyArray_NewFromDescr made something else"
    return ""


def _new_from_descr() -> int:
    """The address of numpy's PyArray_NewFromDescr, from its C-API table."""
    try:
        from numpy._core import _multiarray_umath as umath  # numpy 2
    except ImportError:
        from numpy.core import _multiarray_umath as umath  # type: ignore[no-redef]
    vp, obj = ctypes.c_void_p, ctypes.py_object
    capsule = umath._ARRAY_API
    name = _pyapi("PyCapsule_GetName", vp, obj)(capsule)
    table = _pyapi("PyCapsule_GetPointer", vp, obj, vp)(capsule, name)
    if not table:
        raise ValueError("an empty capsule")
    return int(ctypes.c_void_p.from_address(table + 8 * NEW_FROM_DESCR_INDEX).value or 0)


def _call_new_from_descr(address: int, shape: tuple[int, ...], dt: np.dtype) -> Any:
    """What PyArray_NewFromDescr at `address` makes of (`shape`, `dt`), called as the
    generated code calls it."""
    vp = ctypes.c_void_p
    fn = ctypes.PYFUNCTYPE(ctypes.py_object, vp, vp, ctypes.c_int, vp, vp, vp, ctypes.c_int,
                           vp)(address)
    dims = (ctypes.c_int64 * max(1, len(shape)))(*shape)
    _pyapi("Py_IncRef", None, ctypes.py_object)(dt)  # the call steals a reference
    return fn(id(np.ndarray), id(dt), len(shape), ctypes.addressof(dims), None, None, 0, None)


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
    input, then per output, in the entry's table order; `args`: the fast arena's `EntryArgs`;
    `on_return`: what to call when the native caller gave the arena back while threads
    waited (the pool's `fast_returned`). Call `abi_problem()` first: on another layout
    `call` would read the wrong fields."""

    def __init__(self, address: int, entry: int, specs: Sequence[tuple[Sequence[int], Any]],
                 n_inputs: int, args: Any, on_return: Any):
        api = ctypes.pythonapi
        dtypes = [np.dtype(d) for _, d in specs]
        self._codes = tuple(range(4))  # the objects `call` returns (small ints: shared)
        records: list[list[int]] = []
        for (shape, _), dt in zip(specs, dtypes):
            shape = tuple(int(d) for d in shape)
            records.append([len(shape), id(dt), dt.itemsize, *shape,
                            *_c_strides(shape, dt.itemsize)])
        words = [0] * (ARGS + len(specs))
        for at, name in _PYAPI.items():
            words[at] = _address(getattr(api, name))
        words[NEW_ARRAY] = _new_from_descr()
        self._on_return = on_return
        words[ON_RETURN] = id(on_return)
        words[NDARRAY] = id(np.ndarray)
        words[ENTRY] = entry
        words[IN_TABLE] = ctypes.addressof(args.run_inputs)
        words[OUT_TABLE] = ctypes.addressof(args.run_outputs)
        words[PARAMS] = ctypes.addressof(args.params)
        words[WORKSPACE] = args.workspace
        words[FAILED_AT] = args.failed_at
        words[N_IN], words[N_OUT] = n_inputs, len(specs) - n_inputs
        words[CODES:CODES + 4] = [id(c) for c in self._codes]
        for k, rec in enumerate(records):
            words[ARGS + k] = len(words)
            words.extend(rec)
        self.state = np.array(words, dtype=np.int64)
        self._dtypes = dtypes  # the descriptors the records name stay alive
        self._args = args  # the tables and workspace the state points into
        self._def = _MethodDef(QUICK_SYMBOL.encode(), address, METH_FASTCALL, None)
        new = _pyapi("PyCFunction_NewEx", ctypes.py_object, ctypes.c_void_p, ctypes.py_object,
                     ctypes.c_void_p)
        #: the builtin: call(*inputs) -> the list of outputs, or a code (NOT_QUICK ...)
        self.call = new(ctypes.addressof(self._def), self.state, None)

    # the fast arena's slot (ArenaPool.set_fast); all under the GIL
    def take(self) -> bool:
        """Take the fast arena if it is free (the native compare-and-swap)."""
        return self.call() == OK  # type: ignore[no-any-return]

    def give(self) -> None:
        self.state[BUSY] = 0

    def waiting(self, n: int) -> None:
        """How many threads wait in the pool (the native caller then calls `on_return`)."""
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
