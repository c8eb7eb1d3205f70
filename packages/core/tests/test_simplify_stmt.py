"""The statement simplifier: loop-range-aware expression simplification and removal of dead
or trivial statements, checked by rule and against a tiny loop-IR interpreter."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorforge.arith import Analyzer, evaluate
from tensorforge.arith.evaluate import EvaluationError
from tensorforge.expr import (
    LT,
    Add,
    Buffer,
    Call,
    FloorDiv,
    FloorMod,
    IntImm,
    Min,
    Mul,
    Not,
    Range,
    Sub,
    Var,
)
from tensorforge.tir import (
    NOOP,
    AttrStmt,
    BufferStore,
    Evaluate,
    For,
    IfThenElse,
    LetStmt,
    PrimFunc,
    SeqStmt,
    seq,
)
from tensorforge.tir.transform.simplify import simplify, simplify_stmt


def c(v: int) -> IntImm:
    return IntImm(v, "int32")


A = Buffer("A", (64,), "int32")


def store(idx, value=None) -> BufferStore:
    return BufferStore(A, value if value is not None else c(1), (idx,))


def loop(v: Var, extent, body, mn=0) -> For:
    ext = extent if not isinstance(extent, int) else c(extent)
    return For(v, c(mn) if isinstance(mn, int) else mn, ext, "serial", body)


# an interpreter: the list of (index, value) stores a statement performs, in order ----------
def run(stmt, env=None, out=None):
    env = dict(env or {})
    out = [] if out is None else out
    t = type(stmt)
    if t is SeqStmt:
        for s in stmt.seq:
            run(s, env, out)
    elif t is For:
        lo, ext = evaluate(stmt.min, env), evaluate(stmt.extent, env)
        for i in range(lo, lo + ext):
            run(stmt.body, {**env, stmt.loop_var: i}, out)
    elif t is IfThenElse:
        if evaluate(stmt.condition, env):
            run(stmt.then_case, env, out)
        elif stmt.else_case is not None:
            run(stmt.else_case, env, out)
    elif t is LetStmt:
        run(stmt.body, {**env, stmt.var: evaluate(stmt.value, env)}, out)
    elif t is AttrStmt:
        run(stmt.body, env, out)
    elif t is BufferStore:
        out.append((stmt.buffer.name, tuple(evaluate(i, env) for i in stmt.indices),
                    evaluate(stmt.value, env)))
    elif t is Evaluate:
        evaluate(stmt.value, env)
    else:
        raise TypeError(t)
    return out


# rules ---------------------------------------------------------------------------------------
def test_loop_of_extent_one_is_substituted():
    i, j = Var("i"), Var("j")
    s = loop(i, 4, loop(j, 1, store(i * 4 + j), mn=2))
    r = simplify_stmt(s)
    assert str(r) == "for i in range(4):\n  A[i * 4 + 2] = 1"


def test_empty_and_negative_loops_vanish():
    i = Var("i")
    assert simplify_stmt(loop(i, 0, store(i))) is NOOP
    assert simplify_stmt(loop(i, -3, store(i))) is NOOP
    n = Var("n")
    a = Analyzer()
    a.bind(n, (-5, 3))  # n in [-5, -3]
    assert simplify_stmt(loop(i, n, store(i)), a) is NOOP
    assert simplify_stmt(loop(i, 4, Evaluate(c(0)))) is NOOP


def test_conditions_decided_by_loop_ranges():
    io, ii = Var("io"), Var("ii")
    guard = IfThenElse(io * 32 + ii < 128, store((io * 32 + ii) // 2), store(c(0), c(9)))
    s = loop(io, 4, loop(ii, 32, guard))
    r = simplify_stmt(s)
    assert str(r) == "for io in range(4):\n  for ii in range(32):\n    A[io * 16 + ii // 2] = 1"
    false_guard = loop(ii, 32, IfThenElse(ii >= 32, store(ii)))
    assert simplify_stmt(false_guard) is NOOP
    with_else = loop(ii, 32, IfThenElse(ii >= 32, store(ii), store(ii + 1)))
    assert str(simplify_stmt(with_else)) == "for ii in range(32):\n  A[ii + 1] = 1"


def test_likely_and_symbolic_extent():
    i, n = Var("i"), Var("n")
    likely = Call("bool", "likely", (LT(i, n),))
    s = loop(i, n, IfThenElse(likely, store(i)))
    assert str(simplify_stmt(s)) == "for i in range(n):\n  A[i] = 1"
    s2 = loop(i, 8, IfThenElse(Call("bool", "likely", (LT(i, c(6)),)), store(i)))
    assert "if likely(i < 6):" in str(simplify_stmt(s2))


def test_branch_conditions_are_known_inside():
    i = Var("i")
    s = loop(i, 16, IfThenElse(i < 8, store(i % 8), store(i - 8 + (i // 8) * 0, c(2))))
    r = simplify_stmt(s)
    assert str(r) == (
        "for i in range(16):\n  if i < 8:\n    A[i] = 1\n  else:\n    A[i - 8] = 2")
    # inside the else branch, i >= 8 is known
    s = loop(i, 16, IfThenElse(i < 8, store(i), IfThenElse(i >= 8, store(i // 8, c(3)))))
    assert str(simplify_stmt(s)) == (
        "for i in range(16):\n  if i < 8:\n    A[i] = 1\n  else:\n    A[1] = 3")


def test_empty_then_branch_flips_condition():
    i = Var("i")
    s = loop(i, 16, IfThenElse(i < 8, Evaluate(c(0)), store(i)))
    assert str(simplify_stmt(s)) == "for i in range(16):\n  if i >= 8:\n    A[i] = 1"


def test_let_statements():
    i, t, u = Var("i"), Var("t"), Var("u")
    s = loop(i, 8, LetStmt(t, i * 2, IfThenElse(t < 16, store(t))))
    assert str(simplify_stmt(s)) == "for i in range(8):\n  t = i * 2\n  A[t] = 1"
    s = loop(i, 8, LetStmt(u, i, store(u + 1)))
    assert str(simplify_stmt(s)) == "for i in range(8):\n  A[i + 1] = 1"


def test_seq_flattening_and_noops():
    i = Var("i")
    inner = SeqStmt((store(c(1)), Evaluate(c(0)), SeqStmt((store(c(2)), store(c(3))))))
    s = SeqStmt((inner, Evaluate(c(7)), loop(i, 0, store(i))))
    r = simplify_stmt(s)
    assert isinstance(r, SeqStmt) and len(r.seq) == 3
    assert all(isinstance(x, BufferStore) for x in r.seq)
    assert simplify_stmt(seq(Evaluate(c(0)))) is NOOP


def test_thread_extent_binds_the_thread_var():
    tx = Var("threadIdx.x")
    s = AttrStmt(tx, "thread_extent", c(64), IfThenElse(tx < 64, store(tx)))
    assert str(simplify_stmt(s)) == "attr [threadIdx.x] thread_extent = 64\nA[threadIdx.x] = 1"


def test_unchanged_statement_keeps_identity():
    i = Var("i")
    s = loop(i, 8, store(i * 2))
    assert simplify_stmt(s) is s


def test_primfunc_pass():
    i = Var("i")
    f = PrimFunc("f", (A,), loop(i, 8, store((i * 4 + 1) // 4)))
    g = simplify(f)
    assert isinstance(g, PrimFunc) and g.name == "f"
    assert str(g.body) == "for i in range(8):\n  A[i] = 1"
    assert simplify(g) is g


# property: simplified programs store the same values at the same places, in order -----------
@st.composite
def expr_of(draw, vs, depth=2):
    if depth == 0 or not vs or draw(st.integers(0, 3)) == 0:
        if vs and draw(st.booleans()):
            return draw(st.sampled_from(vs))
        return c(draw(st.integers(-4, 8)))
    a = draw(expr_of(vs, depth - 1))
    b = draw(expr_of(vs, depth - 1))
    k = draw(st.sampled_from(["add", "sub", "mul", "div", "mod", "min"]))
    if k == "add":
        return Add(a, b)
    if k == "sub":
        return Sub(a, b)
    if k == "mul":
        return Mul(a, c(draw(st.sampled_from([2, 3, 4]))))
    if k == "div":
        return FloorDiv(a, c(draw(st.sampled_from([2, 4]))))
    if k == "mod":
        return FloorMod(a, c(draw(st.sampled_from([2, 4]))))
    return Min(a, b)


@st.composite
def stmt_of(draw, vs, depth=3):
    kind = draw(st.sampled_from(["for", "for", "if", "let", "seq", "store"]))
    if depth == 0 or kind == "store":
        return BufferStore(A, draw(expr_of(vs)), (draw(expr_of(vs)),))
    if kind == "for":
        v = Var(f"i{len(vs)}")
        mn = draw(st.one_of(st.integers(-2, 2).map(c), expr_of(vs, 1)))
        ext = draw(st.one_of(st.integers(-1, 4).map(c), expr_of(vs, 1)))
        return For(v, mn, Min(ext, c(5)), "serial", draw(stmt_of(vs + [v], depth - 1)))
    if kind == "if":
        cond = LT(draw(expr_of(vs)), draw(expr_of(vs)))
        if draw(st.booleans()):
            cond = Not(cond)
        els = draw(st.one_of(st.none(), stmt_of(vs, depth - 1)))
        return IfThenElse(cond, draw(stmt_of(vs, depth - 1)), els)
    if kind == "let":
        v = Var(f"t{len(vs)}")
        return LetStmt(v, draw(expr_of(vs)), draw(stmt_of(vs + [v], depth - 1)))
    return SeqStmt((draw(stmt_of(vs, depth - 1)), draw(stmt_of(vs, depth - 1))))


@settings(max_examples=int(os.environ.get("TF_ARITH_EXAMPLES", "100")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(stmt_of([]))
def test_simplified_program_performs_the_same_stores(s):
    try:
        ref = run(s)
    except EvaluationError:
        return
    r = simplify_stmt(s)
    assert run(r) == ref, f"\n{s}\n---\n{r}"


def test_bound_loop_range_from_analyzer():
    i, n = Var("i"), Var("n")
    a = Analyzer()
    a.bind(n, Range(c(4), c(4)))  # n in [4, 7]
    s = loop(i, n, IfThenElse(i < 8, store(i)))
    assert str(simplify_stmt(s, a)) == "for i in range(n):\n  A[i] = 1"
