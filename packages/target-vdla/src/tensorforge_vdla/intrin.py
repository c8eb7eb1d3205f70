"""VDLA's tensor intrinsics: semantics in TE, operand buffers in the on-chip scopes, and the
lowering to `vdla.*` calls that the passes fold into instructions.

- `gemm_{b}x{i}x{o}_int8_acc32`: acc[b, o] += sum_k int32(inp[b, k]) * int32(wgt[k, o]), the
  weight tile stored input-channel major (OIHW16i16o's innermost 16x16 block);
- `alu_{op}_{b}x{o}_acc32`: acc[b, o] = op(acc[b, o], src[b, o]) on int32 accumulator tiles.

Each `impl` returns `(body, reset, update)`; operands are passed as `address_of(buffer[0,..])`,
so storage flattening and virtual-thread slicing rewrite them like any other access.
"""

from __future__ import annotations

from typing import Any

from tensorforge import te
from tensorforge.expr import Buffer, BufferLoad, Var
from tensorforge.expr import construct as _c
from tensorforge.tir import stmt as tir

from .config import VDLAConfig
from .isa import AluOp

SCOPES = {"inp": "inp_buffer", "wgt": "wgt_buffer", "acc": "acc_buffer"}

#: ALU operations written as TE expressions over int32 tiles (the intrinsic's semantics)
ALU_SEMANTICS = {
    AluOp.MIN: lambda a, b: te.min_expr(a, b),
    AluOp.MAX: lambda a, b: te.max_expr(a, b),
    AluOp.ADD: lambda a, b: a + b,
    AluOp.MUL: lambda a, b: a * b,
}


def address_of(buf: Buffer) -> Any:
    """The address of `buf`'s first element (a `vdla.*` call operand)."""
    return _c.call("handle", "address_of", BufferLoad(buf, tuple(_c.const(0) for _ in buf.shape)))


def _bind(t: te.Tensor, mem: str) -> Buffer:
    strides = [Var(f"{t.name}_s{i}") for i in range(len(t.shape) - 1)] + [1]
    return Buffer(t.name, t.shape, t.dtype, SCOPES[mem], strides=strides,
                  elem_offset=Var(f"{t.name}_elem_offset"))


def gemm_desc(target: Any) -> tuple[te.Tensor, dict]:
    c = VDLAConfig.from_target(target)
    inp = te.placeholder((c.batch, c.block_in), "int8", name="inp")
    wgt = te.placeholder((c.block_in, c.block_out), "int8", name="wgt")
    k = te.reduce_axis((0, c.block_in), name="k")
    out = te.compute(
        (c.batch, c.block_out),
        lambda b, o: te.sum(inp[b, k].astype("int32") * wgt[k, o].astype("int32"), axis=k),
        name="gemm")
    return out, {inp: _bind(inp, "inp"), wgt: _bind(wgt, "wgt"), out: _bind(out, "acc")}


def gemm_impl(ins: list[Buffer], outs: list[Buffer], target: Any) -> tuple[Any, Any, Any]:
    inp, wgt = ins
    acc = outs[0]
    update = tir.Evaluate(_c.call("int32", "vdla.gemm", address_of(acc), address_of(inp),
                                  address_of(wgt)))
    reset = tir.Evaluate(_c.call("int32", "vdla.gemm_reset", address_of(acc)))
    return tir.seq(reset, update), reset, update


def _alu_desc(op: AluOp, target: Any) -> tuple[te.Tensor, dict]:
    c = VDLAConfig.from_target(target)
    a = te.placeholder((c.batch, c.block_out), "int32", name="dst")
    b = te.placeholder((c.batch, c.block_out), "int32", name="src")
    out = te.compute((c.batch, c.block_out), lambda i, j: ALU_SEMANTICS[op](a[i, j], b[i, j]),
                     name=f"alu_{op.name.lower()}")
    return out, {a: _bind(a, "acc"), b: _bind(b, "acc"), out: _bind(out, "acc")}


def _alu_impl(op: AluOp, ins: list[Buffer], outs: list[Buffer]) -> Any:
    dst_in, src = ins
    dst = outs[0]
    body = tir.seq(*_alu_calls(op, dst, dst_in, src))
    return body


def _alu_calls(op: AluOp, dst: Buffer, first: Buffer, src: Buffer) -> list[Any]:
    """dst = op(first, src); a copy first when dst is another tile (MUL #0, ADD)."""
    calls = []
    d = address_of(dst)
    if first.data is not dst.data:
        calls.append(alu_call(AluOp.MUL, d, None, 0))
        calls.append(alu_call(AluOp.ADD, d, address_of(first), 0))
    calls.append(alu_call(op, d, address_of(src), 0))
    return [tir.Evaluate(x) for x in calls]


def alu_call(op: AluOp, dst: Any, src: Any, imm: int) -> Any:
    """`vdla.alu(op, use_imm, imm, dst, src)` on `address_of(...)` operands; with no src the
    immediate is the operand."""
    return _c.call("int32", "vdla.alu", int(op), int(src is None), int(imm), dst,
                   src if src is not None else dst)


def alu_min_desc(target: Any) -> Any:
    return _alu_desc(AluOp.MIN, target)


def alu_max_desc(target: Any) -> Any:
    return _alu_desc(AluOp.MAX, target)


def alu_add_desc(target: Any) -> Any:
    return _alu_desc(AluOp.ADD, target)


def alu_mul_desc(target: Any) -> Any:
    return _alu_desc(AluOp.MUL, target)


def alu_min_impl(ins: list[Buffer], outs: list[Buffer], target: Any) -> Any:
    return _alu_impl(AluOp.MIN, ins, outs)


def alu_max_impl(ins: list[Buffer], outs: list[Buffer], target: Any) -> Any:
    return _alu_impl(AluOp.MAX, ins, outs)


def alu_add_impl(ins: list[Buffer], outs: list[Buffer], target: Any) -> Any:
    return _alu_impl(AluOp.ADD, ins, outs)


def alu_mul_impl(ins: list[Buffer], outs: list[Buffer], target: Any) -> Any:
    return _alu_impl(AluOp.MUL, ins, outs)


def intrinsic_names(config: VDLAConfig) -> dict[str, tuple[str, str]]:
    """Registered name -> (desc, impl) references, for `plugin.register_intrinsics`."""
    out = {config.gemm_name: ("tensorforge_vdla.intrin:gemm_desc",
                              "tensorforge_vdla.intrin:gemm_impl")}
    for op in ALU_SEMANTICS:
        low = op.name.lower()
        out[f"alu_{low}_{config.batch}x{config.block_out}_acc32"] = (
            f"tensorforge_vdla.intrin:alu_{low}_desc", f"tensorforge_vdla.intrin:alu_{low}_impl")
    return out
