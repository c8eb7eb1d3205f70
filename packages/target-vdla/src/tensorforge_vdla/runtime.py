"""The VDLA runtime: compiled kernels as a callable module, run through a `Driver` (the
simulator), timed in simulated seconds, exported and loaded back. Nothing here imports the
compiler (the loop IR, lowering, code generation): a `.vdla` library runs with numpy alone.

The module is callable with numpy arrays like any runtime module: the arguments are placed in
a DRAM image, the simulator runs the program (through `SimDriver`), and the written arguments
are copied back; `last_report` holds the run's `SimReport`; `time_evaluator` gives simulated
seconds (`timing = "simulated"` tells the tuner to use it). `export_library(path)` writes the
instruction streams and micro-op segments (`path`) and a JSON sidecar (`path.json`) naming its
loader; `tensorforge.runtime.load_module(path)` (or `load_vdla_module`) reads them back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any

from tensorforge.runtime.module import Module

from .config import VDLAConfig
from .driver import SimDriver
from .program import Program
from .sim.report import SimReport

LIBRARY_FORMAT = "tensorforge.vdla-library"


class VDLAFunction:
    """One kernel: call it with numpy arrays (inputs and outputs, in parameter order)."""

    def __init__(self, program: Program, driver: SimDriver):
        self.program = program
        self.driver = driver
        self.last_report: SimReport | None = None

    def __call__(self, *args: Any) -> None:
        self.last_report = self.driver.run(self.program, args)

    def __repr__(self) -> str:
        sig = ", ".join(f"{p.name}: {p.dtype}{list(p.shape)}" for p in self.program.params)
        return f"<VDLA kernel {self.program.name}({sig}), {len(self.program.insns)} insns>"


class SimTime:
    """Simulated seconds per call of each repeat (the simulator is deterministic, so all the
    repeats agree); `mean` and `median` like a measured time."""

    def __init__(self, results: list[float]):
        self.results = results

    @property
    def mean(self) -> float:
        return sum(self.results) / len(self.results)

    @property
    def median(self) -> float:
        return sorted(self.results)[len(self.results) // 2]

    def __str__(self) -> str:
        return f"{self.median * 1e3:.4f} ms simulated"


class VDLAModule(Module):
    """The kernels of one `build` for a VDLA target, run on the simulator."""

    type_key = "vdla"
    timing = "simulated"  # time_evaluator counts the design's cycles, not wall time

    def __init__(self, programs: Sequence[Program], target: str = "vdla",
                 driver: SimDriver | None = None):
        self.programs = list(programs)
        self.target = target
        cfg = self.programs[0].config if self.programs else VDLAConfig()
        self.driver = driver or SimDriver(cfg)
        super().__init__({p.name: VDLAFunction(p, self.driver) for p in self.programs})

    def use_driver(self, driver: SimDriver) -> VDLAModule:
        """Run the kernels through `driver` from now on (e.g. a perturbed `SimDriver`)."""
        self.driver = driver
        for f in self._functions.values():
            f.driver = driver  # type: ignore[attr-defined]
        return self

    @property
    def last_report(self) -> SimReport | None:
        """The report of the last call of the entry function."""
        if self.entry_name is None:
            return None
        return self.get_function(self.entry_name).last_report  # type: ignore[attr-defined]

    def get_source(self, fmt: str = "") -> str:
        return "\n\n".join(f"# {p.name}\n{p.disassemble()}" for p in self.programs)

    def time_evaluator(self, name: str, number: int = 1, repeat: int = 3,
                       min_repeat_ms: float = 0.0) -> Callable[..., SimTime]:
        """`f(*args) -> SimTime`: simulated seconds per call of `name` at the design's clock
        (one simulation: every repeat would count the same cycles)."""
        fn = self.get_function(name)

        def evaluate(*args: Any) -> SimTime:
            fn(*args)
            return SimTime([fn.last_report.seconds] * max(1, repeat))  # type: ignore[attr-defined]

        return evaluate

    def library_bytes(self) -> tuple[bytes, dict[str, Any]]:
        """(every kernel's instruction stream then its micro-op segment, the sidecar: format,
        loader, config, parameters, offsets into the blob)."""
        blob, kernels = b"", []
        for p in self.programs:
            s, u = p.stream(), p.uops.tobytes()
            kernels.append({**p.sidecar(), "stream_offset": len(blob), "stream_bytes": len(s),
                            "uops_offset": len(blob) + len(s), "uops_bytes": len(u)})
            blob += s + u
        meta = {"format": LIBRARY_FORMAT, "version": 1, "target": self.target,
                "loader": "tensorforge_vdla.runtime:load_vdla_module",
                "entry_name": self.entry_name, "functions": kernels}
        return blob, meta

    def export_library(self, path: str | os.PathLike[str]) -> None:
        """`path`: the streams (`library_bytes`); `path.json`: the sidecar."""
        path = os.fspath(path)
        blob, meta = self.library_bytes()
        with open(path, "wb") as f:
            f.write(blob)
        with open(path + ".json", "w", encoding="utf-8") as f:
            json.dump(meta, f, indent=1)

    def package_entry(self, name: str, members: dict[str, bytes]) -> dict[str, Any]:
        """This module inside a `.tfpkg` (`CompiledModel.export`): adds `<name>.vdla` and its
        sidecar to `members`, returns the manifest entry (loader kind "vdla-library")."""
        blob, meta = self.library_bytes()
        members[f"{name}.vdla"] = blob
        members[f"{name}.vdla.json"] = json.dumps(meta, indent=1).encode()
        return {"name": name, "loader": "vdla-library",
                "files": {"library": f"{name}.vdla", "sidecar": f"{name}.vdla.json"},
                "requires": {"target": self.target}}


def load_vdla_module(path: str | os.PathLike[str], meta: dict[str, Any] | None = None
                     ) -> VDLAModule:
    """A module written by `VDLAModule.export_library`, without the compiler."""
    path = os.fspath(path)
    if meta is None:
        with open(path + ".json", encoding="utf-8") as f:
            meta = json.load(f)
    with open(path, "rb") as f:
        blob = f.read()
    return module_from_bytes(blob, meta, path)


def module_from_bytes(blob: bytes, meta: dict[str, Any], where: str) -> VDLAModule:
    """The module of a library blob and its sidecar (`VDLAModule.library_bytes`)."""
    from .errors import VDLAError

    if not isinstance(meta, dict) or meta.get("format") != LIBRARY_FORMAT:
        raise VDLAError(f"{where}: the sidecar does not describe a VDLA library")
    programs = []
    for k in meta["functions"]:
        s = blob[k["stream_offset"]:k["stream_offset"] + k["stream_bytes"]]
        u = blob[k["uops_offset"]:k["uops_offset"] + k["uops_bytes"]]
        programs.append(Program.from_parts(s, u, k))
    mod = VDLAModule(programs, meta.get("target", "vdla"))
    mod.entry_name = meta.get("entry_name") or mod.entry_name
    return mod


def load_package_module(entry: dict[str, Any], members: dict[str, bytes], tmp: str,
                        where: str) -> VDLAModule:
    """The "vdla-library" loader of `tensorforge.load`: the module of a `.tfpkg` entry."""
    from tensorforge.errors import PackageError

    files = entry.get("files") if isinstance(entry.get("files"), dict) else {}
    lib, side = files.get("library"), files.get("sidecar")
    if lib not in members or side not in members:
        raise PackageError(f"cannot load {where}: its VDLA module names members {lib!r} and "
                           f"{side!r}, which it does not hold; re-export the model")
    try:
        meta = json.loads(members[side])
    except ValueError as e:
        raise PackageError(f"cannot load {where}: {side} is not valid JSON ({e})") from None
    return module_from_bytes(members[lib], meta, f"{where}:{lib}")
