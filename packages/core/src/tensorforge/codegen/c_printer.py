"""`CPrinter(dialect)`: the one walker that turns GPU kernels into C-like source.

It only spells what the passes decided: barriers are `storage_sync` calls placed by
`thread_sync`, cross-thread reductions are already trees or shuffle calls, the launch shape
is in the kernel. Everything that differs between languages comes from the `Dialect` table;
the override points for what a table cannot say are `signature`, `alloc`, `vector_load`,
`vector_store` and `cast`.

Choices made here and in `c_expr.py` (expressions), each on proof only:
- `floordiv` / `floormod` of integers print as C `/` and `%` where the analyzer proves the
  dividend non-negative and the divisor positive; elsewhere a preamble helper rounds down;
- a vector access is one vector load or store only for a contiguous ramp (stride 1); other
  vector indices gather or scatter lane by lane;
- bool buffers are stored as bytes (`bool` has no defined size in kernel arguments).

`print_module` is pure: it scans the kernels for features, asks the dialect for the preamble,
and prints each kernel with a fresh per-kernel state.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..arith import Analyzer
from ..expr import (
    Broadcast,
    Buffer,
    Call,
    IntImm,
    Not,
    PrimExpr,
    Ramp,
    Range,
    StringImm,
    Var,
    const,
)
from ..expr import dtype as dt
from ..tir.stmt import (
    Allocate,
    AssertStmt,
    AttrStmt,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    SeqStmt,
    Stmt,
)
from .c_expr import CodegenError, ExprPrinter, _contiguous, _strip
from .dialect import Dialect, Scope, SyncKind, ThreadAxis
from .features import check_messages, scan

_C_WORDS = {"auto", "break", "case", "char", "const", "continue", "default", "do", "double",
            "else", "enum", "extern", "float", "for", "goto", "if", "int", "long", "register",
            "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
            "union", "unsigned", "void", "volatile", "while", "half", "bool", "kernel",
            "global", "local", "constant", "private", "device", "threadgroup", "uint", "uchar",
            "int2", "float4", "min", "max", "exp", "log", "abs", "sqrt", "pow", "select",
            "main", "inline", "restrict", "barrier", "vector", "metal", "using"}




class CPrinter:
    """Prints kernels (objects with `name`, `params`, `body`, `block`, `thread_vars`) in one
    dialect. Subclass to override `signature`, `alloc`, `vector_load`, `vector_store`, `cast`
    where the dialect table cannot express a difference."""

    def __init__(self, dialect: Dialect):
        self.dialect = dialect

    def print_module(self, kernels: Sequence[Any]) -> str:
        features = scan(kernels)
        parts = []
        if self.dialect.preamble is not None:
            parts.append(self.dialect.preamble(features).strip())
        parts += [self.print_kernel(k) for k in kernels]
        return "\n\n".join(p for p in parts if p) + "\n"

    def print_kernel(self, kernel: Any) -> str:
        return _KernelPrinter(self, kernel).text()

    # override points -------------------------------------------------------------------
    def signature(self, kernel: Any, params: list[str]) -> str:
        d = self.dialect
        attrs = d.kernel_attrs(kernel.block) if d.kernel_attrs is not None else ""
        all_params = params + list(d.implicit_params)
        sep = ",\n    "
        return f"{d.kernel_qualifier}{attrs} {kernel.name}(\n    {sep.join(all_params)})"

    def alloc(self, scope: Scope, ctype: str, name: str, size: int) -> str:
        qual = self.dialect.alloc_qualifier.get(scope, "")
        return f"{qual + ' ' if qual else ''}{ctype} {name}[{size}];"

    def vector_load(self, ptr: str, offset: str, lanes: int, ctype: str,
                    aligned: bool = True) -> str | None:
        """A contiguous vector load, or None when the dialect needs alignment it lacks."""
        d = self.dialect
        tmpl = d.vector_load if aligned else d.vector_load_unaligned
        return None if tmpl is None else tmpl.format(lanes=lanes, ptr=ptr, offset=offset,
                                                     vtype=ctype)

    def vector_store(self, ptr: str, offset: str, lanes: int, value: str, ctype: str,
                     aligned: bool = True) -> str | None:
        d = self.dialect
        tmpl = d.vector_store if aligned else d.vector_store_unaligned
        return None if tmpl is None else tmpl.format(lanes=lanes, ptr=ptr, offset=offset,
                                                     value=value, vtype=ctype) + ";"

    def cast(self, to: str, value: str, src_dtype: str, dst_dtype: str) -> str:
        d = self.dialect
        if dt.lanes(dst_dtype) > 1 and d.vector_convert is not None:
            return d.vector_convert.format(vtype=to, value=value)
        return f"(({to})({value}))"


def _ident(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9_]", "_", name) or "v"
    if s[0].isdigit():
        s = "v" + s
    return s + "_" if s in _C_WORDS else s


def kernel_name(name: str, used: set[str]) -> str:
    """A C identifier for a kernel, unique within `used` (which it joins)."""
    base = n = _ident(name)
    k = 1
    while n in used:
        n = f"{base}_{k}"
        k += 1
    used.add(n)
    return n


class _KernelPrinter(ExprPrinter):
    """The per-kernel state of one print: names, indentation, the analyzer's loop ranges."""

    def __init__(self, printer: CPrinter, kernel: Any):
        self.p = printer
        self.d = printer.dialect
        self.k = kernel
        self.names: dict[Any, str] = {}
        self.used: set[str] = set()
        self.lines: list[str] = []
        self.depth = 1
        self.ana = Analyzer()
        self.global_data: set[Var] = {b.data for b in kernel.params if isinstance(b, Buffer)}
        # assertions and data checks: status check_base + k + 1 when message k failed
        self.checks: list[str] = getattr(kernel, "checks", None) or check_messages(kernel.body)
        self.check_base: int = getattr(kernel, "check_base", 0)
        self.tmp = 0
        self.lazy = 0  # > 0 inside operands C evaluates only sometimes (?:, &&, ||)

    # names -------------------------------------------------------------------------------
    def name(self, key: Any, base: str) -> str:
        n = self.names.get(key)
        if n is None:
            n = _ident(base)
            k = 1
            while n in self.used:
                n = f"{_ident(base)}_{k}"
                k += 1
            self.used.add(n)
            self.names[key] = n
        return n

    def fresh(self, base: str) -> str:
        self.tmp += 1
        return self.name(object(), f"{base}{self.tmp}")

    def emit(self, line: str) -> None:
        self.lines.append("  " * self.depth + line)

    # types ---------------------------------------------------------------------------------
    def ctype(self, dtype: str) -> str:
        """The C type of a value of `dtype` (float16 computes in float where storage only)."""
        p = dt.parse(dtype)
        elem = p.element
        if elem == "float16" and self.d.half_storage_only:
            elem = "float32"
        if p.lanes > 1:
            if elem == "bool":
                elem = "int32"
            if p.lanes not in self.d.vector_lanes:
                raise CodegenError(f"{self.d.name} has no {p.lanes}-lane vectors ({dtype}); "
                                   f"use one of {self.d.vector_lanes} lanes")
            return self.d.vector_type.format(type=self.d.type_name(elem), lanes=p.lanes)
        return self.d.type_name(elem)

    def storage_type(self, dtype: str) -> str:
        elem = dt.element(dtype)
        if elem == "bool":
            return self.d.bool_storage
        return self.d.type_name(elem)

    # the kernel ----------------------------------------------------------------------------
    def text(self) -> str:
        k = self.k
        written = _written(k.body)
        params = []
        for i, prm in enumerate(k.params):
            if isinstance(prm, Buffer):
                qual = self.d.param_qualifier.get(Scope.GLOBAL, "")
                params.append(self.d.buffer_param.format(
                    qual=qual + " " if qual else "",
                    const="" if prm.data in written else "const ",
                    type=self.storage_type(prm.dtype), restrict=self.d.restrict + " "
                    if self.d.restrict else "", name=self.name(prm.data, prm.name), index=i))
            else:
                params.append(self.d.scalar_param.format(
                    type=self.ctype(prm.dtype), name=self.name(prm, prm.name), index=i))
        for tag, var in sorted(k.thread_vars.items()):
            axis = ThreadAxis.BLOCK if tag.startswith("blockIdx") else ThreadAxis.THREAD
            dim = "xyz".index(tag[-1])
            self.emit(f"const int {self.name(var, tag)} = {self.d.thread_index[(axis, dim)]};")
            ext = (k.grid if axis is ThreadAxis.BLOCK else k.block)[dim]
            self.ana.bind(var, Range(const(0), const(ext)))
        self.stmt(k.body)
        if self.checks:
            qual = self.d.param_qualifier.get(Scope.GLOBAL, "")
            params.append(self.d.buffer_param.format(
                qual=qual + " " if qual else "", const="", type="int", restrict="",
                name="tf_status", index=len(params)))
        head = self.p.signature(k, params)
        return head + " {\n" + "\n".join(self.lines) + "\n}"

    # statements ----------------------------------------------------------------------------
    def stmt(self, s: Stmt) -> None:
        m = getattr(self, "s_" + type(s).__name__, None)
        if m is None:
            raise CodegenError(f"{self.d.name} printer: no rule for statement "
                               f"{type(s).__name__}:\n{s}")
        m(s)

    def s_SeqStmt(self, s: SeqStmt) -> None:
        for x in s.seq:
            self.stmt(x)

    def s_For(self, s: For) -> None:
        v = self.name(s.loop_var, s.loop_var.name)
        t = self.ctype(s.loop_var.dtype)
        lo, ext = self.expr(s.min), s.extent
        end = self.expr(self.ana.simplify(s.min + ext))
        if s.kind == "unrolled" and self.d.unroll_pragma:
            self.emit(self.d.unroll_pragma)
        self.emit(f"for ({t} {v} = {lo}; {v} < {end}; ++{v}) {{")
        self.depth += 1
        with self.ana.scoped_bind(s.loop_var, Range(s.min, ext)):
            self.stmt(s.body)
        self.depth -= 1
        self.emit("}")

    def s_IfThenElse(self, s: IfThenElse) -> None:
        cond = s.condition
        if isinstance(cond, Call) and cond.op == "likely":
            cond = cond.args[0]
        self.emit(f"if ({_strip(self.expr(cond))}) {{")
        self.depth += 1
        with self.ana.with_constraint(cond):
            self.stmt(s.then_case)
        self.depth -= 1
        if s.else_case is not None:
            self.emit("} else {")
            self.depth += 1
            with self.ana.with_constraint(Not(cond)):
                self.stmt(s.else_case)
            self.depth -= 1
        self.emit("}")

    def s_LetStmt(self, s: LetStmt) -> None:
        v = self.name(s.var, s.var.name)
        self.emit(f"const {self.ctype(s.var.dtype)} {v} = {_strip(self.expr(s.value))};")
        self.stmt(s.body)

    def s_AttrStmt(self, s: AttrStmt) -> None:
        self.stmt(s.body)

    def status(self, message: str) -> int:
        return self.check_base + self.checks.index(message) + 1

    def s_AssertStmt(self, s: AssertStmt) -> None:
        self.emit(f"if (!({_strip(self.expr(s.condition))})) {{ tf_status[0] = "
                  f"{self.status(s.message)}; return; }}")
        self.stmt(s.body)

    def s_Evaluate(self, s: Evaluate) -> None:
        v = s.value
        if isinstance(v, IntImm):
            return
        if isinstance(v, Call) and v.op == "storage_sync":
            scope = v.args[0].value if v.args and isinstance(v.args[0], StringImm) else "shared"
            spelled = self.d.barrier.get(SyncKind(scope))
            if spelled is None:
                raise CodegenError(f"{self.d.name} has no {scope} barrier "
                                   f"(storage_sync({scope!r}))")
            self.emit(spelled + ";")
            return
        self.emit(_strip(self.expr(v)) + ";")

    def s_Allocate(self, s: Allocate) -> None:
        b = s.buffer
        size = b.shape[0] if len(b.shape) == 1 else None
        if not isinstance(size, IntImm):
            raise CodegenError(f"{self.d.name} printer: allocation {b.name} needs a constant "
                               f"1-d size, got {list(b.shape)}")
        try:
            scope = Scope(b.scope)
        except ValueError:
            raise CodegenError(f"{self.d.name} printer: buffer {b.name} has scope {b.scope!r}, "
                               "which a C-like GPU kernel cannot allocate") from None
        if scope is Scope.GLOBAL:
            raise CodegenError(f"{self.d.name} printer: global buffer {b.name} allocated inside "
                               "a kernel; the host/device split makes those workspaces")
        elem = self.ctype(dt.element(b.dtype))
        if dt.element(b.dtype) == "bool":
            elem = self.d.bool_storage
        self.emit(self.p.alloc(scope, elem, self.name(b.data, b.name), size.value))
        self.stmt(s.body)

    def s_BufferStore(self, s: BufferStore) -> None:
        b = s.buffer
        ptr = self.name(b.data, b.name)
        (idx,) = s.indices
        lanes = dt.lanes(s.value.dtype)
        half = self._half_storage(b)
        is_bool = dt.element(b.dtype) == "bool"
        if lanes == 1:
            val = _strip(self.expr(s.value))
            if half:
                self.emit(self.d.half_store.format(value=val, offset=_strip(self.expr(idx)),
                                                   ptr=ptr) + ";")
            elif is_bool:
                self.emit(f"{ptr}[{_strip(self.expr(idx))}] = ({self.d.bool_storage})({val});")
            else:
                self.emit(f"{ptr}[{_strip(self.expr(idx))}] = {val};")
            return
        if _contiguous(idx) and not is_bool:
            off = self.expr(idx.base)  # type: ignore[attr-defined]  # in "ptr + off"
            val = _strip(self.expr(s.value))
            if half:
                self.emit(self.d.half_vector_store.format(lanes=lanes, value=val, ptr=ptr,
                                                          offset=off) + ";")
                return
            line = self.p.vector_store(ptr, off, lanes, val, self.ctype(s.value.dtype),
                                       self.aligned(b, idx, lanes))
            if line is not None:
                self.emit(line)
                return
        tmp = self.fresh("v")  # scatter: one store per lane
        self.emit(f"const {self.ctype(s.value.dtype)} {tmp} = {_strip(self.expr(s.value))};")
        for k in range(lanes):
            lane = f"{tmp}{self.d.lane(k)}"
            i = self.lane_index(idx, k)
            if half:
                self.emit(self.d.half_store.format(value=lane, offset=i, ptr=ptr) + ";")
            elif is_bool:
                self.emit(f"{ptr}[{i}] = ({self.d.bool_storage})({lane} != 0);")
            else:
                self.emit(f"{ptr}[{i}] = {lane};")

    def aligned(self, b: Buffer, idx: PrimExpr, lanes: int) -> bool:
        """Whether a vector access at `idx` starts on a multiple of its own size: the offset is
        a proven multiple of `lanes` and the buffer is at least that aligned."""
        vec_bytes = lanes * dt.nbytes(dt.element(b.dtype))
        if b.data_alignment % vec_bytes and b.data_alignment < vec_bytes:
            return False
        m = self.ana.modular_set(idx.base)  # type: ignore[attr-defined]
        return m.coeff % lanes == 0 and m.base % lanes == 0

    def _half_storage(self, b: Buffer) -> bool:
        return (self.d.half_storage_only and dt.element(b.dtype) == "float16"
                and b.data in self.global_data)

    def lane_index(self, idx: PrimExpr, k: int) -> str:
        if isinstance(idx, Ramp):
            return _strip(self.expr(self.ana.simplify(idx.base + idx.stride * k)))
        if isinstance(idx, Broadcast):
            return _strip(self.expr(idx.value))
        return f"{self.expr(idx)}{self.d.lane(k)}"

def _written(body: Stmt) -> set[Var]:
    from .features import written_data

    return written_data(body)
