"""The `.tfpkg` artifact: one zip file that runs without the compiler.

Members (format version 2):

    manifest.json   format, version, the sha256 and size of every other member, the modules
                    (each with a loader kind, its files and what it requires of the machine),
                    where the graph and the parameters are
    graph.json      the executor's description: inputs, outputs, values, storages, kernels
    params.json     the parameter index, params.bin the arrays (see `params_store`: each
                    constant in its smallest faithful form, transforms redone at load)
    lib.so          the CPU kernels (a shared library carrying its own kernel table)
    lib.so.json     their signatures (checked against that table)
    <dev>.src       a device module's source (e.g. OpenCL C), when the model runs on a device
    <dev>.json      its launch plans (kernels, grid, block, arguments, workspaces)

The manifest's `modules` is a list so that a package holds several (the CPU library of the
host's kernels and a device's code); each entry names a `loader` (a kind registered with
`register_module_loader`, never an importable path: a package cannot make `load` import
anything) and its member files. A `device-library` entry names its device kind ("opencl"),
which `DEVICE_RUNTIMES` maps to the runtime that drives it; the device is opened at load.

A package contains native code: loading one runs the library's code, so it must be trusted
like any shared library. `load` checks what it can before that code is reached: every member's
sha256 against the manifest (what is hashed is what is used: members are read once into memory,
hashed, and the library file is written from those bytes into a private directory), the whole
file against `sha256=` when given, the format versions (too new and too old), the architecture,
OS and CPU features the code was built for against this machine, the library's ELF machine,
and the signatures against the kernel table the library carries (read from the file); after
opening it, the table in memory again, and every kernel binding of the description (argument
counts, shapes, dtypes) before the first run. Temporary files are gone when `load` returns,
whether it succeeded or not.
"""

from __future__ import annotations

import atexit
import hashlib
import io
import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from typing import Any

from tensorforge._version import __version__
from tensorforge.errors import PackageError, TensorforgeError

from .cpu_features import check_host, required_features, triple_arch, triple_os
from .device import DeviceModule
from .elf import elf_machine
from .files import atomic_output
from .module import Module, ModuleSet, open_library
from .package_fields import REEXPORT, check_requires, malformed_member
from .params_store import pack_params, unpack_params
from .validate import check_description

__all__ = ["PACKAGE_FORMAT", "PACKAGE_VERSION", "export_package", "load", "read_package",
           "register_module_loader"]

PACKAGE_FORMAT = "tensorforge.package"
#: package versions this tensorforge reads: 2 added hashes, modules, requirements, the
#: library's kernel table and derived parameters; 1 had none of them
PACKAGE_VERSION = 2
PACKAGE_MIN_VERSION = 2
_MANIFEST = "manifest.json"
_MAX_MANIFEST = 1 << 20
_MAX_MEMBERS = 256

ModuleLoader = Callable[[Mapping[str, Any], Mapping[str, bytes], str, str], Module]
_LOADERS: dict[str, ModuleLoader] = {}


#: module kinds a target plugin loads, imported on first use: a trusted table (a package
#: names the kind, never an import path), like `device.DEVICE_RUNTIMES`
PLUGIN_MODULE_LOADERS: dict[str, str] = {
    "vdla-library": "tensorforge_vdla.runtime:load_package_module"}


def _plugin_loader(kind: str) -> ModuleLoader | None:
    ref = PLUGIN_MODULE_LOADERS.get(kind)
    if ref is None:
        return None
    import importlib

    mod, _, attr = ref.partition(":")
    try:
        return getattr(importlib.import_module(mod), attr)
    except (ImportError, AttributeError):
        return None


def register_module_loader(kind: str, loader: ModuleLoader) -> None:
    """Make `load` able to open modules of `kind`: `loader(entry, members, tmpdir, where)`
    gets the manifest's module entry, the package's verified member bytes by name, a private
    temporary directory (removed when `load` returns) and a name for messages, and returns a
    `Module`. It must check the entry's `requires` against this machine before running any of
    the module's code."""
    _LOADERS[kind] = loader


