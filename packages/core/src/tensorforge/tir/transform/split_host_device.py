"""Host/device split: a lowered GPU function becomes kernels plus a host program that
launches them.

Each kernel (a chain of `thread_extent` attributes) is outlined into a `DeviceKernel` whose
parameters are the global buffers it touches (the function's parameters first, in their
order, then workspaces) and the scalar variables it uses that the host defines (host loop
variables, scalar parameters). A `global` allocation outside the kernels is an intermediate
between kernels: it becomes a workspace the runtime allocates on the device. What remains on
the host may only be sequences, constant-extent loops and allocations around launches: a loop
nest with stores but no thread binding is an error naming its stage (it would run on the host
where the data is not). A statement with no loop at all (a store into a 0-d tensor) becomes a
one-thread kernel.

The host program is plain data (`HostProgram.to_json`), so the runtime can replay it without
the compiler: steps are launches (kernel, grid, block, arguments) and loops.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...errors import TensorforgeError
from ...expr import Buffer, BufferLoad, IntImm, Var, post_order_collect
from ...expr import dtype as dt
from ..stmt import Allocate, AttrStmt, BufferStore, For, PrimFunc, SeqStmt, Stmt
from ..thread_scope import BLOCK_TAGS, GRID_TAGS


class HostDeviceError(TensorforgeError):
    """A function that cannot be split into host code and kernels."""


@dataclass
class DeviceKernel:
    """One kernel: its body (under the launch attributes), parameters and launch shape."""

    name: str
    params: list[Buffer | Var]
    body: Stmt
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    thread_vars: dict[str, Var]
    shared_bytes: int

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


@dataclass
class HostProgram:
    """What the host does for one function: workspaces, then steps of launches and loops."""

    name: str
    params: list[Buffer | Var]
    workspaces: list[Buffer]
    steps: list[dict[str, Any]]
    kernels: list[DeviceKernel] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The launch plan (kernels by name; their code lives in the module's source)."""
        return {
            "name": self.name,
            "workspaces": [{"name": w.name, "dtype": dt.element(w.dtype),
                            "nbytes": _nbytes(w)} for w in self.workspaces],
            "steps": self.steps,
            "kernels": [{"name": k.name, "grid": list(k.grid), "block": list(k.block),
                         "shared_bytes": k.shared_bytes} for k in self.kernels],
        }


def _nbytes(b: Buffer) -> int:
    n = 1
    for d in b.shape:
        if not isinstance(d, IntImm):
            raise HostDeviceError(f"workspace {b.name} has a symbolic size {d}; GPU functions "
                                  "need constant shapes")
        n *= d.value
    return n * dt.nbytes(b.dtype)


