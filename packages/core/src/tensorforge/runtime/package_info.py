"""What a `.tfpkg` holds, without opening its library: `tforge inspect PACKAGE`.

`package_report(path)` verifies the members' hashes (it reads them anyway) and returns the
format version, the tensorforge that wrote it, each module with its target and the CPU
features it needs (and which of them this machine lacks), the kernels with their ops and
schedules, the executor `load` will use (the library's ahead-of-time entry or the graph
executor), the parameters by size (as stored and as the kernels read them, and how a derived
one is recomputed), the memory plan, and the size of every member. Nothing of the package's
code runs.
"""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Mapping
from typing import Any

import numpy as np

from tensorforge.errors import PackageError, TensorforgeError

from .cpu_features import host_arch, missing_features
from .package import read_package

__all__ = ["format_report", "is_package", "package_report"]


def is_package(path: Any) -> bool:
    """Whether `path` looks like a `.tfpkg` (its suffix, or a zip holding a manifest)."""
    import zipfile

    path = os.fspath(path)
    if path.endswith(".tfpkg"):
        return True
    try:
        with zipfile.ZipFile(path) as z:
            return "manifest.json" in z.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def _recipe_text(entry: Mapping[str, Any], arrays: Mapping[str, Any]) -> tuple[str, int]:
    """(how the parameter is stored, stored bytes)."""
    if "array" in entry:
        a = arrays.get(entry["array"], {})
        return "stored", _nbytes(a)
    inner, nbytes = _recipe_text(entry.get("source", {}), arrays)
    attrs = ", ".join(f"{k}={v}" for k, v in entry.get("attrs", {}).items())
    src = "" if inner == "stored" else f" of {inner}"
    return f"{entry.get('transform')}({attrs}){src} at load", nbytes


def _nbytes(a: Mapping[str, Any]) -> int:
    try:
        return int(np.prod(a.get("shape", []), dtype=np.int64)) * np.dtype(a["dtype"]).itemsize
    except (KeyError, TypeError):
        return 0


