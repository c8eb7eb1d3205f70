"""Runtime modules: a named set of compiled kernels, and loading an exported CPU library.

`Module` is target-independent: a backend subclasses it (the LLVM JIT module, a CUDA module)
and fills in the functions. `load_module` opens a shared library written by
`Module.export_library` with ctypes alone, so exported models run without the compiler (and
without llvmlite) installed. The library's kernels are described twice:

* by a JSON sidecar `<path>.json`:

      {"format": "tensorforge.cpu-library", "version": 2, "entry_name": "add",
       "target": {...}, "functions": [{"name": "add", "symbol": "add", "params": [...],
                                        "asserts": [...]}]}

  where `params` are `Param` records (see `cfunction.py`);
* by the library itself: two data symbols, `tensorforge_kernel_table` (the bytes of a JSON
  object `{"format": "tensorforge.kernel-table", "version": 1, "target": {...},
  "functions": [...]}`, the same function records) and `tensorforge_kernel_table_size`
  (an int64, its length). `kernel_table_c_source` writes them for a hand-made C library.

`load_module` trusts the library's own table: only functions it lists can be called, with the
signatures it gives, and a sidecar that disagrees with it is refused. So an edited sidecar (or
a package's edited `graph.json`) cannot point a kernel name at another exported function or
change a kernel's parameters. Opening a library runs its constructors: a library is native
code and must be trusted like any shared library (packages verify their hashes first).

A sidecar of another format that names a `"loader": "module:function"` is loaded by that
function (`loader(path, meta)`), e.g. a VDLA instruction stream by
`tensorforge_vdla.codegen:load_vdla_module` (`load_module` only; a package names registered
loader kinds, never an importable path).
"""

from __future__ import annotations

import ctypes
import json
import os
from collections.abc import Callable, Mapping
from typing import Any

from tensorforge.errors import PackageError, TensorforgeError

from .aot_plan import ENTRY_SIGNATURE
from .aot_quick import QUICK_SYMBOL
from .cfunction import CFunction, params_from_json
from .package_fields import check_graph_entry_fields, check_sidecar_fields, check_target_fields

__all__ = ["KERNEL_TABLE_SYMBOL", "LIBRARY_FORMAT", "LibraryModule", "Module", "ModuleSet",
           "kernel_table_bytes", "kernel_table_c_source", "load_module", "open_library"]

LIBRARY_FORMAT = "tensorforge.cpu-library"
#: sidecar versions this tensorforge reads (2: the library carries its kernel table)
LIBRARY_VERSION = 2
LIBRARY_MIN_VERSION = 2
KERNEL_TABLE_FORMAT = "tensorforge.kernel-table"
KERNEL_TABLE_VERSION = 1
KERNEL_TABLE_SYMBOL = "tensorforge_kernel_table"
KERNEL_TABLE_SIZE_SYMBOL = "tensorforge_kernel_table_size"
_MAX_TABLE_BYTES = 64 << 20


