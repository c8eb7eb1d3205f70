"""The ahead-of-time executor's entry: a model's whole kernel sequence as one LLVM function.

`entry_ir(plan, arity)` writes a small LLVM module that declares the kernels and defines
`entry_symbol(plan)` with the calling convention of `tensorforge.runtime.aot_plan`: the
pointer tables are read once, every kernel is called in order with its planned address (a
table entry or the workspace plus a constant offset), and a non-zero status returns at once
with the kernel's index in `*failed`. The calls are `noinline`, so each kernel's code (and
its parallel region) is exactly the one the graph executor calls.

The JIT adds this module to the kernels' MCJIT engine (`LLVMModule.graph_entry`); export links
it into the shared library (`aot.export_library`), whose kernel table records its symbol and
the plan's digest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llvmlite import ir

from tensorforge.runtime.aot_plan import ENTRY_SIGNATURE, AotPlan

from .codegen_expr import I8, I32, I64, PTR

__all__ = ["entry_ir", "entry_record", "entry_symbol"]


def entry_symbol(plan: AotPlan) -> str:
    """The entry's symbol: named by its plan, so several plans can share one JIT engine."""
    return f"tensorforge_graph_entry_{plan.digest[:16]}"


def entry_record(plan: AotPlan) -> dict[str, Any]:
    """What a library's kernel table says of its entry (checked by `load`)."""
    return {"symbol": entry_symbol(plan), "digest": plan.digest, "signature": ENTRY_SIGNATURE,
            "workspace_bytes": plan.workspace_bytes}


def entry_ir(plan: AotPlan, arity: Mapping[str, int]) -> str:
    """LLVM IR of the entry of `plan`; `arity` gives each kernel's number of (pointer)
    parameters, as compiled."""
    mod = ir.Module(name="tensorforge_graph_entry")
    kernels: dict[str, ir.Function] = {}
    for call in plan.calls:
        if call.name not in kernels:
            fn = ir.Function(mod, ir.FunctionType(I32, [PTR] * arity[call.name]), name=call.name)
            fn.attributes.add("nounwind")
            kernels[call.name] = fn
    entry = ir.Function(mod, ir.FunctionType(I32, [PTR] * 5), name=entry_symbol(plan))
    entry.attributes.add("nounwind")
    tables = dict(zip(("in", "out", "param"), entry.args[:3]))
    workspace, failed = entry.args[3], entry.args[4]
    for a in entry.args:
        a.add_attribute("captures(none)")
    b = ir.IRBuilder(entry.append_basic_block("entry"))
    loaded: dict[tuple[str, int], ir.Value] = {}

    def address(kind: str, at: int) -> ir.Value:
        if kind == "ws":
            return b.gep(workspace, [ir.Constant(I64, at)], inbounds=True, source_etype=I8)
        if (kind, at) not in loaded:
            slot = b.gep(tables[kind], [ir.Constant(I64, at)], inbounds=True, source_etype=PTR)
            loaded[(kind, at)] = b.load(slot, typ=PTR, name=f"{kind}{at}")
        return loaded[(kind, at)]

    for call in plan.calls:
        args = [address(kind, at) for kind, at in call.args]
        status = b.call(kernels[call.name], args, attrs=("noinline",))
        bad = b.icmp_signed("!=", status, ir.Constant(I32, 0))
        with b.if_then(bad, likely=False):
            b.store(ir.Constant(I32, call.index), failed)
            b.ret(status)
    b.ret(ir.Constant(I32, 0))
    return str(mod)