# -- export ---------------------------------------------------------------------------------
def requirements(target: Mapping[str, Any], target_string: str = "") -> dict[str, Any]:
    """What code built with `target` (`Module.target_info()`) needs of a machine."""
    triple = target.get("mtriple") or ""
    arch = triple_arch(triple)
    features, known = required_features(target.get("mcpu") or "", target.get("mattr") or "",
                                        arch)
    out: dict[str, Any] = {"arch": arch, "os": triple_os(triple), "features": features,
                           "target": target_string}
    if not known:
        out["cpu_unknown"] = target.get("mcpu")
    return out


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def export_package(model: Any, path: Any) -> str:
    """Write `model` (a CompiledModel) as one `.tfpkg` file, atomically: the file appears
    complete or not at all. Returns the path."""
    path = os.fspath(path)
    module = model.module
    if module is None and model.desc["kernels"]:
        raise TensorforgeError("this model has no kernels to export")
    members: dict[str, bytes] = {}
    modules = []
    parts = module.modules if isinstance(module, ModuleSet) else \
        ({} if module is None else {"cpu": module})
    for name, part in parts.items():
        if isinstance(part, DeviceModule):
            modules.append(_export_device_module(name, part, members))
            continue
        if hasattr(part, "package_entry"):  # a target's own module kind (an accelerator):
            modules.append(part.package_entry(name, members))  # adds its members, its entry
            continue
        lib = "lib.so" if "lib.so" not in members else f"{name}.so"
        with tempfile.TemporaryDirectory(prefix="tfpkg-export-") as d:
            lib_path = os.path.join(d, "lib.so")
            plan = model.executor.aot_plan if len(parts) == 1 else None
            if plan is not None:  # the library also holds the ahead-of-time entry
                part.export_library(lib_path, graph_entry=plan)
            else:
                part.export_library(lib_path)
            with open(lib_path, "rb") as f:
                members[lib] = f.read()
            with open(lib_path + ".json", "rb") as f:
                members[lib + ".json"] = f.read()
        modules.append({"name": "cpu" if name == "cpu" else name, "loader": "cpu-library",
                        "files": {"library": lib, "signatures": lib + ".json"},
                        "requires": requirements(part.target_info(),
                                                 str(model.desc.get("target", "")))})
    index, blob, stats = pack_params(dict(model.params), getattr(model, "derived", None))
    members["graph.json"] = json.dumps(model.desc, indent=1).encode()
    members["params.json"] = index
    members["params.bin"] = blob
    manifest = {
        "format": PACKAGE_FORMAT, "version": PACKAGE_VERSION,
        "created_by": f"tensorforge {__version__}",
        "members": {n: {"sha256": _sha256(b), "size": len(b)} for n, b in members.items()},
        "modules": modules,
        "graph": "graph.json",
        "params": {"index": "params.json", "data": "params.bin", **stats},
    }
    with atomic_output(path) as tmp:
        try:
            with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED) as z:
                z.writestr(_MANIFEST, json.dumps(manifest, indent=1))
                for name, data in members.items():
                    z.writestr(name, data)
        except OSError as e:
            raise TensorforgeError(f"cannot write {path!r}: {e.strerror or e}") from None
    return path


# -- reading and verifying ------------------------------------------------------------------
def _read_file(path: str, sha256: str | None) -> bytes:
    if not os.path.exists(path):
        raise TensorforgeError(f"cannot load {path!r}: no such file")
    if os.path.isdir(path):
        raise TensorforgeError(f"cannot load {path!r}: it is a directory, not a .tfpkg file")
    with open(path, "rb") as f:
        data = f.read()
    if sha256 is not None:
        want = str(sha256).strip().lower()
        if len(want) != 64 or any(c not in "0123456789abcdef" for c in want):
            raise TensorforgeError(f"sha256={sha256!r}: give the 64 hex digits of the package's "
                                   "SHA-256 (e.g. from `sha256sum PACKAGE`)")
        got = _sha256(data)
        if got != want:
            raise PackageError(f"cannot load {path!r}: its SHA-256 is {got}, not the pinned "
                               f"{want}; the file is not the package you pinned")
    return data


