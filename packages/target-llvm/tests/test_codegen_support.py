"""Helpers to hand-build flattened PrimFuncs for the codegen tests (no tests here).

The other test_codegen*.py files import this module by path (pytest runs with
--import-mode=importlib, where test files cannot import each other by name)."""

from __future__ import annotations

import types
from typing import Any

from tensorforge.expr import Buffer, BufferLoad, IntImm, Ramp, Var
from tensorforge.tir import BufferStore, For, PrimFunc
from tensorforge_llvm.codegen import build


def target(**opts: Any) -> Any:
    """Any object with an `.options` dict is a target for the code generator."""
    return types.SimpleNamespace(options=dict(opts))


def buf(name: str, n: int, dtype: str = "float32", scope: str = "global") -> Buffer:
    return Buffer(name, (n,), dtype, scope)


def ramp(base: Any, lanes: int, stride: int = 1) -> Ramp:
    return Ramp(base, IntImm(stride), lanes)


def load(b: Buffer, idx: Any) -> BufferLoad:
    return BufferLoad(b, (idx,))


def store(b: Buffer, value: Any, idx: Any) -> BufferStore:
    return BufferStore(b, value, (idx,))


def loop(var: Var, extent: Any, body: Any, kind: str = "serial", start: int = 0) -> For:
    ext = IntImm(extent) if isinstance(extent, int) else extent
    return For(var, IntImm(start, var.dtype), ext, kind, body)


def elementwise(name: str, n: int, fn: Any, in_dtype: str = "float32",
                out_dtype: str | None = None, n_in: int = 1) -> PrimFunc:
    """`out[i] = fn(in0[i], in1[i], ...)` as a scalar loop."""
    ins = [buf(f"X{k}", n, in_dtype) for k in range(n_in)]
    out = buf("Y", n, out_dtype or in_dtype)
    i = Var("i")
    body = store(out, fn(*[load(b, i) for b in ins]), i)
    return PrimFunc(name, (*ins, out), loop(i, n, body))


def compile1(func: PrimFunc, **opts: Any) -> Any:
    return build([func], target(**opts))