def package_report(path: Any) -> dict[str, Any]:
    """The contents of the package at `path` (see the module docstring)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise TensorforgeError(f"cannot inspect {path!r}: no such file")
    with open(path, "rb") as f:
        data = f.read()
    manifest, members = read_package(data, repr(path))
    try:
        graph = json.loads(members[manifest["graph"]])
        pmeta = manifest["params"]
        index = json.loads(members[pmeta["index"]])
    except (KeyError, TypeError, json.JSONDecodeError) as e:
        raise PackageError(f"cannot inspect {path!r}: {e}") from None
    values = {v.get("param"): v for v in graph.get("values", []) if v.get("kind") == "const"}
    params = []
    for key, entry in index.get("params", {}).items():
        v = values.get(key, {})
        how, stored = _recipe_text(entry, index.get("arrays", {}))
        params.append({"key": key, "name": v.get("name", key), "dtype": v.get("dtype"),
                       "shape": v.get("shape"), "bytes": _nbytes(v), "stored_bytes": stored,
                       "stored_as": how})
    params.sort(key=lambda p: -p["bytes"])
    modules = []
    for m in manifest.get("modules", []):
        req = m.get("requires", {})
        if m.get("loader") == "device-library":
            why = _device_here(m)
            modules.append({"name": m.get("name"), "loader": m.get("loader"),
                            "files": m.get("files", {}), "target": req.get("target"),
                            "device": m.get("device"), "runs_here": not why,
                            "why_not": why})
            continue
        missing = (missing_features(req.get("features", []), req.get("arch", ""))
                   if req.get("arch") == host_arch() else None)
        try:
            entry = json.loads(members[m["files"]["signatures"]]).get("graph_entry")
        except (KeyError, TypeError, AttributeError, json.JSONDecodeError):
            entry = None
        modules.append({"name": m.get("name"), "loader": m.get("loader"),
                        "files": m.get("files", {}), "target": req.get("target"),
                        "arch": req.get("arch"), "os": req.get("os"),
                        "features": req.get("features", []),
                        "missing_here": missing, "graph_entry": entry,
                        "runs_here": req.get("arch") == host_arch() and not missing})
    return {
        "package": path, "size": len(data), "format": manifest.get("format"),
        "version": manifest.get("version"), "created_by": manifest.get("created_by"),
        "name": graph.get("name"), "target": graph.get("target"),
        "hashes": "verified",
        "members": {n: rec.get("size") for n, rec in manifest.get("members", {}).items()},
        "modules": modules,
        "inputs": graph.get("inputs", []), "outputs": graph.get("outputs", []),
        "kernels": [{"name": k.get("name"), "group": k.get("group"), "ops": k.get("ops", []),
                     "schedule": k.get("schedule", ""),
                     **({"device": k["device"]} if "device" in k else {})}
                    for k in graph.get("kernels", [])],
        **({"placement": graph["placement"]} if "placement" in graph else {}),
        "executor": _executor(modules),
        "params": params,
        "params_bytes": sum(p["bytes"] for p in params),
        "params_stored_bytes": int(pmeta.get("stored_bytes", 0)),
        "memory": graph.get("memory", {}),
    }


def _executor(modules: list[dict[str, Any]]) -> str:
    """Which executor `load` will run the package on, and why (see `runtime.aot_plan`): the
    library's ahead-of-time entry (checked against graph.json at load), or the graph
    executor."""
    if len(modules) != 1:
        return "graph executor (one module per device)"
    entry = modules[0].get("graph_entry")
    if not isinstance(entry, dict):
        return "graph executor (the library has no ahead-of-time entry)"
    return (f"ahead-of-time entry {entry.get('symbol')} (plan {str(entry.get('digest'))[:16]}, "
            f"workspace {_mb(int(entry.get('workspace_bytes') or 0))} per concurrent call)")


def _device_here(entry: Mapping[str, Any]) -> str:
    """Whether this machine can run a device module: "" if so, else why not (its runtime or
    device is missing)."""
    from .device import DEVICE_RUNTIMES, get_device

    runtime = DEVICE_RUNTIMES.get(str(entry.get("device")))
    if runtime is None:
        return f"no runtime for device kind {entry.get('device')!r}"
    try:
        get_device(runtime)
    except Exception as e:  # noqa: BLE001 - any failure to open the device is the answer
        return str(e).split(";")[0]
    return ""


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n} bytes"


def format_report(r: Mapping[str, Any], max_params: int = 12) -> list[str]:
    """The report as text lines for `tforge inspect`."""
    lines = [f"{r['package']}: {r['name']} ({_mb(r['size'])}), tensorforge package format "
             f"{r['version']}, written by {r['created_by']}; member hashes {r['hashes']}",
             f"  target {r['target']}"]
    for m in r["modules"]:
        if m["loader"] == "device-library":
            lines.append(f"  module {m['name']} ({m['loader']}): {m['device']} kernels, "
                         + ("runs on this machine" if m["runs_here"] else
                            f"NOT on this machine ({m['why_not']})"))
            continue
        here = ("runs on this machine" if m["runs_here"] else
                f"NOT on this machine (lacks {', '.join(m['missing_here'])})"
                if m["missing_here"] else f"NOT on this machine ({host_arch()})")
        lines.append(f"  module {m['name']} ({m['loader']}): {m['arch']}-{m['os']}, {here}")
        lines.extend(textwrap.wrap(f"CPU features needed: {', '.join(m['features']) or 'none'}",
                                   width=100, initial_indent="    ", subsequent_indent="      ",
                                   break_on_hyphens=False))
    lines.append(f"  executor: {r['executor']}")
    for key in ("inputs", "outputs"):
        for v in r[key]:
            lines.append(f"  {key[:-1]:<6} {v['name']}: {v['dtype']}{v['shape']}")
    ks = r["kernels"]
    lines.append(f"\nkernels ({len(ks)} call{'s' if len(ks) != 1 else ''}, "
                 f"{len({k['name'] for k in ks})} distinct):")
    for k in ks:
        where = f" [{k['device']}]" if "device" in k else ""
        lines.append(f"  {k['group']:<40} {'+'.join(k['ops']):<36} {k['schedule']}{where}")
    ps = r["params"]
    lines.append(f"\nparameters ({len(ps)}): {_mb(r['params_bytes'])} as the kernels read them, "
                 f"{_mb(r['params_stored_bytes'])} stored")
    for p in ps[:max_params]:
        lines.append(f"  {p['name']:<40} {p['dtype']}{p['shape']!s:<24} {_mb(p['bytes']):>10}"
                     f"  {p['stored_as']}")
    if len(ps) > max_params:
        rest = sum(p["bytes"] for p in ps[max_params:])
        lines.append(f"  ... {len(ps) - max_params} more ({_mb(rest)})")
    mem = r.get("memory") or {}
    if mem:
        lines.append(f"\nmemory plan: {_mb(mem.get('planned_bytes', 0))} of intermediate "
                     "buffers per concurrent call")
    lines.append("members: " + ", ".join(f"{n} {_mb(s)}" for n, s in r["members"].items()))
    return lines