def _check_version(manifest: Mapping[str, Any], where: str) -> None:
    if manifest.get("format") != PACKAGE_FORMAT:
        raise PackageError(f"cannot load {where}: not a tensorforge package")
    version = manifest.get("version")
    if not isinstance(version, int):
        raise PackageError(f"cannot load {where}: its manifest has no format version")
    if version > PACKAGE_VERSION:
        raise PackageError(f"{where} was written by a newer tensorforge (package format "
                           f"{version}; this one reads {PACKAGE_MIN_VERSION}..{PACKAGE_VERSION}"
                           "); upgrade tensorforge to load it")
    if version < PACKAGE_MIN_VERSION:
        raise PackageError(f"{where} was written by an older tensorforge (package format "
                           f"{version}; this one reads {PACKAGE_MIN_VERSION}..{PACKAGE_VERSION}"
                           ", which need member hashes and a library that describes its kernels)"
                           "; compile the model again and export it with this tensorforge")


def read_package(data: bytes, where: str) -> tuple[dict[str, Any], dict[str, bytes]]:
    """(manifest, verified members by name) of the package bytes `data`: the member list must
    be exactly the manifest's, every member of the size and sha256 it gives. Whatever a
    damaged zip makes Python's readers raise is a `PackageError` naming the member."""
    if not zipfile.is_zipfile(io.BytesIO(data)):
        raise PackageError(f"cannot load {where}: not a tensorforge package (.tfpkg, a zip "
                           "written by CompiledModel.export)")
    with malformed_member(where, "the zip's directory"):
        z = zipfile.ZipFile(io.BytesIO(data))
        infos = z.infolist()
    names = [i.filename for i in infos]
    if len(names) != len(set(names)):
        raise PackageError(f"cannot load {where}: a member name appears twice in the zip")
    if _MANIFEST not in names:
        raise PackageError(f"cannot load {where}: not a tensorforge package (no manifest)")
    minfo = z.getinfo(_MANIFEST)
    if minfo.file_size > _MAX_MANIFEST:
        raise PackageError(f"cannot load {where}: its manifest is {minfo.file_size} bytes")
    with malformed_member(where, _MANIFEST):
        raw = z.read(_MANIFEST)
    manifest = _json(raw, where, _MANIFEST)
    if not isinstance(manifest, dict):
        raise PackageError(f"cannot load {where}: its manifest is not a JSON object")
    _check_version(manifest, where)
    listed = manifest.get("members")
    if not isinstance(listed, dict) or len(listed) > _MAX_MEMBERS:
        raise PackageError(f"cannot load {where}: its manifest lists no members")
    present = set(names) - {_MANIFEST}
    if present != set(listed):
        extra, missing = sorted(present - set(listed)), sorted(set(listed) - present)
        raise PackageError(
            f"cannot load {where}: its members do not match the manifest (not listed: "
            f"{extra or 'none'}; missing: {missing or 'none'}); a corrupt or edited package")
    members: dict[str, bytes] = {}
    for name, rec in listed.items():
        if not isinstance(rec, dict) or not isinstance(rec.get("size"), int) or \
                not isinstance(rec.get("sha256"), str):
            raise PackageError(f"cannot load {where}: the manifest entry of {name!r} is "
                               "malformed")
        if z.getinfo(name).file_size != rec["size"]:
            raise PackageError(f"cannot load {where}: member {name!r} is "
                               f"{z.getinfo(name).file_size} bytes, the manifest says "
                               f"{rec['size']}; a corrupt or edited package")
        with malformed_member(where, f"member {name!r}"):
            blob = z.read(name)
        if _sha256(blob) != rec["sha256"]:
            raise PackageError(f"cannot load {where}: member {name!r} does not match its "
                               "SHA-256 in the manifest; the package is corrupt or was "
                               "edited (nothing of it was run)")
        members[name] = blob
    return manifest, members


