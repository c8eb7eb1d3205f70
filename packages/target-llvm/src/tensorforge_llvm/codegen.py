"""The `llvm` target's code generator: `build(funcs, target) -> LLVMModule`.

All PrimFuncs of one call go into one LLVM module (exported symbol = PrimFunc name), which is
verified, optimized at O3 (new pass manager, loop and SLP vectorizers on) for the target's CPU
and features, and JIT-compiled with MCJIT. Calling convention: see
`tensorforge.runtime.cfunction`. The generated (unoptimized) IR text is kept so that
`get_source` and `export_library` can regenerate code without touching the JIT's module.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Sequence
from typing import Any

import llvmlite.binding as llvm
from llvmlite import ir

from tensorforge.errors import TensorforgeError
from tensorforge.expr import Buffer, IntImm, Var
from tensorforge.expr import dtype as dt
from tensorforge.runtime import CFunction, Module, Param
from tensorforge.tir import PrimFunc

from . import jit
from .codegen_expr import I8, PTR, STACK_ALIGN, CodegenBug, ll_type
from .codegen_stmt import FunctionState, StmtEmitter

__all__ = ["HostFeatureWarning", "LLVMModule", "build"]

_entry_lock = threading.Lock()  # one engine is given one graph entry at a time


class ModuleContext:
    """Module-wide state shared by every function emitter: declarations and unique names."""

    def __init__(self, name: str, num_threads: int, features: frozenset[str] = frozenset()):
        self.module = ir.Module(name=name)
        self.num_threads = num_threads
        #: the CPU features the code is built for (LLVM names): intrinsics that need one
        #: (VNNI's vpdpbusd) are only emitted where it is on
        self.features = features
        self._names: dict[str, int] = {}

    def declare(self, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name=name)
            if not name.startswith("llvm."):
                fn.attributes.add("nounwind")
        return fn

    def unique(self, base: str) -> str:
        n = self._names.get(base, 0)
        self._names[base] = n + 1
        return f"{base}_{n}"


class FuncInfo:
    """The C signature of one compiled kernel (what `CFunction` and the sidecar need)."""

    def __init__(self, name: str, params: list[Param], asserts: list[str]):
        self.name = name
        self.params = params
        self.asserts = asserts

    def to_json(self) -> dict[str, Any]:
        from tensorforge.runtime import params_to_json

        return {"name": self.name, "symbol": self.name, "params": params_to_json(self.params),
                "asserts": list(self.asserts)}


class LLVMModule(Module):
    """JIT-compiled kernels of one `build` call."""

    type_key = "llvm"

    def __init__(self, infos: list[FuncInfo], ir_text: str, opts: jit.CPUOptions,
                 engine: Any | None, missing: Sequence[str] = ()):
        self._engine = engine
        self.missing_features = tuple(missing)  # what this host lacks to run the kernels
        self.infos = infos
        self.ir_text = ir_text
        self.options = opts
        self._entries: dict[str, int] = {}  # graph entry symbol -> address in the engine
        functions: dict[str, Any] = {}
        for info in infos:
            if engine is not None:
                addr = engine.get_function_address(info.name)
                functions[info.name] = CFunction(info.name, addr, info.params, info.asserts,
                                                 owner=self)
            else:
                functions[info.name] = _not_runnable(info.name, opts, missing)
        super().__init__(functions, infos[0].name if infos else None)

    def optimized_module(self, pic: bool = False, extra_ir: str = "",
                         linked_ir: Sequence[str] = ()) -> tuple[llvm.ModuleRef, Any]:
        """A fresh optimized copy of the module (the JIT's own copy is left alone), with
        `extra_ir` (global definitions, e.g. the kernel table) appended and the modules
        `linked_ir` (e.g. the graph entry, which declares the kernels) linked in."""
        tm = jit.target_machine(self.options, jit=not pic, pic=pic)
        mod = jit.parse(self.ir_text + extra_ir, tm)
        for text in linked_ir:
            mod.link_in(jit.parse(text, tm))
        jit.optimize(mod, tm, self.options.opt_level)
        return mod, tm

    def graph_entry(self, plan: Any) -> int:
        """The address of the ahead-of-time entry running `plan` (an `AotPlan`), compiled into
        this module's JIT engine once per plan (see `graph_entry.py`)."""
        from .graph_entry import entry_ir, entry_symbol

        if self._engine is None:
            raise TensorforgeError("its kernels are not compiled for this machine")
        return self._add_to_engine(entry_symbol(plan), lambda: entry_ir(plan, self.arity()))

    def aot_quick(self) -> int:
        """The address of the ahead-of-time executor's native quick path
        (`tensorforge.runtime.aot_quick`), compiled into this module's JIT engine once."""
        from tensorforge.runtime.aot_quick import QUICK_SYMBOL

        from .quick_entry import quick_ir

        if self._engine is None:
            raise TensorforgeError("its kernels are not compiled for this machine")
        return self._add_to_engine(QUICK_SYMBOL, quick_ir)

    def _add_to_engine(self, symbol: str, make_ir: Any) -> int:
        """The address of `symbol`, the IR `make_ir()` defines, added to the engine once."""
        with _entry_lock:
            if symbol not in self._entries:
                tm = jit.target_machine(self.options, jit=True)
                mod = jit.parse(make_ir(), tm)
                jit.optimize(mod, tm, self.options.opt_level)
                self._engine.add_module(mod)
                self._engine.finalize_object()
                self._entries[symbol] = self._engine.get_function_address(symbol)
            return self._entries[symbol]

    def arity(self) -> dict[str, int]:
        """Each kernel's number of parameters."""
        return {info.name: len(info.params) for info in self.infos}

    def target_info(self) -> dict[str, Any]:
        o = self.options
        return {"mtriple": o.mtriple, "mcpu": o.mcpu, "mattr": o.mattr,
                "num-threads": o.num_threads}

    def get_source(self, fmt: str = "ll") -> str:
        """`"ll"`: optimized LLVM IR; `"ll-raw"`: IR as generated; `"asm"`: assembly."""
        if fmt in ("ll-raw", "llvm-raw"):
            return self.ir_text
        if fmt in ("", "ll", "llvm"):
            return str(self.optimized_module()[0])
        if fmt in ("asm", "s"):
            mod, tm = self.optimized_module()
            return tm.emit_assembly(mod)
        raise TensorforgeError(f"llvm module has no source format {fmt!r}; use 'll', 'll-raw' "
                               "or 'asm'")

    def export_library(self, path: str | os.PathLike[str], graph_entry: Any = None) -> None:
        """Write a shared library (cc -shared) and its `<path>.json` signature sidecar; with
        `graph_entry` (an `AotPlan`), the library also holds that plan's entry."""
        from .aot import export_library

        export_library(self, os.fspath(path), graph_entry)


def _not_runnable(name: str, opts: jit.CPUOptions, missing: Sequence[str] = ()) -> Any:
    def call(*args: Any) -> None:
        if missing:
            raise TensorforgeError(
                f"kernel {name!r} was built for -mcpu={opts.mcpu} -mattr={opts.mattr or '(none)'}"
                f", which uses CPU features this machine lacks ({', '.join(missing)}); running "
                "it here would die with an illegal instruction. Export it and run it on a CPU "
                "that has them, or compile for this machine (leave -mcpu/-mattr unset).")
        raise TensorforgeError(f"kernel {name!r} was built for {opts.mtriple}, not this machine; "
                               "export it with export_library and run it there")

    return call


class HostFeatureWarning(UserWarning):
    """The code is built for CPU features this machine lacks: it compiles (cross-compiling is
    legitimate) but will not run here."""


def _missing_on_host(opts: jit.CPUOptions) -> list[str]:
    from .host import missing_host_features

    missing = missing_host_features(opts.mtriple, opts.mcpu, opts.mattr)
    if missing:
        warnings.warn(
            f"target -mcpu={opts.mcpu} -mattr={opts.mattr or '(none)'} uses CPU features this "
            f"machine lacks: {', '.join(missing)}. The result compiles but will not run on this "
            "host (its kernels refuse to run here); run it on a CPU with those features, or "
            "compile for this machine (leave -mcpu/-mattr unset).", HostFeatureWarning,
            stacklevel=3)
    return missing


def build(funcs: Sequence[PrimFunc] | PrimFunc, target: Any) -> LLVMModule:
    """Compile `funcs` for the CPU `target` (anything with an `.options` dict) and JIT them."""
    if isinstance(funcs, PrimFunc):
        funcs = [funcs]
    opts = jit.resolve_options(target)
    jit.ensure_llvm()
    names = [f.name for f in funcs]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise TensorforgeError(f"two kernels are named {sorted(dup)[0]!r}; names must be unique")
    ctx = ModuleContext(names[0] if names else "tensorforge", opts.num_threads,
                        jit.enabled_features(opts))
    infos = [_emit_function(ctx, f) for f in funcs]
    ir_text = str(ctx.module)
    _check_half_support(ir_text, opts)
    engine = None
    missing = _missing_on_host(opts) if opts.is_host else []
    if opts.is_host and not missing:
        tm = jit.target_machine(opts, jit=True)
        mod = _parse_checked(ir_text, tm, funcs)
        jit.optimize(mod, tm, opts.opt_level)
        engine = llvm.create_mcjit_compiler(mod, tm)
        engine.finalize_object()
    else:
        _parse_checked(ir_text, jit.target_machine(opts, jit=False), funcs)
    return LLVMModule(infos, ir_text, opts, engine, missing)


def _check_half_support(ir_text: str, opts: jit.CPUOptions) -> None:
    # Without F16C, x86 converts half through compiler-rt calls the JIT cannot resolve.
    if (" half" in ir_text and opts.mtriple.startswith(("x86_64", "i686"))
            and "+f16c" not in opts.mattr.split(",")):
        raise TensorforgeError(
            "float16 on x86 needs the F16C extension; this target's features "
            f"({opts.mattr or 'none'}) lack +f16c: add it to -mattr or use float32"
        )


def _parse_checked(ir_text: str, tm: Any, funcs: Sequence[PrimFunc]) -> llvm.ModuleRef:
    try:
        return jit.parse(ir_text, tm)
    except RuntimeError as e:
        shown = "\n\n".join(str(f) for f in funcs)
        raise TensorforgeError(
            f"LLVM rejected the code generated for {', '.join(repr(f.name) for f in funcs)}: "
            f"{e}\nthis is a compiler bug; please report it with the printed IR:\n{shown}"
        ) from None


def _emit_function(ctx: ModuleContext, func: PrimFunc) -> FuncInfo:
    arg_types: list[ir.Type] = []
    for p in func.params:
        if isinstance(p, Buffer):
            arg_types.append(PTR)
        elif isinstance(p, Var):
            arg_types.append(_scalar_abi_type(func, p))
        else:
            raise CodegenBug(f"llvm codegen of PrimFunc {func.name!r}: parameter {p!r} is neither "
                             "a Buffer nor a Var; this is a compiler bug; please report it with "
                             f"the printed IR:\n{func}")
    fn = ir.Function(ctx.module, ir.FunctionType(ir.IntType(32), arg_types), name=func.name)
    fn.attributes.add("nounwind")
    fn.attributes.alignstack = STACK_ALIGN
    state = FunctionState(func.name)
    em = StmtEmitter(ctx, state, fn)
    datas = [p.data for p in func.params if isinstance(p, Buffer)]
    params: list[Param] = []
    written = _written_buffers(func)
    # storage_flatten records each parameter's logical (pre-flattening) shape
    logical = func.attrs.get("buffer_shapes") or [None] * len(func.params)
    for p, arg, shape in zip(func.params, fn.args, logical):
        if isinstance(p, Buffer):
            arg.add_attribute("captures(none)")
            if datas.count(p.data) == 1:
                arg.add_attribute("noalias")
            em.vars[p.data] = arg
            params.append(Param(p.name, "buffer", dt.element(p.dtype),
                                tuple(shape) if shape is not None else _shape(p),
                                p.data in written))
        else:
            em.vars[p] = _scalar_from_abi(em, p, arg)
            params.append(Param(p.name, "scalar", p.dtype))
    try:
        em.stmt(func.body)
    except CodegenBug as e:
        raise TensorforgeError(f"{e}\n{func}") from None
    except (TypeError, ValueError, AttributeError, AssertionError) as e:
        raise TensorforgeError(
            f"llvm codegen of PrimFunc {func.name!r} failed: {type(e).__name__}: {e}; this is "
            f"a compiler bug; please report it with the printed IR:\n{func}"
        ) from e
    if not em.b.block.is_terminated:
        em.b.ret(ir.Constant(ir.IntType(32), 0))
    return FuncInfo(func.name, params, state.asserts)


def _scalar_abi_type(func: PrimFunc, v: Var) -> ir.Type:
    if dt.lanes(v.dtype) != 1 or v.dtype == "handle":
        raise CodegenBug(f"llvm codegen of PrimFunc {func.name!r}: scalar parameter {v.name!r} "
                         f"has dtype {v.dtype}; kernels take scalars of one lane")
    if v.dtype == "bool":
        return I8
    if v.dtype == "float16":
        return ir.IntType(16)
    return ll_type(v.dtype)


def _scalar_from_abi(em: StmtEmitter, v: Var, arg: ir.Value) -> ir.Value:
    if v.dtype == "bool":
        return em.b.icmp_unsigned("!=", arg, ir.Constant(I8, 0))
    if v.dtype == "float16":
        return em.b.bitcast(arg, ir.HalfType())
    return arg


def _shape(buf: Buffer) -> tuple[int | str | None, ...]:
    out: list[int | str | None] = []
    for d in buf.shape:
        if isinstance(d, IntImm):
            out.append(d.value)
        elif isinstance(d, Var):
            out.append(d.name)
        else:
            out.append(None)
    return tuple(out)


def _written_buffers(func: PrimFunc) -> set[Var]:
    from tensorforge.expr import post_order_collect
    from tensorforge.tir import BufferStore

    stores = post_order_collect(func.body, lambda n: isinstance(n, BufferStore))
    return {s.buffer.data for s in stores}
