"""Readable loop IR, Python-like: one statement a line, two-space indentation."""

from __future__ import annotations

from ..expr import Buffer, Var
from ..expr.printer import expr_str
from . import stmt as s


def stmt_str(st: s.Stmt) -> str:
    out: list[str] = []
    _stmt(st, 0, out)
    return "\n".join(out)


def func_str(f: s.PrimFunc) -> str:
    params = []
    for p in f.params:
        if isinstance(p, Buffer):
            shape = ", ".join(expr_str(x) for x in p.shape)
            params.append(f"{p.name}: Buffer[({shape}), {p.dtype}]")
        else:
            params.append(f"{p.name}: {p.dtype}")
    head = f"def {f.name}({', '.join(params)}):"
    lines = [head]
    _stmt(f.body, 1, lines)
    return "\n".join(lines)


def _idx(indices: tuple) -> str:
    return ", ".join(expr_str(i) for i in indices)


def _stmt(st: s.Stmt, d: int, out: list[str]) -> None:
    pad = "  " * d
    t = type(st)
    if t is s.SeqStmt:
        for x in st.seq:
            _stmt(x, d, out)
    elif t is s.For:
        kind = "" if st.kind == "serial" else f"  # {st.kind}"
        if st.thread_tag:
            kind = f"  # {st.kind} {st.thread_tag}"
        rng = expr_str(st.extent) if _is_zero(st.min) else (
            f"{expr_str(st.min)}, {expr_str(st.min + st.extent)}"
        )
        out.append(f"{pad}for {st.loop_var.name} in range({rng}):{kind}")
        _stmt(st.body, d + 1, out)
    elif t is s.BufferStore:
        out.append(f"{pad}{st.buffer.name}[{_idx(st.indices)}] = {expr_str(st.value)}")
    elif t is s.Allocate:
        b = st.buffer
        out.append(
            f"{pad}{b.name} = allocate(({_idx(b.shape)}), {b.dtype}, {b.scope!r})"
        )
        _stmt(st.body, d, out)
    elif t is s.IfThenElse:
        out.append(f"{pad}if {expr_str(st.condition)}:")
        _stmt(st.then_case, d + 1, out)
        if st.else_case is not None:
            out.append(f"{pad}else:")
            _stmt(st.else_case, d + 1, out)
    elif t is s.LetStmt:
        out.append(f"{pad}{st.var.name} = {expr_str(st.value)}")
        _stmt(st.body, d, out)
    elif t is s.AttrStmt:
        node = st.node.name if isinstance(st.node, (Var, Buffer)) else getattr(
            st.node, "name", str(st.node) if st.node is not None else ""
        )
        out.append(f"{pad}attr [{node}] {st.key} = {expr_str(st.value)}")
        _stmt(st.body, d, out)
    elif t is s.AssertStmt:
        out.append(f"{pad}assert {expr_str(st.condition)}, {st.message!r}")
        _stmt(st.body, d, out)
    elif t is s.Evaluate:
        out.append(f"{pad}{expr_str(st.value)}")
    else:
        out.append(f"{pad}{st!r}")


def _is_zero(e: object) -> bool:
    from ..expr import IntImm

    return isinstance(e, IntImm) and e.value == 0