def _member(manifest: Mapping[str, Any], members: Mapping[str, bytes], name: Any,
            where: str, what: str) -> bytes:
    if not isinstance(name, str) or name not in members:
        raise PackageError(f"cannot load {where}: the manifest names {what} {name!r}, which "
                           "the package does not hold")
    return members[name]


def _json(data: bytes, where: str, what: str) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as e:  # JSONDecodeError, UnicodeDecodeError
        raise PackageError(f"cannot load {where}: {what} is not valid JSON ({e}); "
                           f"{REEXPORT}") from None


# -- the CPU library loader -----------------------------------------------------------------
def _load_cpu_library(entry: Mapping[str, Any], members: Mapping[str, bytes], tmp: str,
                      where: str) -> Module:
    from .cpu_features import host_arch

    files = entry.get("files") if isinstance(entry.get("files"), dict) else {}
    lib_name, sig_name = files.get("library"), files.get("signatures")
    lib = _member({}, members, lib_name, where, "library")
    meta = _json(_member({}, members, sig_name, where, "signature file"), where, sig_name)
    requires = check_requires(entry.get("requires"), where, _MANIFEST)
    check_host(requires, f"package {where}")
    arch = elf_machine(lib)
    if arch is not None and arch != host_arch():
        raise PackageError(f"cannot load {where}: its library is {arch} code (the manifest says "
                           f"{requires.get('arch')}), this machine is {host_arch()}; compile "
                           "the model for this machine (--target llvm)")
    # a name of our own in the private directory (the entry's name is data: "../x" or an
    # absolute path must not choose where the library is written)
    fd, path = tempfile.mkstemp(suffix=".so", prefix="module-", dir=tmp)
    with os.fdopen(fd, "wb") as f:
        f.write(lib)
    try:
        with malformed_member(where, f"{sig_name} (the library's signatures)"):
            module = open_library(path, meta, data=lib, where=f"{where}:{lib_name}")
    finally:
        os.remove(path)  # mapped now; nothing of the package stays on disk
    # the library's own record of its target must not need more than the manifest declared
    own = requirements(module.target_info())
    extra = sorted(set(own["features"]) - set(requires.get("features", ())))
    if extra or own["arch"] != requires.get("arch"):
        raise PackageError(f"cannot load {where}: its library was built for {own['arch']} with "
                           f"features {', '.join(extra) or '(same)'} that the manifest does not "
                           "declare; a corrupt or edited package (nothing of it was run)")
    return module


register_module_loader("cpu-library", _load_cpu_library)


# -- device modules (OpenCL source and launch plans) ----------------------------------------
def _export_device_module(name: str, module: DeviceModule, members: dict[str, bytes]
                          ) -> dict[str, Any]:
    kind = module.desc.get("target_kind", name)
    with tempfile.TemporaryDirectory(prefix="tfpkg-export-") as d:
        path = os.path.join(d, "kernels")
        module.export_library(path)
        with open(path, "rb") as f:
            members[f"{name}.src"] = f.read()
        with open(path + ".json", "rb") as f:
            members[f"{name}.json"] = f.read()
    return {"name": name, "loader": "device-library", "device": kind,
            "files": {"source": f"{name}.src", "plan": f"{name}.json"},
            "requires": {"device": kind, "target": module.desc.get("target", "")}}