class _Splitter:
    def __init__(self, func: PrimFunc):
        self.func = func
        self.params = list(func.params)
        self.data_of = {p.data: k for k, p in enumerate(func.params) if isinstance(p, Buffer)}
        self.workspaces: list[Buffer] = []
        self.ws_of: dict[Var, int] = {}
        self.kernels: list[DeviceKernel] = []
        self.host_vars: list[Var] = [p for p in func.params if isinstance(p, Var)]
        self.roots: list[AttrStmt | Stmt] = []

    # host side ------------------------------------------------------------------------------
    def steps(self, s: Stmt) -> list[dict[str, Any]]:
        if isinstance(s, SeqStmt):
            return [st for x in s.seq for st in self.steps(x)]
        if isinstance(s, AttrStmt) and s.key == "thread_extent":
            return [self._launch(s)]
        if isinstance(s, Allocate):
            if s.buffer.scope not in ("global", ""):
                raise HostDeviceError(
                    f"{self.func.name}: buffer {s.buffer.name} of scope {s.buffer.scope!r} is "
                    "allocated outside every kernel; attach its stage inside a thread-bound "
                    "loop (compute_at) or give it the global scope")
            self.ws_of[s.buffer.data] = len(self.workspaces)
            self.workspaces.append(s.buffer)
            return self.steps(s.body)
        if isinstance(s, For) and s.kind != "thread_binding":
            if not (isinstance(s.min, IntImm) and isinstance(s.extent, IntImm)):
                raise HostDeviceError(f"{self.func.name}: host loop {s.loop_var.name} needs "
                                      "constant bounds")
            if not _has_kernel(s.body):
                self._unbound(s)
            self.host_vars.append(s.loop_var)
            body = self.steps(s.body)
            self.host_vars.pop()
            return [{"loop": s.loop_var.name, "min": s.min.value, "extent": s.extent.value,
                     "body": body}]
        if isinstance(s, AttrStmt) and s.key.startswith("pragma_"):
            return self.steps(s.body)
        if not post_order_collect(s, lambda n: isinstance(n, (For, BufferStore))):
            return []  # nothing to run (an evaluated expression)
        if post_order_collect(s, lambda n: isinstance(n, For)):
            self._unbound(s)
        return [self._launch(s)]  # a loop-free statement: one thread does it

    def _unbound(self, s: Stmt) -> None:
        loops = [f for f in post_order_collect(s, lambda n: isinstance(n, For))]
        stage = next((dict(f.annotations).get("stage") for f in loops
                      if dict(f.annotations).get("stage")), None)
        stores = post_order_collect(s, lambda n: isinstance(n, BufferStore))
        what = f"stage {stage}" if stage else (
            f"the loop nest writing {stores[0].buffer.name}" if stores else "a loop nest")
        names = ", ".join(dict.fromkeys(f.loop_var.name for f in loops))
        raise HostDeviceError(
            f"{self.func.name}: {what} has no loop bound to a GPU thread (loops: {names}), so "
            "it would run on the host; bind its outer axes to blockIdx/threadIdx "
            "(s[T].bind(axis, te.thread_axis('blockIdx.x'))) or use a GPU schedule")

    # device side ----------------------------------------------------------------------------
    def _launch(self, s: Stmt) -> dict[str, Any]:
        ext: dict[str, int] = {}
        tvars: dict[str, Var] = {}
        body = s
        while isinstance(body, AttrStmt) and body.key == "thread_extent":
            ext[body.node.name] = body.value.value  # type: ignore[union-attr]
            tvars[body.node.name] = body.node
            body = body.body
        name = f"{self.func.name}_k{len(self.kernels)}"
        used_data = {n.buffer.data for n in post_order_collect(
            body, lambda n: isinstance(n, (BufferLoad, BufferStore)))}
        bufs: list[Buffer] = [p for p in self.params if isinstance(p, Buffer)
                              and p.data in used_data]
        bufs += [w for w in self.workspaces if w.data in used_data]
        used_vars = set(post_order_collect(body, lambda n: isinstance(n, Var)))
        scalars = [v for v in self.host_vars if v in used_vars]
        args: list[list[Any]] = []
        for b in bufs:
            args.append(["param", self.data_of[b.data]] if b.data in self.data_of
                        else ["workspace", self.ws_of[b.data]])
        for v in scalars:
            pos = next((i for i, p in enumerate(self.params) if p is v), None)
            args.append(["param", pos] if pos is not None else ["var", v.name])
        shared = sum(a.buffer.shape[0].value * dt.nbytes(a.buffer.dtype)
                     for a in post_order_collect(body, lambda n: isinstance(n, Allocate))
                     if a.buffer.scope == "shared" and isinstance(a.buffer.shape[0], IntImm))
        k = DeviceKernel(name, [*bufs, *scalars], body,
                         tuple(ext.get(t, 1) for t in GRID_TAGS),  # type: ignore[arg-type]
                         tuple(ext.get(t, 1) for t in BLOCK_TAGS),  # type: ignore[arg-type]
                         tvars, shared)
        self.kernels.append(k)
        return {"launch": name, "args": args}


def _has_kernel(s: Stmt) -> bool:
    return bool(post_order_collect(
        s, lambda n: isinstance(n, AttrStmt) and n.key == "thread_extent"))


def split_host_device(func: PrimFunc) -> HostProgram:
    """Outline the kernels of a lowered GPU function (see the module docstring)."""
    sp = _Splitter(func)
    steps = sp.steps(func.body)
    if len(sp.kernels) == 1:  # one kernel: it takes the function's name
        k = sp.kernels[0]
        rename_launches(steps, k.name, func.name)
        k.name = func.name
    return HostProgram(func.name, list(func.params), sp.workspaces, steps, sp.kernels,
                       dict(func.attrs))


def rename_launches(steps: list[dict[str, Any]], old: str, new: str) -> None:
    """Point the launches of kernel `old` in a host plan at `new`."""
    for st in steps:
        if st.get("launch") == old:
            st["launch"] = new
        rename_launches(st.get("body", []), old, new)
