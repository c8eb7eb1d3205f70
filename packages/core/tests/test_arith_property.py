"""Property tests: every analysis must agree with the reference evaluator on random
expression trees over bound integer variables (hypothesis finds the counterexamples)."""

from __future__ import annotations

import itertools
import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorforge.arith import Analyzer, IntervalSet, eval_interval, evaluate
from tensorforge.arith.evaluate import EvaluationError
from tensorforge.expr import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Broadcast,
    Cast,
    Div,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    Ramp,
    Range,
    Select,
    Sub,
    Var,
)

X, Y, Z, W = Var("x"), Var("y"), Var("z"), Var("w")
RANGES = {X: (-8, 8), Y: (0, 15), Z: (0, 3), W: (-4, 12)}
VARS = list(RANGES)
# TF_ARITH_EXAMPLES=5000 runs a deeper bug hunt than the default CI budget
N_EXAMPLES = int(os.environ.get("TF_ARITH_EXAMPLES", "100"))
SETTINGS = settings(max_examples=N_EXAMPLES, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def c(v: int) -> IntImm:
    return IntImm(v, "int32")


@st.composite
def int_expr(draw, depth: int = 4, var_div: bool = True):
    """A random int32 expression; divisors are nonzero constants or `z + k` (z >= 0, k >= 1)."""
    if depth <= 0 or draw(st.integers(0, 9)) < 2:
        if draw(st.booleans()):
            return draw(st.sampled_from(VARS))
        return c(draw(st.integers(-10, 10)))
    sub = int_expr(depth - 1, var_div)
    kind = draw(st.sampled_from(
        ["add", "add", "sub", "mul", "mulc", "div", "mod", "min", "max", "select", "split",
         "tdiv", "tmod", "recombine", "residue", "let", "cast"]))
    if kind == "add":
        return Add(draw(sub), draw(sub))
    if kind == "sub":
        return Sub(draw(sub), draw(sub))
    if kind == "mul":
        return Mul(draw(sub), draw(sub))
    if kind == "mulc":
        return Mul(draw(sub), c(draw(st.sampled_from([2, 3, 4, 8, 16, -1, -2]))))
    if kind in ("div", "mod", "tdiv", "tmod", "split", "recombine", "residue"):
        if var_div and draw(st.integers(0, 4)) == 0:
            divisor = Add(Z, c(draw(st.integers(1, 3))))
        else:
            divisor = c(draw(st.sampled_from([1, 2, 3, 4, 8, 16, 32, -2, -3])))
        a = draw(sub)
        if kind == "split":  # (a % u) // l: the shape split loops produce
            lo = draw(st.sampled_from([1, 2, 4]))
            return FloorDiv(FloorMod(a, c(lo * draw(st.sampled_from([2, 4])))), c(lo))
        if kind == "residue":  # a - a % d, or a % (d*k) - a % d
            if draw(st.booleans()):
                return Sub(a, FloorMod(a, divisor))
            return Sub(FloorMod(a, Mul(divisor, c(2))), FloorMod(a, divisor))
        if kind == "recombine":  # (a // d) * d + a % d
            return Add(Mul(FloorDiv(a, divisor), divisor), FloorMod(a, divisor))
        cls = {"div": FloorDiv, "mod": FloorMod, "tdiv": Div, "tmod": Mod}[kind]
        return cls(a, divisor)
    if kind == "let":  # a fresh variable used twice, so it is not inlined
        v = Var("l")
        return Let(v, draw(sub), Add(Mul(v, draw(sub)), FloorMod(v, c(4))))
    if kind == "cast":
        a = draw(sub)
        if draw(st.booleans()):
            return Cast("int32", Cast("int8", a))
        return Cast("int32", Add(Cast("int64", a), IntImm(draw(st.integers(-3, 3)), "int64")))
    if kind == "min":
        return Min(draw(sub), draw(sub))
    if kind == "max":
        return Max(draw(sub), draw(sub))
    return Select(draw(bool_expr(depth - 1, var_div)), draw(sub), draw(sub))


@st.composite
def bool_expr(draw, depth: int = 3, var_div: bool = True):
    kind = draw(st.sampled_from(["cmp", "cmp", "cmp", "and", "or", "not"]))
    if depth <= 0 or kind == "cmp":
        cls = draw(st.sampled_from([LT, LE, GT, GE, EQ, NE]))
        sub = int_expr(max(depth - 1, 0), var_div)
        return cls(draw(sub), draw(sub))
    sub = bool_expr(depth - 1, var_div)
    if kind == "and":
        return And(draw(sub), draw(sub))
    if kind == "or":
        return Or(draw(sub), draw(sub))
    return Not(draw(sub))


def envs(rnd: random.Random, ranges: dict[Var, tuple[int, int]], count: int = 16):
    """Corners of the box plus random points."""
    keys = list(ranges)
    for corner in itertools.product(*[(ranges[k][0], ranges[k][1]) for k in keys]):
        yield dict(zip(keys, corner))
    for _ in range(count):
        yield {k: rnd.randint(*ranges[k]) for k in keys}


def value(e, env):
    try:
        return evaluate(e, env)
    except EvaluationError:
        return None


def bound_analyzer(ranges=RANGES) -> Analyzer:
    ana = Analyzer()
    for v, (lo, hi) in ranges.items():
        ana.bind(v, (lo, hi - lo + 1))
    return ana


@SETTINGS
@given(int_expr(var_div=False), st.randoms(use_true_random=False))
def test_simplify_preserves_value_without_bounds(e, rnd):
    s = Analyzer().simplify(e)
    wide = {v: (-40, 40) for v in VARS}
    for env in envs(rnd, wide, 16):
        ref = value(e, env)
        if ref is not None:
            assert evaluate(s, env) == ref, f"{e}  ->  {s}  at {env}"


@SETTINGS
@given(int_expr(), st.randoms(use_true_random=False))
def test_simplify_preserves_value_with_bounds(e, rnd):
    ana = bound_analyzer()
    s = ana.simplify(e)
    for env in envs(rnd, RANGES):
        ref = value(e, env)
        if ref is not None:
            assert evaluate(s, env) == ref, f"{e}  ->  {s}  at {env}"


@SETTINGS
@given(bool_expr(), st.randoms(use_true_random=False))
def test_simplify_conditions_and_can_prove(e, rnd):
    ana = bound_analyzer()
    s = ana.simplify(e)
    proven = ana.can_prove(e)
    disproven = ana.can_prove(Not(e))
    for env in envs(rnd, RANGES):
        ref = value(e, env)
        if ref is None:
            continue
        assert evaluate(s, env) == ref, f"{e}  ->  {s}  at {env}"
        if proven:
            assert ref, f"can_prove({e}) but false at {env}"
        if disproven:
            assert not ref, f"can_prove(!({e})) but true at {env}"


@SETTINGS
@given(int_expr(), st.randoms(use_true_random=False))
def test_const_int_bound_contains_values(e, rnd):
    ana = bound_analyzer()
    b = ana.const_int_bound(e)
    bs = ana.const_int_bound(ana.simplify(e))
    for env in envs(rnd, RANGES):
        ref = value(e, env)
        if ref is not None:
            assert b.min_value <= ref <= b.max_value, f"{e}: {ref} not in {b} at {env}"
            assert bs.min_value <= ref <= bs.max_value, f"{e}: {ref} not in {bs} at {env}"


@SETTINGS
@given(int_expr(), st.randoms(use_true_random=False))
def test_modular_set_consistent(e, rnd):
    ana = bound_analyzer()
    m = ana.modular_set(e)
    ms = ana.modular_set(ana.simplify(e))
    for env in envs(rnd, RANGES):
        ref = value(e, env)
        if ref is not None:
            assert m.contains(ref), f"{e}: {ref} not in {m} at {env}"
            assert ms.contains(ref), f"{e}: {ref} not in {ms} at {env}"


@SETTINGS
@given(int_expr(depth=3), st.sampled_from([[X], [Y, Z], [X, W], [Y]]),
       st.randoms(use_true_random=False))
def test_eval_interval_contains_values(e, dom_vars, rnd):
    # the dom vars range over sub-intervals; the other vars stay symbolic (fixed per env)
    dom_ranges = {v: (RANGES[v][0] + 1, RANGES[v][1] - 2) for v in dom_vars}
    dom = {v: IntervalSet(c(lo), c(hi)) for v, (lo, hi) in dom_ranges.items()}
    ana = Analyzer()
    iv = eval_interval(e, dom, ana)
    ranges = {**RANGES, **dom_ranges}
    for env in envs(rnd, ranges):
        ref = value(e, env)
        if ref is None:
            continue
        if iv.min_value is not None:
            lo = value(iv.min_value, env)
            if lo is not None:
                assert lo <= ref, f"{e}: {ref} < min {iv} at {env}"
        if iv.max_value is not None:
            hi = value(iv.max_value, env)
            if hi is not None:
                assert ref <= hi, f"{e}: {ref} > max {iv} at {env}"


@st.composite
def vec_expr(draw, lanes: int = 4):
    """Ramp / Broadcast arithmetic over the bound vars."""
    base = draw(int_expr(depth=2, var_div=False))
    stride = c(draw(st.sampled_from([0, 1, 2, -1, 4])))
    v = Ramp(base, stride, lanes)
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["add", "sub", "mul", "div", "mod", "cmp", "min"]))
        other = Broadcast(draw(int_expr(depth=1, var_div=False)), lanes)
        if draw(st.booleans()):
            other = Ramp(draw(int_expr(depth=1, var_div=False)), c(draw(st.integers(-2, 2))),
                         lanes)
        if op == "add":
            v = Add(v, other)
        elif op == "sub":
            v = Sub(other, v)
        elif op == "mul":
            v = Mul(v, Broadcast(c(draw(st.sampled_from([2, 3, -1]))), lanes))
        elif op == "div":
            v = FloorDiv(v, Broadcast(c(draw(st.sampled_from([2, 4, 8]))), lanes))
        elif op == "mod":
            v = FloorMod(v, Broadcast(c(draw(st.sampled_from([2, 4, 8]))), lanes))
        elif op == "min":
            v = Min(v, other)
        else:
            return draw(st.sampled_from([LT, LE, EQ, NE, GE]))(v, other)
    return v