def _load_device_library(entry: Mapping[str, Any], members: Mapping[str, bytes], tmp: str,
                         where: str) -> Module:
    """A device module: its source and launch plans; the runtime that runs them comes from
    the trusted table of device kinds (`DEVICE_RUNTIMES`), not from the package. The device
    is opened now, so a machine without it fails at load, naming what is missing."""
    from .device import DEVICE_LIBRARY_FORMAT, DEVICE_RUNTIMES

    files = entry.get("files") if isinstance(entry.get("files"), dict) else {}
    source = _member({}, members, files.get("source"), where, "device source")
    plan = _json(_member({}, members, files.get("plan"), where, "launch plan"), where,
                 files.get("plan"))
    kind = entry.get("device")
    runtime = DEVICE_RUNTIMES.get(kind) if isinstance(kind, str) else None
    if runtime is None:
        raise PackageError(f"cannot load {where}: its module {entry.get('name')!r} runs on "
                           f"device kind {kind!r}, which no installed runtime drives (known: "
                           f"{', '.join(sorted(DEVICE_RUNTIMES))})")
    if not isinstance(plan, dict) or plan.get("format") != DEVICE_LIBRARY_FORMAT:
        raise PackageError(f"cannot load {where}: {files.get('plan')!r} is not a device "
                           "library's launch plan")
    desc = {k: v for k, v in plan.items() if k not in ("format", "version", "loader")}
    desc["runtime"] = runtime
    try:
        module = DeviceModule(desc, source.decode("utf-8"))
        module.device  # noqa: B018 - opens the device now: a missing one fails at load
    except (KeyError, TypeError, ValueError, UnicodeDecodeError) as e:
        raise PackageError(f"cannot load {where}: the launch plan of module "
                           f"{entry.get('name')!r} is malformed ({e})") from None
    except TensorforgeError as e:
        raise PackageError(f"cannot load {where}: its kernels run on {kind}: {e}") from None
    return module


register_module_loader("device-library", _load_device_library)


def load(path: Any, sha256: str | None = None, max_concurrency: int | None = None) -> Any:
    """Load a `.tfpkg` written by `CompiledModel.export`; returns a CompiledModel.

    A package holds native code: load only packages you trust as you would a shared library.
    `sha256` (hex) pins the whole file: any other file is refused before it is read further.
    Everything `load` checks is listed in `tensorforge.runtime.package`'s docstring; failures
    are `PackageError`s naming what is wrong. `max_concurrency` bounds concurrent `run` calls
    (see `CompiledModel`)."""
    from .graph_executor import CompiledModel

    path = os.fspath(path)
    where = repr(path)
    data = _read_file(path, sha256)
    manifest, members = read_package(data, where)
    del data
    graph = _json(_member(manifest, members, manifest.get("graph"), where, "graph"), where,
                  "graph.json")
    pmeta = manifest.get("params") if isinstance(manifest.get("params"), dict) else {}
    with malformed_member(where, "the parameters (params.json, params.bin)"):
        params = unpack_params(
            _member(manifest, members, pmeta.get("index"), where, "params index"),
            _member(manifest, members, pmeta.get("data"), where, "params data"))
    with malformed_member(where, "graph.json"):
        check_description(graph, params)  # before any library is opened
    entries = manifest.get("modules")
    if not isinstance(entries, list):
        raise PackageError(f"cannot load {where}: its manifest lists no modules")
    tmp = tempfile.mkdtemp(prefix="tfpkg-")
    cleanup = _remover(tmp)
    atexit.register(cleanup)
    loaded: list[Module] = []
    try:
        for entry in entries:
            kind = entry.get("loader") if isinstance(entry, dict) else None
            loader = (_LOADERS.get(kind) or _plugin_loader(kind)) if isinstance(kind, str) \
                else None
            if loader is None:
                raise PackageError(
                    f"cannot load {where}: it holds a module of kind {kind!r}, which no installed "
                    f"loader opens (known: {', '.join(sorted(_LOADERS))}); install the plugin "
                    "of the target it was compiled for")
            loaded.append(loader(entry, members, tmp, where))
        members.clear()
        names = [e.get("name", str(i)) for i, e in enumerate(entries)]
        module = None if not loaded else loaded[0] if len(loaded) == 1 else \
            ModuleSet(dict(zip(names, loaded)))
        if "symbolic" in graph:  # compiled once for sizes within bounds
            from .symbolic import SymbolicModel

            return SymbolicModel(module, graph, params, max_concurrency=max_concurrency,
                                 on_close=[m.close for m in loaded])
        return CompiledModel(module, graph, params, max_concurrency=max_concurrency,
                             on_close=[m.close for m in loaded])
    except Exception:
        for m in loaded:
            m.close()
        raise
    finally:
        cleanup()
        atexit.unregister(cleanup)


def _remover(path: str) -> Callable[[], None]:
    def remove() -> None:
        shutil.rmtree(path, ignore_errors=True)

    return remove
