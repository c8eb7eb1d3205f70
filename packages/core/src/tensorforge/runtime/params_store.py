"""How a package stores a model's constants: each in its smallest faithful form.

A constant the compiler computed from a smaller one by a pure numpy transform (a Winograd
weight `U = G g G^T`, 4x the 3x3 weights it comes from, or a packed `OIHW[x]i[y]o` copy) is
stored as that smaller array plus the transform's name and attributes (`Derived`); `load`
redoes the transform once with the same numpy function (`runtime.transforms`), which is
constant folding at load time. Export checks that the recomputed array is bit-identical to the
compiled one and stores the constant itself otherwise, so a package always reproduces the
compiled model exactly.

Two members hold them: `params.json` (the index) and `params.bin` (the arrays, each at a
64-byte aligned offset):

    {"format": "tensorforge.params", "version": 1,
     "arrays": {"a0": {"dtype": "float32", "shape": [64, 3, 3, 3], "offset": 0}, ...},
     "params": {"p0": {"array": "a0"},
                "p1": {"transform": "winograd_weight_transform", "attrs": {"m": 4, "ob": 16},
                       "source": {"array": "a1"}}}}

A recipe's source is an array or another recipe (at most `MAX_DEPTH` deep).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tensorforge.errors import PackageError

from .transforms import TRANSFORMS, apply_transform
from .validate import DTYPES, nbytes_of

__all__ = ["Derived", "pack_params", "unpack_params"]

PARAMS_FORMAT = "tensorforge.params"
PARAMS_VERSION = 1
MAX_DEPTH = 8
_ALIGN = 64


@dataclass(frozen=True, eq=False)
class Derived:
    """A constant computed at compile time as `TRANSFORMS[transform](source, **attrs)`."""

    transform: str
    attrs: dict[str, Any] = field(default_factory=dict)
    source: Any = None  # np.ndarray or Derived

    def compute(self) -> np.ndarray:
        src = self.source.compute() if isinstance(self.source, Derived) else self.source
        return apply_transform(self.transform, np.asarray(src), dict(self.attrs))


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and \
        np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def pack_params(params: Mapping[str, np.ndarray], derived: Mapping[str, Derived] | None = None
                ) -> tuple[bytes, bytes, dict[str, int]]:
    """(params.json, params.bin, stats) for `params`; a constant with a `derived` recipe that
    reproduces it bit for bit is stored as the recipe's source. stats: `stored_bytes` (the
    arrays written), `runtime_bytes` (the constants as the kernels read them), `derived` (how
    many constants are recomputed at load)."""
    derived = derived or {}
    arrays: dict[str, dict[str, Any]] = {}
    chunks: list[bytes] = []
    by_id: dict[int, str] = {}
    offset = 0

    def store(a: np.ndarray) -> dict[str, str]:
        nonlocal offset
        if not a.flags.c_contiguous:  # (ascontiguousarray alone would make a scalar 1-d)
            a = np.ascontiguousarray(a)
        if id(a) not in by_id:
            name = f"a{len(arrays)}"
            pad = (-offset) % _ALIGN
            chunks.append(b"\0" * pad)
            offset += pad
            arrays[name] = {"dtype": str(a.dtype), "shape": list(a.shape), "offset": offset}
            chunks.append(a.tobytes())
            offset += a.nbytes
            by_id[id(a)] = name
        return {"array": by_id[id(a)]}

    def recipe(d: Derived) -> dict[str, Any]:
        src = recipe(d.source) if isinstance(d.source, Derived) else store(d.source)
        return {"transform": d.transform, "attrs": dict(d.attrs), "source": src}

    index: dict[str, Any] = {}
    n_derived = 0
    for key, arr in params.items():
        d = derived.get(key)
        if d is not None and _faithful(d, arr):
            index[key] = recipe(d)
            n_derived += 1
        else:
            index[key] = store(np.asarray(arr))
    meta = {"format": PARAMS_FORMAT, "version": PARAMS_VERSION, "arrays": arrays,
            "params": index}
    stats = {"stored_bytes": offset, "derived": n_derived,
             "runtime_bytes": int(sum(np.asarray(a).nbytes for a in params.values()))}
    return json.dumps(meta, indent=None).encode(), b"".join(chunks), stats


def _faithful(d: Derived, arr: np.ndarray) -> bool:
    try:
        return _same(d.compute(), np.asarray(arr))
    except ValueError:
        return False


def _bad(what: str) -> None:
    raise PackageError(f"params.json {what}; the package is corrupt or was edited")


def unpack_params(index_bytes: bytes, blob: bytes) -> dict[str, np.ndarray]:
    """The constants by key: stored arrays copied out of `blob` (so the blob can be freed),
    recipes recomputed. Every offset, shape, dtype and transform is checked first."""
    try:
        meta = json.loads(index_bytes)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise PackageError(f"params.json is not valid JSON: {e}") from None
    if not isinstance(meta, dict) or meta.get("format") != PARAMS_FORMAT:
        _bad("is not a tensorforge parameter index")
    if meta.get("version") != PARAMS_VERSION:
        raise PackageError(f"params.json has format version {meta.get('version')!r}; this "
                           f"tensorforge reads {PARAMS_VERSION}")
    arrays_meta, params_meta = meta.get("arrays"), meta.get("params")
    if not isinstance(arrays_meta, dict) or not isinstance(params_meta, dict):
        _bad("lacks its arrays or params")
    views: dict[str, np.ndarray] = {}
    for name, a in arrays_meta.items():
        if not isinstance(a, dict) or a.get("dtype") not in DTYPES:
            _bad(f"gives array {name!r} an unsupported dtype")
        shape = a.get("shape")
        off = a.get("offset")
        if not isinstance(shape, list) or not all(
                isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape) or \
                not isinstance(off, int) or off < 0:
            _bad(f"gives array {name!r} a bad shape or offset")
        n = nbytes_of(shape, a["dtype"])
        if off + n > len(blob):
            _bad(f"places array {name!r} ({n} bytes at {off}) past the end of params.bin "
                 f"({len(blob)} bytes)")
        views[name] = np.frombuffer(blob, dtype=a["dtype"], count=n // np.dtype(
            a["dtype"]).itemsize if n else 0, offset=off).reshape(shape)

    owned: dict[str, np.ndarray] = {}  # one copy per stored array, shared by its users

    def build(entry: Any, depth: int) -> np.ndarray:
        if depth > MAX_DEPTH or not isinstance(entry, dict):
            _bad("has a malformed or too deep parameter recipe")
        if "array" in entry:
            name = entry["array"]
            if name not in views:
                _bad(f"refers to array {name!r}, which it does not define")
            if name not in owned:  # own memory: a view would keep the whole blob alive
                owned[name] = views[name].copy()
            return owned[name]
        name = entry.get("transform")
        if name not in TRANSFORMS or not isinstance(entry.get("attrs"), dict):
            _bad(f"names an unknown transform {name!r} (known: {', '.join(TRANSFORMS)})")
        src = build(entry.get("source"), depth + 1)
        try:
            return apply_transform(name, src, entry["attrs"])
        except ValueError as e:
            _bad(f"has a transform that fails: {e}")
        raise AssertionError("unreachable")

    out: dict[str, np.ndarray] = {}
    for key, entry in params_meta.items():
        arr = build(entry, 0)
        if "array" not in entry and not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
        out[key] = arr
    return out