class Module:
    """A set of compiled kernels, by name.

    :param functions: name -> callable kernel (a `CFunction` on CPU), in definition order.
    :param entry_name: the kernel `module(...)` calls; defaults to the first one.
    """

    type_key = "module"

    def __init__(self, functions: Mapping[str, Callable[..., Any]],
                 entry_name: str | None = None):
        self._functions = dict(functions)
        if entry_name is None and self._functions:
            entry_name = next(iter(self._functions))
        self.entry_name = entry_name

    @property
    def function_names(self) -> list[str]:
        return list(self._functions)

    def get_function(self, name: str) -> Callable[..., Any]:
        """The kernel called `name`; a `TensorforgeError` lists the known names otherwise."""
        try:
            return self._functions[name]
        except KeyError:
            known = ", ".join(self._functions) or "none"
            raise TensorforgeError(
                f"{self.type_key} module has no function {name!r} (it has: {known})"
            ) from None

    def __getitem__(self, name: str) -> Callable[..., Any]:
        return self.get_function(name)

    def __contains__(self, name: object) -> bool:
        return name in self._functions

    def __call__(self, *args: Any) -> Any:
        if self.entry_name is None:
            raise TensorforgeError(f"{self.type_key} module has no functions to call")
        return self.get_function(self.entry_name)(*args)

    def time_evaluator(self, name: str, number: int = 1, repeat: int = 3,
                       min_repeat_ms: float = 0.0) -> Callable[..., Any]:
        """`f(*args) -> TimeResult`: seconds per call of function `name` (wall clock here;
        device modules time with device events): `repeat` measurements of `number` calls,
        `number` raised until one measurement lasts `min_repeat_ms`."""
        import time

        from .device import TimeResult

        fn = self.get_function(name)

        def measure(args: tuple[Any, ...], n: int) -> float:
            t0 = time.perf_counter()
            for _ in range(n):
                fn(*args)
            return (time.perf_counter() - t0) / n

        def evaluate(*args: Any) -> TimeResult:
            fn(*args)
            n = max(1, number)
            if min_repeat_ms > 0:
                one = max(measure(args, 1), 1e-7)
                n = max(n, int(-(-min_repeat_ms / 1000.0 // one)))
            return TimeResult([measure(args, n) for _ in range(max(1, repeat))])

        return evaluate

    def export_library(self, path: str | os.PathLike[str]) -> None:
        """Write the kernels as a loadable library (see `load_module`)."""
        raise TensorforgeError(
            f"a {self.type_key} module cannot be exported as a library; build it for a target "
            "whose code generator supports export (e.g. 'llvm')"
        )

    def target_info(self) -> dict[str, Any]:
        """The code-generation options the kernels were built with (`mtriple`, `mcpu`,
        `mattr`, ...): what a package records to check a host against. {} if unknown."""
        return {}

    def close(self) -> None:
        """Release what the module holds beyond memory (files, device state); the default has
        nothing to release."""

    def get_source(self, fmt: str = "") -> str:
        """The generated code in format `fmt` (backend-specific: "ll", "asm", "cuda" ...)."""
        raise TensorforgeError(f"a {self.type_key} module has no source to show")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.type_key}: {', '.join(self._functions)}>"


class ModuleSet(Module):
    """The kernels of several modules, one per device (a model whose nodes run on a GPU and,
    where it cannot, on the host CPU), found by name."""

    type_key = "modules"

    def __init__(self, modules: Mapping[str, Module]):
        functions: dict[str, Callable[..., Any]] = {}
        for m in modules.values():
            for name in m.function_names:
                if name in functions:
                    raise TensorforgeError(f"two modules define kernel {name!r}")
                functions[name] = m.get_function(name)
        super().__init__(functions)
        self.modules = dict(modules)

    def module_of(self, name: str) -> str:
        """The device (module key) whose module defines kernel `name`."""
        return next(dev for dev, m in self.modules.items() if name in m)

    def close(self) -> None:
        for m in self.modules.values():
            m.close()

    def get_source(self, fmt: str = "") -> str:
        """Every module's source, each under a `// ---- <device>` line."""
        return "\n".join(f"// ---- {dev}\n{m.get_source(fmt)}"
                         for dev, m in self.modules.items())

    def export_library(self, path: str | os.PathLike[str]) -> None:
        raise TensorforgeError(
            "a model whose kernels run on several devices has one module per device; export "
            "it as a package (CompiledModel.export), which keeps each module with its loader")


class LibraryModule(Module):
    """Kernels of a shared library opened with ctypes (see `load_module`). `meta` is its
    sidecar (checked against the library's kernel table); `data` the library's bytes when the
    file itself is gone (a package's library is deleted once opened)."""

    type_key = "library"

    def __init__(self, path: str, lib: ctypes.CDLL, functions: Mapping[str, CFunction],
                 entry_name: str | None, meta: Mapping[str, Any] | None = None,
                 data: bytes | None = None):
        super().__init__(functions, entry_name)
        self.path = path
        self.meta = dict(meta or {})
        self._lib = lib
        self._data = data
        self.entry_address: int | None = None  # of the graph entry, when the library has one
        self.quick_address: int | None = None  # of the native quick path, likewise

    def graph_entry(self, plan: Any) -> int:
        """The address of the library's ahead-of-time entry (see `runtime.aot_plan`), which
        must have been built for `plan`: a description whose plan differs (an edited
        graph.json) is a `PackageError`, since the entry reads and writes where its own plan
        says. A library without an entry (exported before there were entries) raises a
        `TensorforgeError`: the model runs on the graph executor."""
        entry = self.meta.get("graph_entry")
        if entry is None or self.entry_address is None:
            raise TensorforgeError("its library has no graph entry (export it again with this "
                                   "tensorforge to get one)")
        if entry["digest"] != plan.digest:
            raise PackageError(f"library {self.path!r}: its graph entry was built for plan "
                               f"{entry['digest'][:16]}, but the model description's plan is "
                               f"{plan.digest[:16]}; the description (graph.json) does not "
                               "match the library (a corrupt or edited package)")
        if entry.get("signature") != ENTRY_SIGNATURE:
            raise TensorforgeError(f"its graph entry has the calling convention "
                                   f"{entry.get('signature')!r}, which this tensorforge does "
                                   "not call")
        return self.entry_address

    def aot_quick(self) -> int:
        """The address of the library's native quick path (`aot_quick.QUICK_SYMBOL`); a
        library exported before it existed raises `TensorforgeError` (`run` then checks its
        inputs in Python)."""
        if self.quick_address is None:
            raise TensorforgeError(f"its library has no {QUICK_SYMBOL} (export it again with "
                                   "this tensorforge to get one)")
        return self.quick_address

    def target_info(self) -> dict[str, Any]:
        """The code-generation options the library was built with (from its kernel table)."""
        return dict(self.meta.get("target") or {})

    def library_bytes(self) -> bytes:
        if self._data is not None:
            return self._data
        with open(self.path, "rb") as f:
            return f.read()

    def export_library(self, path: str | os.PathLike[str], graph_entry: Any = None) -> None:
        """Write the library and its sidecar; each replaces any file there (a new inode:
        rewriting a loaded library in place would pull code from under a running process).
        The library keeps the graph entry it has (`graph_entry` is not rebuilt here)."""
        from .files import atomic_output

        path = os.fspath(path)
        data = self.library_bytes()
        with atomic_output(path) as tmp, open(tmp, "wb") as f:
            f.write(data)
        with atomic_output(sidecar_path(path)) as tmp, open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.meta, f, indent=1)


def sidecar_path(path: str | os.PathLike[str]) -> str:
    return os.fspath(path) + ".json"


def kernel_table_bytes(functions: list[Mapping[str, Any]],
                       target: Mapping[str, Any] | None = None,
                       graph_entry: Mapping[str, Any] | None = None) -> bytes:
    """The JSON a library embeds as `tensorforge_kernel_table` (see the module docstring);
    `graph_entry`: the record of the library's ahead-of-time entry, if it has one."""
    table: dict[str, Any] = {"format": KERNEL_TABLE_FORMAT, "version": KERNEL_TABLE_VERSION,
                             "target": dict(target or {}), "functions": list(functions)}
    if graph_entry is not None:
        table["graph_entry"] = dict(graph_entry)
    return json.dumps(table, sort_keys=True, separators=(",", ":")).encode()


def kernel_table_c_source(table: bytes) -> str:
    """C definitions of the two table symbols, for a library written by hand or by a C
    code generator."""
    body = "".join(f"\\x{b:02x}" for b in table)
    return (f'#include <stdint.h>\nconst char {KERNEL_TABLE_SYMBOL}[] = "{body}";\n'
            f"const int64_t {KERNEL_TABLE_SIZE_SYMBOL} = {len(table)};\n")


def check_sidecar(meta: Any, where: str) -> dict[str, Any]:
    """The sidecar `meta` if it is one this tensorforge reads, else a `PackageError`."""
    if not isinstance(meta, dict) or meta.get("format") != LIBRARY_FORMAT:
        raise PackageError(f"{where} does not describe a tensorforge CPU library")
    version = meta.get("version")
    if not isinstance(version, int) or version > LIBRARY_VERSION:
        raise PackageError(f"{where} was written by a newer tensorforge (library format "
                           f"{version!r}, this one reads {LIBRARY_MIN_VERSION}..{LIBRARY_VERSION})"
                           "; upgrade tensorforge to load it")
    if version < LIBRARY_MIN_VERSION:
        raise PackageError(f"{where} was written by an older tensorforge (library format "
                           f"{version}, this one reads {LIBRARY_MIN_VERSION}..{LIBRARY_VERSION}):"
                           " its library carries no kernel table to check it against; compile "
                           "and export it again")
    if not isinstance(meta.get("functions"), list):
        raise PackageError(f"{where} lists no functions")
    return meta


_NO_TABLE = ("carries no kernel table ({sym}): it was not written by this tensorforge's "
             "export_library; compile and export it again")


def _parse_table(raw: bytes, where: str) -> dict[str, Any]:
    try:
        table = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise PackageError(f"library {where}: its kernel table is not valid JSON: {e}") from None
    if not isinstance(table, dict) or table.get("format") != KERNEL_TABLE_FORMAT or \
            table.get("version") != KERNEL_TABLE_VERSION or \
            not isinstance(table.get("functions"), list):
        raise PackageError(f"library {where}: its kernel table is of an unknown format "
                           f"({str(table)[:80]}...)")
    return table


def file_kernel_table(data: bytes, where: str) -> dict[str, Any] | None:
    """The kernel table of a library's file bytes, read without loading it (ELF only; None
    for other formats). A missing table is a `PackageError`: nothing of the library ran."""
    from .elf import elf_machine, elf_symbol_bytes

    if elf_machine(data) is None:
        return None
    raw = elf_symbol_bytes(data, KERNEL_TABLE_SYMBOL)
    size = elf_symbol_bytes(data, KERNEL_TABLE_SIZE_SYMBOL)
    if raw is None or size is None or len(size) != 8:
        raise PackageError(f"library {where} " + _NO_TABLE.format(sym=KERNEL_TABLE_SYMBOL)
                           + " (nothing of it was run)")
    n = int.from_bytes(size, "little" if data[5] == 1 else "big")
    if not 0 < n <= min(len(raw), _MAX_TABLE_BYTES):
        raise PackageError(f"library {where} has a kernel table of {n} bytes")
    return _parse_table(raw[:n], where)


def read_kernel_table(lib: ctypes.CDLL, where: str) -> dict[str, Any]:
    """The kernel table the opened library `lib` carries, parsed and checked."""
    try:
        size = ctypes.c_int64.in_dll(lib, KERNEL_TABLE_SIZE_SYMBOL).value
        if not 0 < size <= _MAX_TABLE_BYTES:
            raise PackageError(f"library {where} has a kernel table of {size} bytes")
        raw = bytes((ctypes.c_char * size).in_dll(lib, KERNEL_TABLE_SYMBOL))
    except ValueError:  # ctypes: symbol not found
        raise PackageError(f"library {where} " + _NO_TABLE.format(sym=KERNEL_TABLE_SYMBOL)
                           ) from None
    return _parse_table(raw, where)


def _same_function(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """None if the records agree, else what differs."""
    for key in ("name", "symbol", "params", "asserts"):
        va, vb = a.get(key, [] if key != "symbol" else a.get("name")), \
            b.get(key, [] if key != "symbol" else b.get("name"))
        if json.dumps(va, sort_keys=True) != json.dumps(vb, sort_keys=True):
            return f"{key}: {json.dumps(va)[:160]} in the signature file, {json.dumps(vb)[:160]} " \
                   "in the library"
    return None


def open_library(path: str, meta: Mapping[str, Any], data: bytes | None = None,
                 where: str | None = None) -> LibraryModule:
    """Open the library at `path` (its sidecar `meta` already parsed; `data` its bytes, when
    the caller holds them) and build its kernels from the library's own kernel table, after
    checking that `meta` agrees with it. For an ELF library the table is read from the file
    and checked before the library is opened (its constructors run at opening)."""
    where = where or repr(path)
    meta = check_sidecar(meta, f"the signature file of {where}")
    check_sidecar_fields(meta, where, "its signature file")
    if data is None:
        with open(path, "rb") as f:
            data = f.read()
    before = file_kernel_table(data, where)
    if before is not None:
        _match(meta, before, where)
        _own_target(meta, before, where)
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise PackageError(f"cannot load the library {where}: {e}") from e
    table = read_kernel_table(lib, where)
    if before is not None and table != before:
        raise PackageError(f"library {where}: its kernel table in memory is not the one in its "
                           "file")
    own = _match(meta, table, where)
    functions: dict[str, CFunction] = {}
    for name, fmeta in own.items():
        symbol = fmeta.get("symbol", name)
        try:
            cfn = getattr(lib, symbol)
        except AttributeError:
            raise PackageError(f"library {where} has no symbol {symbol!r}") from None
        address = ctypes.cast(cfn, ctypes.c_void_p).value
        try:
            params = params_from_json(fmeta["params"])
            functions[name] = CFunction(name, address, params, fmeta.get("asserts", ()),
                                        owner=lib)
        except (KeyError, TypeError, ValueError) as e:
            raise PackageError(f"kernel {name!r} of {where}: malformed signature ({e})") from None
    full = {**meta, "target": _own_target(meta, table, where),
            "graph_entry": _own_graph_entry(meta, table, where)}
    module = LibraryModule(path, lib, functions, meta.get("entry_name"), full, data)
    entry = full["graph_entry"]
    if entry is not None:
        try:
            module.entry_address = ctypes.cast(getattr(lib, entry["symbol"]),
                                               ctypes.c_void_p).value
        except AttributeError:
            raise PackageError(f"library {where} has no symbol {entry['symbol']!r} (its "
                               "graph entry)") from None
        quick = getattr(lib, QUICK_SYMBOL, None)  # absent from libraries exported before it
        if quick is not None:
            module.quick_address = ctypes.cast(quick, ctypes.c_void_p).value
    return module


def _own_graph_entry(meta: Mapping[str, Any], table: Mapping[str, Any], where: str
                     ) -> dict[str, Any] | None:
    """The library's record of its ahead-of-time entry (None: it has none), checked; a
    signature file that says otherwise was edited."""
    own = check_graph_entry_fields(table.get("graph_entry"), where, "its kernel table")
    if meta.get("graph_entry") != own:
        raise PackageError(f"library {where}: the signature file's graph entry "
                           f"{json.dumps(meta.get('graph_entry'))[:160]} is not the one in the "
                           f"library's kernel table ({json.dumps(own)[:160]}); a corrupt or "
                           "edited package")
    return own


def _own_target(meta: Mapping[str, Any], table: Mapping[str, Any], where: str
                ) -> dict[str, Any]:
    """The library's own record of its target (the one that counts), checked; a signature
    file that says otherwise was edited."""
    own = check_target_fields(table.get("target"), where, "its kernel table")
    if meta.get("target") is not None and meta["target"] != own:
        raise PackageError(f"library {where}: the signature file's target "
                           f"{json.dumps(meta['target'])[:160]} is not the one in the library's "
                           f"kernel table ({json.dumps(own)[:160]}); a corrupt or edited "
                           "package")
    return own


def _match(meta: Mapping[str, Any], table: Mapping[str, Any], where: str
           ) -> dict[str, Mapping[str, Any]]:
    """The table's functions by name, if the sidecar `meta` lists exactly them with the same
    records; else a `PackageError` naming the difference."""
    listed = {f.get("name"): f for f in meta["functions"] if isinstance(f, dict)}
    own = {f.get("name"): f for f in table["functions"] if isinstance(f, dict)}
    if set(listed) != set(own) or len(listed) != len(meta["functions"]):
        extra = sorted(map(str, set(listed) - set(own)))
        raise PackageError(
            f"the signature file of {where} lists functions the library's kernel table does "
            f"not ({', '.join(extra) or 'duplicates'}); only the library's own kernels can be "
            "called (a corrupt or edited package)")
    for name, fmeta in own.items():
        diff = _same_function(listed[name], fmeta)
        if diff is not None:
            raise PackageError(f"kernel {name!r} of {where}: the signature file disagrees with "
                               f"the library's kernel table ({diff}); a corrupt or edited package")
    return own


def load_module(path: str | os.PathLike[str]) -> Module:
    """Open a library written by `export_library`, with ctypes and its JSON sidecar only (a
    library of another format, e.g. OpenCL source, loads through the sidecar's `loader`)."""
    path = os.path.abspath(os.fspath(path))
    meta_path = sidecar_path(path)
    try:
        with open(meta_path, encoding="utf-8") as f:
            meta = json.load(f)
    except FileNotFoundError:
        raise TensorforgeError(
            f"cannot load {path!r}: its signature file {meta_path!r} is missing; copy it along "
            "with the library (export_library writes both)"
        ) from None
    except json.JSONDecodeError as e:
        raise TensorforgeError(f"cannot load {path!r}: {meta_path!r} is not valid JSON: {e}") from e
    loader = meta.get("loader") if isinstance(meta, dict) else None
    if loader and meta.get("format") != LIBRARY_FORMAT:  # a target's own format (e.g. VDLA)
        from tensorforge.plugins.descriptors import load_ref

        return load_ref(loader)(path, meta)  # type: ignore[no-any-return]
    return open_library(path, meta, where=repr(path))
