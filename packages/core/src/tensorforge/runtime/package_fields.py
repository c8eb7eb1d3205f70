"""Checks of the fields of a package's JSON members (the manifest's module entries, the
library's signature file and kernel table) before anything reads them, and the net that
turns what a damaged member makes Python's readers raise into a `PackageError` naming the
member.

A package's JSON is data from outside: an edited or damaged file may hold a number where a
name belongs, a list where a record belongs. Every field the loader uses is checked for its
type here, so such a file is a `PackageError` saying which member and field is wrong, never
an `AttributeError` or a `TypeError` deep in the loader."""

from __future__ import annotations

import json
import lzma
import struct
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from tensorforge.errors import PackageError

__all__ = ["MALFORMED", "check_graph_entry_fields", "check_requires", "check_sidecar_fields",
           "check_target_fields", "malformed_member", "REEXPORT"]

#: what to do about a damaged or edited package
REEXPORT = ("the package is corrupt or was edited; export it again from the compiled model "
            "(CompiledModel.export) or copy the original file")

#: What Python's zip, decompression, JSON and struct readers (and code reading a record of
#: the wrong shape) raise on damaged input.
MALFORMED: tuple[type[BaseException], ...] = (
    zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, lzma.LZMAError, struct.error,
    EOFError, ValueError, KeyError, TypeError, IndexError, AttributeError, OverflowError,
    NotImplementedError, RuntimeError, OSError)


@contextmanager
def malformed_member(where: str, member: str) -> Iterator[None]:
    """Turn the errors of reading a damaged `member` of package `where` into a
    `PackageError` naming it (a `TensorforgeError` passes unchanged)."""
    from tensorforge.errors import TensorforgeError

    try:
        yield
    except TensorforgeError:
        raise
    except RecursionError:
        raise PackageError(f"cannot load {where}: {member} is nested too deeply to read; "
                           f"{REEXPORT}") from None
    except MALFORMED as e:
        detail = str(e).strip() or "no detail"
        raise PackageError(f"cannot load {where}: {member} is damaged or malformed "
                           f"({type(e).__name__}: {detail[:200]}); {REEXPORT}") from None


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "null"}.get(type(value),
                                                                         type(value).__name__)


def _bad(where: str, member: str, field: str, value: Any, want: str) -> PackageError:
    return PackageError(f"cannot load {where}: {member}'s {field} is {_shown(value)} "
                        f"({_kind(value)}), not {want}; {REEXPORT}")


def _string(obj: Mapping[str, Any], key: str, where: str, member: str, field: str,
            optional: bool = True) -> None:
    value = obj.get(key)
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise _bad(where, member, f"{field}{key!r}", value, "a string")


def check_target_fields(target: Any, where: str, member: str) -> dict[str, Any]:
    """A module's record of its code-generation options: an object whose `mtriple`,
    `mcpu`, `mattr` are strings (or absent)."""
    if target is None:
        return {}
    if not isinstance(target, dict):
        raise _bad(where, member, "'target'", target, "an object")
    for key in ("mtriple", "mcpu", "mattr"):
        _string(target, key, where, member, "target ")
    return target


def check_requires(requires: Any, where: str, member: str) -> dict[str, Any]:
    """A module entry's `requires`: `arch`, `os`, `target` strings, `features` a list of
    strings."""
    if not isinstance(requires, dict):
        raise PackageError(f"cannot load {where}: a module in {member} does not say what "
                           f"machine it was built for ('requires' is {_shown(requires)}); "
                           f"{REEXPORT}")
    for key in ("arch", "os", "target", "cpu_unknown"):
        _string(requires, key, where, member, "requires ")
    features = requires.get("features", [])
    if not isinstance(features, list) or not all(isinstance(f, str) for f in features):
        raise _bad(where, member, "requires 'features'", features, "a list of strings")
    return requires


def check_sidecar_fields(meta: Mapping[str, Any], where: str, member: str) -> None:
    """A signature file's fields: `functions` a list of objects, each with a string `name`
    (and `symbol`), lists `params` and `asserts`; `entry_name` a string; `target` as
    `check_target_fields`. (The format and version are `module.check_sidecar`'s.)"""
    _string(meta, "entry_name", where, member, "")
    check_target_fields(meta.get("target"), where, member)
    for k, f in enumerate(meta.get("functions") or []):
        field = f"function {k}"
        if not isinstance(f, dict):
            raise _bad(where, member, field, f, "an object")
        _string(f, "name", where, member, f"{field} ", optional=False)
        _string(f, "symbol", where, member, f"{field} ")
        for key in ("params", "asserts"):
            if key in f and not isinstance(f[key], list):
                raise _bad(where, member, f"{field} {key!r}", f[key], "a list")


def check_graph_entry_fields(entry: Any, where: str, member: str) -> dict[str, Any] | None:
    """A library's record of its ahead-of-time graph entry (see `runtime.aot_plan`): absent,
    or an object with strings `symbol`, `digest`, `signature` and an integer
    `workspace_bytes`."""
    if entry is None:
        return None
    if not isinstance(entry, dict):
        raise _bad(where, member, "'graph_entry'", entry, "an object")
    for key in ("symbol", "digest", "signature"):
        _string(entry, key, where, member, "graph_entry ", optional=False)
    n = entry.get("workspace_bytes")
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise _bad(where, member, "graph_entry 'workspace_bytes'", n, "a byte count")
    return entry
