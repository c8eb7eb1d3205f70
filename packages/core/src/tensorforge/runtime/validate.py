"""Checks of an executor description (`graph.json`) before any memory is allocated or any
kernel bound: every index in range, every shape a list of small non-negative ints, every dtype
one kernels take, every constant present with the shape and dtype its value says, every
intermediate value fitting in its storage. A package whose description fails here is refused
with a `PackageError` naming the entry, instead of reading out of bounds or dying in numpy.

Kernel arguments are checked against the kernels' own signatures (which come from the library's
kernel table, not from this file) when the executor binds them (`graph_executor._bind`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from tensorforge.errors import PackageError

__all__ = ["DTYPES", "GRAPH_FORMAT", "GRAPH_VERSION", "check_description", "nbytes_of"]

GRAPH_FORMAT = "tensorforge.graph-executor"
GRAPH_VERSION = 1

#: dtypes of values and parameters (what kernels and the calling convention support)
DTYPES = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                    "float16", "float32", "float64", "bool"})
#: model input/output dtypes held as stored bits of another dtype (graph/narrow_types.py)
NARROW_STORAGE = {"bfloat16": "uint16", "float8_e4m3fn": "uint8", "float8_e4m3fnuz": "uint8",
                  "float8_e5m2": "uint8", "float8_e5m2fnuz": "uint8", "float8_e8m0fnu": "uint8",
                  "float4_e2m1fn": "uint8", "int4": "uint8", "uint4": "uint8", "int2": "uint8",
                  "uint2": "uint8"}
_KINDS = ("input", "const", "intermediate", "output")
#: no single value or storage may claim more than this (a corrupt size, not a real model)
MAX_BYTES = 1 << 40


def nbytes_of(shape: Any, dtype: str) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n * np.dtype(dtype).itemsize


def _fail(where: str, what: str) -> None:
    raise PackageError(f"the model description is inconsistent: {where} {what}; the package "
                       "is corrupt or was edited (export it again from the compiled model)")


def _shape(where: str, shape: Any) -> tuple[int, ...]:
    if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 1 << 40 for d in shape):
        _fail(where, f"has shape {shape!r} (expected a list of non-negative ints)")
    return tuple(shape)


def _dtype(where: str, dtype: Any) -> str:
    if dtype not in DTYPES:
        _fail(where, f"has dtype {dtype!r} (expected one of {', '.join(sorted(DTYPES))})")
    return dtype


def _index(where: str, i: Any, n: int) -> int:
    if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < n:
        _fail(where, f"refers to entry {i!r}, which does not exist (0..{n - 1})")
    return i


def check_description(desc: Mapping[str, Any], params: Mapping[str, np.ndarray]) -> None:
    """Raise `PackageError` unless `desc` is a self-consistent executor description whose
    constants are all in `params` with the right shape and dtype."""
    if not isinstance(desc, Mapping):
        _fail("graph.json", "is not an object")
    if desc.get("format", GRAPH_FORMAT) != GRAPH_FORMAT:
        _fail("graph.json", f"has format {desc.get('format')!r}, not {GRAPH_FORMAT!r}")
    if desc.get("version", GRAPH_VERSION) != GRAPH_VERSION:
        raise PackageError(f"the model description has format version {desc.get('version')!r};"
                           f" this tensorforge reads version {GRAPH_VERSION}: compile the model "
                           "again with this tensorforge")
    for key in ("values", "storages", "kernels", "inputs", "outputs"):
        if not isinstance(desc.get(key), list):
            _fail("graph.json", f"lacks the list {key!r}")
    storages = desc["storages"]
    for s, n in enumerate(storages):
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= MAX_BYTES:
            _fail(f"storage {s}", f"has size {n!r}")
    values = desc["values"]
    for i, v in enumerate(values):
        where = f"value {i} ({v.get('name')!r})" if isinstance(v, Mapping) else f"value {i}"
        if not isinstance(v, Mapping):
            _fail(where, "is not an object")
        shape = _shape(where, v.get("shape"))
        dtype = _dtype(where, v.get("dtype"))
        nbytes = nbytes_of(shape, dtype)
        if nbytes > MAX_BYTES:
            _fail(where, f"claims {nbytes} bytes")
        kind = v.get("kind")
        if kind not in _KINDS:
            _fail(where, f"has kind {kind!r} (expected one of {', '.join(_KINDS)})")
        if kind == "intermediate":
            s = _index(where, v.get("storage"), len(storages))
            off = v.get("offset", 0)  # a part of a zero-copy concat
            if not isinstance(off, int) or isinstance(off, bool) or off < 0:
                _fail(where, f"has offset {off!r}")
            if off + nbytes > storages[s]:
                at = f" at offset {off}" if off else ""
                _fail(where, f"needs {nbytes} bytes{at} but its storage {s} has {storages[s]}")
        elif kind == "const":
            key = v.get("param")
            arr = params.get(key) if isinstance(key, str) else None
            if arr is None:
                _fail(where, f"names parameter {key!r}, which the package does not hold")
            if arr.dtype != np.dtype(dtype) or tuple(arr.shape) != shape:
                _fail(where, f"is {dtype}{list(shape)} but its parameter {key!r} is "
                             f"{arr.dtype}{list(arr.shape)}")
    for key, kind in (("inputs", "input"), ("outputs", "output")):
        for j, io in enumerate(desc[key]):
            where = f"{kind} {j}"
            if not isinstance(io, Mapping) or not isinstance(io.get("name"), str):
                _fail(where, "lacks a name")
            vi = _index(where, io.get("value"), len(values))
            v = values[vi]
            if kind == "input" and v["kind"] != "input" or kind == "output" and v["kind"] not in (
                    "output", "input", "const"):
                _fail(where, f"is value {vi} of kind {v['kind']!r}")
            dt = io.get("dtype")
            if list(io.get("shape", [])) != list(v["shape"]) or (
                    dt != v["dtype"] and NARROW_STORAGE.get(dt) != v["dtype"]):
                _fail(where, f"says {io.get('dtype')}{io.get('shape')} but its value is "
                             f"{v['dtype']}{v['shape']}")
            size_from = io.get("size_from")
            if size_from is not None:  # a data-dependent size: the count's value, the axis
                _index(f"{where} size_from", size_from.get("value"), len(values))
                _index(f"{where} size_from axis", size_from.get("axis"), len(v["shape"]))
    for j, k in enumerate(desc["kernels"]):
        if not isinstance(k, Mapping) or not isinstance(k.get("name"), str):
            _fail(f"kernel {j}", "lacks a name")
        where = f"kernel {j} ({k['name']!r})"
        args = k.get("args")
        if not isinstance(args, list) or not args:
            _fail(where, "has no argument list")
        for a in args:
            _index(where, a, len(values))
        outs = k.get("outputs", 1)
        if not isinstance(outs, int) or not 1 <= outs <= len(args):
            _fail(where, f"has {outs!r} outputs for {len(args)} arguments")
        for a in args[len(args) - outs:]:
            if values[a]["kind"] in ("input", "const"):
                _fail(where, f"writes value {a} ({values[a]['name']!r}), a model "
                             f"{values[a]['kind']}, which kernels must not change")
