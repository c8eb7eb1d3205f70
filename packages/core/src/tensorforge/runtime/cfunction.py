"""`CFunction`: call a compiled kernel (a C function pointer) with numpy arrays, safely.

The calling convention every CPU backend follows (and the exported-library sidecar records):

- one C argument per `PrimFunc` parameter, in order: a buffer is passed as a pointer to its
  first element (the array must be C-contiguous, of the exact dtype and shape); a scalar is
  passed by value in its C type (`bool` as an unsigned byte, `float16` as its 16 bits);
- the function returns an `int32` status: 0 on success, `k > 0` when the k-th assertion of the
  kernel (`signature["asserts"][k-1]`) failed, -1 when an internal allocation failed; other
  negative codes are reserved for checks the runtime adds later (e.g. an index out of range).

Status handling has one path: `CFunction.error(status, context)` builds the `KernelError` (its
text from `status_message`); a direct call raises it, and the graph executor raises it with
the graph kernel it ran as `context`. A new status code needs only a case in `status_message`.
An assertion that is a check of the data (an index out of range, an integer division by
zero; `runtime/checks.py`) becomes a `KernelCheckError` (a `KernelError` and a
`DataCheckError`) naming the offending value, found in the call's `args`, and the graph node
when the executor passes its group's `nodes`.

Arguments are checked in Python before the call, because a wrong pointer is a silent memory
corruption, not an exception. The checks are a few attribute reads per argument; the ctypes
prototype is built once.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tensorforge.errors import TensorforgeError

__all__ = ["CFunction", "KernelError", "Param", "params_from_json", "params_to_json"]

_SCALAR_CTYPES: dict[str, Any] = {
    "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
    "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64, "float32": ctypes.c_float,
    "float64": ctypes.c_double, "float16": ctypes.c_uint16, "bool": ctypes.c_uint8,
}


class KernelError(TensorforgeError):
    """A kernel returned a non-zero status: `kernel` (its name), `status` (the code),
    `context` (where it ran, e.g. the executor's graph kernel; may be empty)."""

    def __init__(self, message: str, kernel: str, status: int, context: str = ""):
        super().__init__(message)
        self.kernel = kernel
        self.status = status
        self.context = context


@dataclass(frozen=True)
class Param:
    """One kernel parameter: a buffer (`kind="buffer"`, with a shape whose entries are ints,
    names of symbolic sizes, or None when unchecked) or a scalar (`kind="scalar"`).
    `writes` marks buffers the kernel stores into (they must be writeable)."""

    name: str
    kind: str
    dtype: str
    shape: tuple[int | str | None, ...] = ()
    writes: bool = False

    def describe(self) -> str:
        if self.kind == "scalar":
            return f"{self.name}: {self.dtype}"
        dims = ", ".join("?" if d is None else str(d) for d in self.shape)
        return f"{self.name}: {self.dtype}[{dims}]"


def params_to_json(params: Sequence[Param]) -> list[dict[str, Any]]:
    return [
        {"name": p.name, "kind": p.kind, "dtype": p.dtype, "shape": list(p.shape),
         "writes": p.writes}
        for p in params
    ]


def params_from_json(data: Sequence[Mapping[str, Any]]) -> list[Param]:
    return [
        Param(d["name"], d["kind"], d["dtype"], tuple(d.get("shape", ())), bool(d.get("writes")))
        for d in data
    ]


@dataclass
class _Check:
    """Precomputed per-parameter facts for the call path."""

    index: int
    param: Param
    np_dtype: Any = None
    const_shape: tuple[int, ...] | None = None
    int_range: tuple[int, int] | None = None
    sym_dims: list[tuple[int, str]] = field(default_factory=list)


class CFunction:
    """A compiled kernel callable with numpy arrays and Python scalars.

    :param name: the kernel's name (used in error messages).
    :param address: the C function's address (an int) or a ctypes function pointer.
    :param params: the parameter signature, in call order.
    :param asserts: the messages of the kernel's assertions, in status-code order.
    :param owner: an object kept alive as long as this function (the JIT engine or library).
    """

    def __init__(self, name: str, address: int | Any, params: Sequence[Param],
                 asserts: Sequence[str] = (), owner: Any = None):
        self.name = name
        self.params = tuple(params)
        self.asserts = tuple(asserts)
        self._owner = owner
        argtypes = [ctypes.c_void_p if p.kind == "buffer" else _scalar_ctype(p) for p in params]
        proto = ctypes.CFUNCTYPE(ctypes.c_int32, *argtypes)
        self._cfunc = proto(address if isinstance(address, int) else ctypes.cast(address,
                                                                                ctypes.c_void_p).value)
        self._checks = [self._make_check(i, p) for i, p in enumerate(self.params)]
        self._scalar_names = {p.name: i for i, p in enumerate(self.params) if p.kind == "scalar"}
        self._has_sym = any(c.sym_dims for c in self._checks)
        self._buffer_idx = [i for i, p in enumerate(self.params) if p.kind == "buffer"]
        self._n_buffers = len(self._buffer_idx)

    @staticmethod
    def _make_check(i: int, p: Param) -> _Check:
        c = _Check(i, p)
        if p.kind == "buffer":
            c.np_dtype = np.dtype(p.dtype)
            if all(isinstance(d, int) for d in p.shape):
                c.const_shape = tuple(p.shape)  # type: ignore[arg-type]
            else:
                c.sym_dims = [(k, d) for k, d in enumerate(p.shape) if isinstance(d, str)]
        elif p.kind == "scalar":
            if p.dtype.startswith(("int", "uint")):
                info = np.iinfo(p.dtype)
                c.int_range = (int(info.min), int(info.max))
        else:
            raise TensorforgeError(f"kernel parameter {p.name!r} has unknown kind {p.kind!r}")
        return c

    @property
    def signature(self) -> str:
        return f"{self.name}({', '.join(p.describe() for p in self.params)})"

    def __repr__(self) -> str:
        return f"<CFunction {self.signature}>"

    def __call__(self, *args: Any) -> None:
        if len(args) != len(self._checks):
            raise TensorforgeError(
                f"kernel {self.signature} takes {len(self._checks)} arguments, got {len(args)}; "
                "pass one numpy array per buffer and one number per scalar, in this order"
            )
        cargs = [self._convert(c, a) for c, a in zip(self._checks, args)]
        if self._n_buffers > 1:
            self._check_distinct(cargs)
        if self._has_sym:
            self._check_symbolic(args)
        status = self._cfunc(*cargs)
        if status:
            raise self.error(status, args=args)

    # argument checks -----------------------------------------------------------------------
    def _convert(self, c: _Check, a: Any) -> Any:
        p = c.param
        if p.kind == "buffer":
            if not isinstance(a, np.ndarray):
                self._fail(c, f"expects a numpy array, got {type(a).__name__}; "
                              f"wrap it with np.asarray(..., dtype='{p.dtype}')")
            if a.dtype != c.np_dtype:
                self._fail(c, f"expects dtype {p.dtype}, got {a.dtype}; "
                              f"convert it with .astype('{p.dtype}')")
            if c.const_shape is not None and a.shape != c.const_shape:
                self._fail(c, f"expects shape {c.const_shape}, got {a.shape}")
            elif c.const_shape is None and a.ndim != len(p.shape):
                self._fail(c, f"expects {len(p.shape)} dimensions, got shape {a.shape}")
            if not a.flags.c_contiguous:
                self._fail(c, "is not C-contiguous (a slice, transpose or broadcast view?); "
                              "pass np.ascontiguousarray(...) of it")
            if p.writes and not a.flags.writeable:
                self._fail(c, "is read-only but the kernel writes into it; pass a writeable copy")
            return a.ctypes.data
        # scalar
        if isinstance(a, np.ndarray) and a.ndim == 0:
            a = a.item()
        if c.int_range is not None:
            if not isinstance(a, (int, np.integer)):
                self._fail(c, f"expects an integer ({p.dtype}), got {type(a).__name__}")
            a = int(a)
            if not c.int_range[0] <= a <= c.int_range[1]:
                self._fail(c, f"value {a} does not fit in {p.dtype}")
            return a
        if not isinstance(a, (int, float, np.integer, np.floating, bool, np.bool_)):
            self._fail(c, f"expects a number ({p.dtype}), got {type(a).__name__}")
        if p.dtype == "float16":
            return int(np.float16(a).view(np.uint16))
        if p.dtype == "bool":
            return int(bool(a))
        return float(a)

    def _check_distinct(self, cargs: list[Any]) -> None:
        """Kernels assume their buffers do not alias (LLVM `noalias`): the same array passed
        twice, once written, would give wrong results silently."""
        ptrs = [cargs[i] for i in self._buffer_idx]
        if len(set(ptrs)) == len(ptrs):
            return
        for x, i in enumerate(self._buffer_idx):
            for j in self._buffer_idx[x + 1:]:
                pi, pj = self.params[i], self.params[j]
                if cargs[i] == cargs[j] and (pi.writes or pj.writes):
                    raise TensorforgeError(
                        f"kernel {self.name!r}: arguments {i} ({pi.name}) and {j} ({pj.name}) "
                        "are the same array, but the kernel writes one of them and assumes "
                        "buffers do not overlap; pass a copy (e.g. x.copy()) for one of them"
                    )

    def _check_symbolic(self, args: Sequence[Any]) -> None:
        bound: dict[str, tuple[int, str]] = {}
        for name, i in self._scalar_names.items():
            v = args[i]
            if isinstance(v, (int, np.integer)):
                bound[name] = (int(v), f"scalar argument {name!r}")
        for c in self._checks:
            for k, sym in c.sym_dims:
                size = args[c.index].shape[k]
                prev = bound.get(sym)
                if prev is None:
                    bound[sym] = (size, f"dimension {k} of {c.param.name!r}")
                elif prev[0] != size:
                    self._fail(c, f"has {size} along dimension {k} (size {sym!r}), but {prev[1]} "
                                  f"says {sym} = {prev[0]}")

    def _fail(self, c: _Check, what: str) -> None:
        raise TensorforgeError(
            f"kernel {self.name!r}: argument {c.index} ({c.param.describe()}) {what}"
        )

    def error(self, status: int, context: str = "", args: Sequence[Any] = (),
              nodes: Sequence[str] | None = None) -> KernelError:
        """The exception for a non-zero `status` returned by this kernel; `context` (e.g.
        "graph kernel 'fused_gather' (gather)") is put first in the message. A failed data
        check is a `KernelCheckError` naming the node (from `nodes`, the graph nodes of the
        kernel's group) and the offending value (from `args`, the call's arrays)."""
        from .checks import check_error

        err = check_error(self, status, context, args, nodes)
        if err is not None:
            return err
        msg = self.status_message(status)
        return KernelError(f"{context}: {msg}" if context else msg, self.name, status, context)

    def status_message(self, status: int) -> str:
        if 0 < status <= len(self.asserts):
            return f"kernel {self.name!r}: assertion failed: {self.asserts[status - 1]}"
        if status == -1:
            return f"kernel {self.name!r}: out of memory for an internal buffer"
        return f"kernel {self.name!r} failed with status {status}"


def _scalar_ctype(p: Param) -> Any:
    try:
        return _SCALAR_CTYPES[p.dtype]
    except KeyError:
        raise TensorforgeError(
            f"scalar parameter {p.name!r} has dtype {p.dtype!r}, which kernels cannot take; "
            f"use one of {', '.join(_SCALAR_CTYPES)}"
        ) from None