@SETTINGS
@given(vec_expr(), st.randoms(use_true_random=False))
def test_vector_simplify_preserves_lanes(e, rnd):
    ana = bound_analyzer()
    s = ana.simplify(e)
    for env in envs(rnd, RANGES, 12):
        ref = value(e, env)
        if ref is not None:
            got = evaluate(s, env)
            if not isinstance(got, tuple):
                got = (got,) * len(ref)
            assert got == ref, f"{e}  ->  {s}  at {env}"


@settings(max_examples=60, deadline=None)
@given(int_expr(depth=3), st.randoms(use_true_random=False))
def test_constraint_scoped_simplify(e, rnd):
    """Simplification under `with_constraint(x < y)` holds wherever the constraint holds."""
    ana = bound_analyzer()
    cond = LT(X, Sub(Y, c(4)))
    with ana.with_constraint(cond):
        s = ana.simplify(e)
    for env in envs(rnd, RANGES):
        if not evaluate(cond, env):
            continue
        ref = value(e, env)
        if ref is not None:
            assert evaluate(s, env) == ref, f"{e}  ->  {s}  at {env}"


@pytest.mark.parametrize("seed", range(3))
def test_idempotent_on_index_patterns(seed):
    rnd = random.Random(seed)
    ana = bound_analyzer()
    for _ in range(30):
        e = Add(Mul(X, c(rnd.choice([4, 8, 16]))), FloorMod(Y, c(rnd.choice([2, 4, 8]))))
        e = FloorDiv(e, c(rnd.choice([2, 4, 8])))
        s = ana.simplify(e)
        assert str(ana.simplify(s)) == str(s)


@SETTINGS
@given(int_expr(depth=3), bool_expr(depth=2), st.randoms(use_true_random=False))
def test_symbolic_loop_ranges(e, cond, rnd):
    """y ranges over [0, w + 5): the symbolic extent path of the analyzer stays sound."""
    ana = Analyzer()
    for v in (X, Z, W):
        lo, hi = RANGES[v]
        ana.bind(v, (lo, hi - lo + 1))
    ana.bind(Y, Range(c(0), Add(W, c(5))))
    s = ana.simplify(e)
    sc = ana.simplify(cond)
    proven = ana.can_prove(cond)
    wide = {**RANGES, Y: (0, 16)}
    for env in envs(rnd, wide, 40):
        if not env[Y] < env[W] + 5:
            continue
        ref = value(e, env)
        if ref is not None:
            assert evaluate(s, env) == ref, f"{e}  ->  {s}  at {env}"
        ref = value(cond, env)
        if ref is not None:
            assert evaluate(sc, env) == ref, f"{cond}  ->  {sc}  at {env}"
            assert ref or not proven, f"can_prove({cond}) but false at {env}"
