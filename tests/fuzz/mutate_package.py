"""Package (.tfpkg) mutations for the fuzzer: a seed model compiled and exported once per
worker, then damaged as a disk error or an attacker would: bytes of the zip flipped or cut,
members flipped, dropped, duplicated or added, the library swapped for another model's,
JSON members (graph, manifest, signatures, parameter index) edited at a random place. With
``rehash`` the manifest's sha256 and sizes are recomputed after the edits (an attacker who
rewrites the manifest), so the checks behind the hashes are exercised too. The one edit
that is never rehashed is a flipped byte inside the library: a package is native code, to
be trusted like a shared library (see `tensorforge.runtime.package`), so corrupted machine
code with a matching hash is out of scope; a whole library from another model is not.

A case must end in a `TensorforgeError` (PackageError...) or in the outputs ONNX Runtime
gives for the unmutated seed model."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from typing import Any

from hypothesis import strategies as st
from seeds import SEEDS

TARGET = "llvm -num-threads=1"
_INTS = [0, -1, 1, 2, 3, 7, 64, 255, 10**6, 2**31 - 1, -(2**31), 2**40, 2**63 - 1]
_STRINGS = ["", "float64", "int8", "bool", "x", "free", "system", "dlopen", "main", "../x",
            "/etc/passwd", "cpu-library", "lib.so", "aarch64", "avx512f", "\x00", "é"]
_MEMBERS = ["manifest.json", "graph.json", "params.json", "params.bin", "lib.so",
            "lib.so.json"]
_JSON_MEMBERS = ["graph.json", "manifest.json", "lib.so.json", "params.json"]

_idx = st.integers(0, 1 << 16)
_frac = st.floats(0.0, 0.999)


def _m(name: str, **fields: st.SearchStrategy) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({"op": st.just(name), **fields})


_value = st.one_of(
    st.tuples(st.just("int"), st.sampled_from(_INTS)),
    st.tuples(st.just("str"), st.sampled_from(_STRINGS)),
    st.tuples(st.just("float"), st.sampled_from([0.5, -1.0, 1e300])),
    st.tuples(st.just("null"), st.none()),
    st.tuples(st.just("list"), st.lists(st.sampled_from(_INTS), max_size=3)),
    st.tuples(st.just("drop"), st.none()),
    st.tuples(st.just("dup"), st.none()),
    st.tuples(st.just("swap"), _idx),
)

_JSON_EDIT = _m("json_edit", member=st.sampled_from(_JSON_MEMBERS),
                path=st.lists(_idx, min_size=1, max_size=6), value=_value)
_SWAP = _m("swap_library", other=st.sampled_from(sorted(SEEDS)), signatures=st.booleans())
# JSON edits and library swaps listed several times: they reach the checks behind the
# hashes (with rehash), where the zip-level damages stop at the first ones
MUTATIONS = st.one_of(
    _JSON_EDIT, _JSON_EDIT, _JSON_EDIT, _JSON_EDIT, _SWAP, _SWAP,
    _m("member_flip", member=st.sampled_from(_MEMBERS), frac=_frac, xor=st.integers(1, 255)),
    _m("member_truncate", member=st.sampled_from(_MEMBERS), frac=_frac),
    _m("member_drop", member=st.sampled_from(_MEMBERS)),
    _m("member_duplicate", member=st.sampled_from(_MEMBERS), xor=st.integers(1, 255)),
    _m("member_add", entry=st.sampled_from(["extra.bin", "../escape", "lib2.so", "graph.json/"]),
       size=st.sampled_from([0, 10, 4096])),
)

ZIP_DAMAGE = st.one_of(
    _m("zip_flip", frac=_frac, xor=st.integers(1, 255)),
    _m("zip_truncate", frac=_frac),
)


def plans() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({
        "seed": st.sampled_from(sorted(SEEDS)),
        "mutations": st.lists(MUTATIONS, min_size=1, max_size=2),
        "rehash": st.booleans(),
        "bytes": st.lists(ZIP_DAMAGE, max_size=1),
        "data_seed": st.integers(0, 2**16),
    })


# -- building --------------------------------------------------------------------------------
_packages: dict[str, bytes] = {}


def seed_package(name: str) -> bytes:
    """The seed model compiled for this machine and exported (once per process)."""
    if name not in _packages:
        import os
        import tempfile

        import tensorforge

        with tempfile.TemporaryDirectory(prefix="tf-fuzz-pkg-") as d:
            path = os.path.join(d, "seed.tfpkg")
            model = tensorforge.compile(SEEDS[name](), target=TARGET)
            model.export(path)
            with open(path, "rb") as f:
                _packages[name] = f.read()
    return _packages[name]


def _members(data: bytes) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return [(i.filename, z.read(i.filename)) for i in z.infolist()]


def apply_plan(plan: dict[str, Any]) -> bytes:
    """The package bytes of `plan`."""
    members = _members(seed_package(plan["seed"]))
    code_flipped = False
    for mut in plan["mutations"]:
        code_flipped |= mut["op"] == "member_flip" and mut["member"] == "lib.so"
        members = _APPLY[mut["op"]](members, mut)
    if plan["rehash"]:
        members = _rehash(members, skip={"lib.so"} if code_flipped else set())
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for name, data in members:
            z.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), data)
    blob = out.getvalue()
    for dmg in plan["bytes"]:
        pos = int(dmg["frac"] * len(blob))
        if dmg["op"] == "zip_truncate":
            blob = blob[:pos]
        else:
            blob = blob[:pos] + bytes([blob[pos] ^ dmg["xor"]]) + blob[pos + 1:]
    return blob


def _find(members: list[tuple[str, bytes]], name: str) -> int | None:
    return next((k for k, (n, _) in enumerate(members) if n == name), None)


def _member_flip(members: list[tuple[str, bytes]], mut: dict) -> list[tuple[str, bytes]]:
    k = _find(members, mut["member"])
    if k is None or not members[k][1]:
        return members
    name, data = members[k]
    pos = int(mut["frac"] * len(data))
    members[k] = (name, data[:pos] + bytes([data[pos] ^ mut["xor"]]) + data[pos + 1:])
    return members


def _member_truncate(members: list[tuple[str, bytes]], mut: dict) -> list[tuple[str, bytes]]:
    k = _find(members, mut["member"])
    if k is not None:
        name, data = members[k]
        members[k] = (name, data[: int(mut["frac"] * len(data))])
    return members


def _member_drop(members: list[tuple[str, bytes]], mut: dict) -> list[tuple[str, bytes]]:
    return [(n, d) for n, d in members if n != mut["member"]]


def _member_duplicate(members: list[tuple[str, bytes]], mut: dict) -> list[tuple[str, bytes]]:
    k = _find(members, mut["member"])
    if k is None:
        return members
    name, data = members[k]
    twin = bytes([data[0] ^ mut["xor"]]) + data[1:] if data else b"x"
    return [*members, (name, twin)]


def _member_add(members: list[tuple[str, bytes]], mut: dict) -> list[tuple[str, bytes]]:
    return [*members, (mut["entry"], b"\x7fELF" + b"\x00" * mut["size"])]


def _swap_library(members: list[tuple[str, bytes]], mut: dict) -> list[tuple[str, bytes]]:
    other = dict(_members(seed_package(mut["other"])))
    names = ["lib.so", "lib.so.json"] if mut["signatures"] else ["lib.so"]
    return [(n, other[n] if n in names and n in other else d) for n, d in members]


def _json_edit(members: list[tuple[str, bytes]], mut: dict) -> list[tuple[str, bytes]]:
    k = _find(members, mut["member"])
    if k is None:
        return members
    try:
        doc = json.loads(members[k][1])
    except ValueError:
        return members
    doc = _edit(doc, list(mut["path"]), mut["value"])
    members[k] = (members[k][0], json.dumps(doc, indent=1).encode())
    return members


def _edit(node: Any, path: list[int], value: tuple[str, Any]) -> Any:
    """`node` with the element that `path` picks (an index per level, modulo its size)
    replaced, dropped, duplicated or swapped."""
    kind, v = value
    if not isinstance(node, (dict, list)) or not node:
        return _leaf(kind, v, node)
    keys = sorted(node) if isinstance(node, dict) else list(range(len(node)))
    key = keys[path[0] % len(keys)]
    if len(path) > 1 and isinstance(node[key], (dict, list)) and node[key]:
        node[key] = _edit(node[key], path[1:], value)
        return node
    if kind == "drop":
        if isinstance(node, dict):
            del node[key]
        else:
            node.pop(key)
    elif kind == "dup" and isinstance(node, list):
        node.insert(key, node[key])
    elif kind == "swap" and isinstance(node, list):
        other = v % len(node)
        node[key], node[other] = node[other], node[key]
    else:
        node[key] = _leaf(kind, v, node[key])
    return node


def _leaf(kind: str, v: Any, old: Any) -> Any:
    if kind in ("int", "str", "float", "null", "list"):
        return v
    return old


def _rehash(members: list[tuple[str, bytes]], skip: set[str]) -> list[tuple[str, bytes]]:
    """The manifest's sha256 and size of every member recomputed (but those in `skip`)."""
    k = _find(members, "manifest.json")
    if k is None:
        return members
    try:
        manifest = json.loads(members[k][1])
        table = manifest["members"]
        for name, data in members:
            if name != "manifest.json" and name not in skip and isinstance(table, dict):
                table[name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
    except (ValueError, KeyError, TypeError):
        return members
    members[k] = ("manifest.json", json.dumps(manifest, indent=1).encode())
    return members


_APPLY = {
    "member_flip": _member_flip, "member_truncate": _member_truncate,
    "member_drop": _member_drop, "member_duplicate": _member_duplicate,
    "member_add": _member_add, "swap_library": _swap_library, "json_edit": _json_edit,
}
