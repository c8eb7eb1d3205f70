"""Unit tests of the integer analyzer: the rewrites, their printed forms, bounds, intervals,
modular sets, proofs, constraints and linear decomposition."""

from __future__ import annotations

import math

import pytest

from tensorforge import arith
from tensorforge.arith import (
    Analyzer,
    ConstIntBound,
    IntervalSet,
    ModularSet,
    detect_linear_equation,
    eval_interval,
    evaluate,
)
from tensorforge.expr import (
    Broadcast,
    Call,
    Cast,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Ramp,
    Range,
    Select,
    SizeVar,
    Var,
    const,
    max_,
    min_,
    select,
    structural_equal,
    truncdiv,
    truncmod,
)


def c(v: int, dtype: str = "int32") -> IntImm:
    return IntImm(v, dtype)


@pytest.fixture
def v():
    return {name: Var(name) for name in ("x", "y", "z", "io", "ii", "i", "j", "k", "n")}


@pytest.fixture
def ana(v):
    a = Analyzer()
    a.bind(v["ii"], Range.from_min_extent(0, 32))
    return a


def s(a: Analyzer, e) -> str:
    return str(a.simplify(e))


# canonical sums ---------------------------------------------------------------------------
def test_linear_forms_combine_and_print_outer_first(ana, v):
    x, y, io, ii = v["x"], v["y"], v["io"], v["ii"]
    assert s(ana, ii + io * 32) == "io * 32 + ii"
    assert s(ana, x + y - x) == "y"
    assert s(ana, x * 2 + 3 + x * 3 - 1) == "x * 5 + 2"
    assert s(ana, (x + 1) * 4 - 4) == "x * 4"
    assert s(ana, x - y * 2) == "x - y * 2"
    assert s(ana, 5 - x) == "5 - x"
    assert s(ana, c(0) - x) == "x * -1"
    assert s(ana, x - x) == "0"
    assert s(ana, v["i"] * 64 + v["k"] + v["j"] * 8) == "i * 64 + j * 8 + k"


def test_symbolic_strides_print_first(ana, v):
    i, j, n = v["i"], v["j"], v["n"]
    assert s(ana, j * 8 + i * n + 1) == "i * n + j * 8 + 1"


def test_residue_forms(ana, v):
    x, y = v["x"], v["y"]
    assert s(ana, x - x % 4) == "x // 4 * 4"
    assert s(ana, x % 16 - x % 4) == "x % 16 // 4 * 4"
    assert s(ana, x // 4 - x % 16 // 4) == "x // 16 * 4"
    assert s(ana, (x + y) - (x + y) % 8 + 3) == "(x + y) // 8 * 8 + 3"


def test_first_appearance_breaks_ties(ana, v):
    x, y, z = v["x"], v["y"], v["z"]
    assert s(ana, x + y + z) == "x + y + z"
    assert s(ana, z + x + y) == "z + x + y"


def test_nonlinear_products_are_terms(ana, v):
    x, y = v["x"], v["y"]
    assert s(ana, x * y + x * y) == "x * y * 2"
    assert s(ana, x * y - x * y) == "0"
    assert s(ana, (x * 2) * (y * 3)) == "x * y * 6"


def test_split_fuse_indices(ana, v):
    x, y, io, ii = v["x"], v["y"], v["io"], v["ii"]
    assert s(ana, (io * 32 + ii) // 32) == "io"
    assert s(ana, (io * 32 + ii) % 32) == "ii"
    assert s(ana, (x * 8 + 3) % 4) == "3"
    assert s(ana, (x * 8 + y) // 8) == "x + y // 8"
    assert s(ana, (x // 4) * 4 + x % 4) == "x"
    assert s(ana, x // 1) == "x"
    assert s(ana, x % 1) == "0"
    assert s(ana, (x // 4) // 8) == "x // 32"
    assert s(ana, ii % 32) == "ii"
    assert s(ana, ii // 32) == "0"
    assert s(ana, (x % 16) // 4 * 4 + x % 4) == "x % 16"
    assert s(ana, x // 16 * 16 + x % 16 // 4 * 4 + x % 4) == "x"
    assert s(ana, (x * 4 + y * 2) // 2) == "x * 2 + y"
    assert s(ana, (x * 6 + 4) // 2 % 3) == "2"
    assert s(ana, (x * 9) // 8) == "x + x // 8"


def test_fused_loop_roundtrip():
    i, j, f = Var("i"), Var("j"), Var("f")
    a = Analyzer()
    a.bind(i, (0, 7))
    a.bind(j, (0, 13))
    fused = i * 13 + j
    assert s(a, fused // 13) == "i"
    assert s(a, fused % 13) == "j"
    a.bind(f, (0, 91))
    assert s(a, f // 13 * 13 + f % 13) == "f"


def test_negative_divisors_and_truncation(ana, v):
    x, ii = v["x"], v["ii"]
    assert s(ana, (x // -3) * -3 + x % -3) == "x"
    assert s(ana, truncdiv(ii, 4)) == "ii // 4"
    assert s(ana, truncmod(ii + 4, 4)) == "ii % 4"
    assert s(ana, truncdiv(x, 4)) == "truncdiv(x, 4)"  # x may be negative: stays
    assert s(ana, truncdiv(c(-7), c(2))) == "-3"
    assert s(ana, truncmod(c(-7), c(2))) == "-1"


def test_symbolic_divisor(ana, v):
    x, n, ii = v["x"], v["n"], v["ii"]
    assert s(ana, x // x) == "1"
    assert s(ana, x % x) == "0"
    a = Analyzer()
    a.bind(n, (33, 100))
    a.bind(ii, (0, 32))
    assert s(a, ii // n) == "0"
    assert s(a, ii % n) == "ii"
    assert s(a, x // n) == "x // n"


# min / max / select / comparisons -----------------------------------------------------------
def test_min_max(ana, v):
    x, y, ii = v["x"], v["y"], v["ii"]
    assert s(ana, min_(x, x + 1)) == "x"
    assert s(ana, max_(x, x + 1)) == "x + 1"
    assert s(ana, min_(ii, 40)) == "ii"
    assert s(ana, max_(ii, 40)) == "40"
    assert s(ana, min_(ii, 16)) == "min(ii, 16)"
    assert s(ana, min_(x, max_(x, y))) == "x"
    assert s(ana, max_(min_(x, y), x)) == "x"
    assert s(ana, min_(min_(x, 8), 4)) == "min(x, 4)"
    assert s(ana, min_(x * 8 + 8, x * 8 + y)) == "x * 8 + min(8, y)"
    assert s(ana, Min(c(3), c(5))) == "3"


def test_select_and_logic(ana, v):
    x, y, ii = v["x"], v["y"], v["ii"]
    assert s(ana, select(ii < 32, x, y)) == "x"
    assert s(ana, select(ii >= 32, x, y)) == "y"
    assert s(ana, Select(x < y, x + 1, 1 + x)) == "x + 1"
    assert s(ana, (x < y) & (ii < 32)) == "x < y"
    assert s(ana, (x < y) | (ii < 32)) == "True"
    assert s(ana, ~(x < y)) == "x >= y"
    assert s(ana, (x < y) & ~(x < y)) == "False"
    assert s(ana, (x < y) | (x >= y)) == "True"
    assert s(ana, ~~(x < y)) == "x < y"


def test_comparisons(ana, v):
    x, y, ii = v["x"], v["y"], v["ii"]
    assert s(ana, ii < 32) == "True"
    assert s(ana, ii < 31) == "ii < 31"
    assert s(ana, ii >= 0) == "True"
    assert s(ana, x + 1 < x + 2) == "True"
    assert s(ana, x * 2 == x * 2 + 1) == "False"
    assert s(ana, x * 2 != 2 * x + 1) == "True"
    assert s(ana, x * 4 + 2 == y * 4) == "False"  # parity of 2 mod 4
    assert s(ana, x + y < y + 5) == "x < 5"
    assert s(ana, x + 3 < y + 5) == "x < y + 2"


def test_cast_let_calls(ana, v):
    x, ii = v["x"], v["ii"]
    assert s(ana, Cast("int32", Cast("int8", c(300)))) == "44"
    assert s(ana, Cast("float32", c(3))) == "3.0f"
    assert s(ana, Cast("int32", FloatImm(-2.7))) == "-2"
    assert s(ana, Cast("int32", x)) == "x"
    lv = Var("l")
    assert s(ana, Let(lv, c(4), lv * x)) == "x * 4"
    assert s(ana, Let(lv, x + 1, lv * 2)) == "x * 2 + 2"
    kept = ana.simplify(Let(lv, x * x, lv * lv + lv))
    assert isinstance(kept, Let)
    assert s(ana, Call("bool", "likely", (ii < 32,))) == "True"
    assert s(ana, Call("bool", "likely", (x < 3,))) == "likely(x < 3)"
    assert s(ana, Call("int32", "if_then_else", (ii < 40, x, ii))) == "x"


def test_floats_are_only_folded(v):
    a = Analyzer()
    f = Var("f", "float32")
    e = (f + FloatImm(1.0)) - FloatImm(1.0)
    assert structural_equal(a.simplify(e), e)  # no reassociation
    assert s(a, FloatImm(1.5) * FloatImm(2.0)) == "3.0f"
    assert s(a, Max(FloatImm(1.5), FloatImm(2.0))) == "2.0f"


# vectors ------------------------------------------------------------------------------------
def test_vector_forms(ana, v):
    x, y = v["x"], v["y"]
    r = Ramp(x * 8, c(1), 8)
    assert s(ana, r // Broadcast(c(8), 8)) == "x8(x)"
    assert s(ana, r % Broadcast(c(8), 8)) == "ramp(0, 1, 8)"
    assert s(ana, Ramp(x, c(1), 4) + Broadcast(y, 4)) == "ramp(x + y, 1, 4)"
    assert s(ana, Ramp(x, c(1), 4) * Broadcast(c(3), 4)) == "ramp(x * 3, 3, 4)"
    assert s(ana, Broadcast(x, 4) + Broadcast(y, 4)) == "x4(x + y)"
    assert s(ana, Ramp(x, c(2), 4) - Ramp(x, c(1), 4)) == "ramp(0, 1, 4)"
    assert s(ana, Ramp(x * 8, c(8), 4) // Broadcast(c(8), 4)) == "ramp(x, 1, 4)"
    crossing = Ramp(x * 8 + 4, c(1), 8) // Broadcast(c(8), 8)  # lanes span two blocks
    assert s(ana, crossing) == "ramp(x * 8 + 4, 1, 8) // x8(8)"
    assert s(ana, Ramp(x * 8 + 4, c(1), 4) // Broadcast(c(8), 4)) == "x4(x)"
    assert s(ana, Ramp(x * 8 + 4, c(1), 4) % Broadcast(c(8), 4)) == "ramp(4, 1, 4)"
    assert s(ana, Ramp(c(0), c(0), 4)) == "x4(0)"


def test_vector_comparisons(ana, v):
    x, ii = v["x"], v["ii"]
    io = v["io"]
    lanes = Ramp(ii - ii % 4, c(1), 4)
    assert s(ana, lanes < Broadcast(c(32), 4)) == "x4(True)"
    assert s(ana, lanes >= Broadcast(c(32), 4)) == "x4(False)"
    r = Ramp(io * 4, c(1), 4)
    assert s(ana, r < Broadcast(io * 4 + 4, 4)) == "x4(True)"
    assert s(ana, r < Broadcast(io * 4 + 2, 4)) == "ramp(io * 4, 1, 4) < x4(io * 4 + 2)"
    assert s(ana, Broadcast(x, 4) < Broadcast(x + 1, 4)) == "x4(True)"


# bounds -------------------------------------------------------------------------------------
def test_const_int_bound(ana, v):
    x, io, ii = v["x"], v["io"], v["ii"]
    assert ana.const_int_bound(ii * 2 + 1) == ConstIntBound(1, 63)
    assert ana.const_int_bound(ii // 8) == ConstIntBound(0, 3)
    assert ana.const_int_bound(x % 8) == ConstIntBound(0, 7)
    assert ana.const_int_bound(min_(ii, 10) - 3) == ConstIntBound(-3, 7)
    assert ana.const_int_bound(max_(ii, 10)) == ConstIntBound(10, 31)
    assert ana.const_int_bound(select(x < 0, ii, c(100))) == ConstIntBound(0, 100)
    assert ana.const_int_bound(Cast("int8", x)) == ConstIntBound(-128, 127)
    b = ana.const_int_bound(io * 32 + ii)
    assert b.min_value == ConstIntBound.NEG_INF and b.max_value == math.inf
    assert ana.const_int_bound(SizeVar("m")) == ConstIntBound(0, math.inf)
    assert ana.const_int_bound(truncmod(x, 5)) == ConstIntBound(-4, 4)
    assert ana.const_int_bound(ii * (ii - 40)) == ConstIntBound(-1240, 0)
    lo, hi = ana.const_int_bound(c(7))
    assert lo == hi == 7


def test_bind_forms(v):
    x, y, n = v["x"], v["y"], v["n"]
    a = Analyzer()
    a.bind(x, (2, 4))  # (min, extent)
    assert a.const_int_bound(x) == ConstIntBound(2, 5)
    a.bind(y, IntervalSet(c(-1), c(1)))
    assert a.const_int_bound(y) == ConstIntBound(-1, 1)
    a.bind(n, 7)
    assert s(a, n * 2) == "14"
    with a.scoped_bind(x, Range.from_min_extent(0, 1)):
        assert s(a, x) == "0"
    assert a.const_int_bound(x) == ConstIntBound(2, 5)


def test_module_level_simplify(v):
    x, y = v["x"], v["y"]
    assert str(arith.simplify(x % 8, {x: (0, 8)})) == "x"
    assert str(arith.simplify((x * 4 + y) // 4, {y: Range.from_min_extent(0, 4)})) == "x"


# proofs and constraints ---------------------------------------------------------------------
def test_can_prove(ana, v):
    x, io, ii, n = v["x"], v["io"], v["ii"], v["n"]
    assert ana.can_prove(io * 32 + ii < io * 32 + 32)
    assert not ana.can_prove(ii < 31)
    assert not ana.can_prove(x < 3)
    assert ana.can_prove((ii >= 0) & (ii < 32))
    assert ana.can_prove((x < 3) | (ii < 32))
    assert ana.can_prove_equal((io * 32 + ii) // 32, io)
    sym = Analyzer()
    sym.bind(x, Range(c(0), n))
    assert sym.can_prove(x < n)
    assert sym.can_prove(x + 1 <= n)
    assert not sym.can_prove(x + 1 < n)
    assert s(sym, min_(x, n - 1)) == "x"
    # split of a symbolic extent: io < ceil(n / 32) implies io * 32 < n
    io, ii = v["io"], v["ii"]
    split = Analyzer()
    split.bind(io, Range(c(0), (n + 31) // 32))
    split.bind(ii, (0, 32))
    assert split.can_prove(io * 32 < n)
    assert not split.can_prove(io * 32 + ii < n)


def test_with_constraint(v):
    x, y, i = v["x"], v["y"], v["i"]
    a = Analyzer()
    a.bind(i, (0, 64))
    with a.with_constraint(i < 10):
        assert a.can_prove(i < 10)
        assert s(a, i // 16) == "0"
        assert a.const_int_bound(i) == ConstIntBound(0, 9)
    assert a.const_int_bound(i) == ConstIntBound(0, 63)
    with a.with_constraint((x < y) & (i * 4 + 3 < 20)):
        assert a.can_prove(x < y)
        assert not a.can_prove(y < x)
        assert a.const_int_bound(i) == ConstIntBound(0, 4)
    assert not a.can_prove(x < y)
    with a.with_constraint(x % 4 == 0):
        assert a.modular_set(x * 2 + 2) == ModularSet(8, 2)
        assert s(a, x % 4) == "0"


# modular sets -------------------------------------------------------------------------------
def test_modular_set(ana, v):
    x, y = v["x"], v["y"]
    assert ana.modular_set(x * 8 + 4) == ModularSet(8, 4)
    assert ana.modular_set(x * 8 + y * 12) == ModularSet(4, 0)
    assert ana.modular_set(c(5)) == ModularSet(0, 5)
    assert ana.modular_set((x * 16 + 8) // 4) == ModularSet(4, 2)
    assert ana.modular_set((x * 6 + 4) % 4) == ModularSet(2, 0)
    assert ana.modular_set(x * 8 - 1) == ModularSet(8, 7)
    assert ana.modular_set(select(x < y, x * 4, x * 8 + 4)) == ModularSet(4, 0)
    assert ana.modular_set(x) == ModularSet(1, 0)
    assert ana.modular_set(x * 8 + 4).contains(12)
    assert ana.modular_set(Ramp(x * 8, c(1), 4)).coeff == 1


# intervals ----------------------------------------------------------------------------------
def test_eval_interval_linear(v):
    io, ii = v["io"], v["ii"]
    h, kh = Var("h"), Var("kh")
    iv = eval_interval(io * 32 + ii, {ii: IntervalSet(c(0), c(31))})
    assert (str(iv.min_value), str(iv.max_value)) == ("io * 32", "io * 32 + 31")
    assert str(iv.extent()) == "32"
    iv = eval_interval(h * 2 + kh - 1, {h: IntervalSet(c(0), c(55)), kh: IntervalSet(c(0), c(2))})
    assert (iv.min_value.value, iv.max_value.value) == (-1, 111)
    iv = eval_interval(ii - ii, {ii: IntervalSet(c(0), c(31))})
    assert iv.is_single_point()


def test_eval_interval_nonlinear(v):
    x, y, n = v["x"], v["y"], v["n"]
    dom = {x: IntervalSet(c(0), c(15)), y: IntervalSet(c(-2), c(3))}
    assert str(eval_interval(x // 4, dom)) == "[0, 3]"
    assert str(eval_interval(x % 4, dom)) == "[0, 3]"
    assert str(eval_interval((n * 16 + x) % 16, dom)) == "[0, 15]"
    assert str(eval_interval(min_(x, 7) + y, dom)) == "[-2, 10]"
    assert str(eval_interval(x * y, dom)) == "[-30, 45]"
    assert str(eval_interval(x * n, {x: IntervalSet(c(0), c(3))})) == "[-inf, +inf]"
    a = Analyzer()
    a.bind(n, (1, 100))
    assert str(a.int_set(x * n, {x: IntervalSet(c(0), c(3))})) == "[0, n * 3]"
    iv = eval_interval(Ramp(x, c(1), 4), {x: IntervalSet(c(0), c(3))})
    assert str(iv) == "[0, 6]"
    assert str(eval_interval(x, {x: Range.from_min_extent(2, 3)})) == "[2, 4]"


def test_interval_set_helpers(v):
    x = v["x"]
    a = IntervalSet(x, x + 8)
    b = IntervalSet(x + 4, x + 16)
    u = a.union(b)
    assert (str(u.min_value), str(u.max_value)) == ("x", "x + 16")
    i = a.intersect(b)
    assert (str(i.min_value), str(i.max_value)) == ("x + 4", "x + 8")
    assert str(i.extent()) == "5"
    assert IntervalSet.everything().is_everything()
    assert IntervalSet.everything().extent() is None
    assert a.union(IntervalSet.everything()).is_everything()
    assert str(a.intersect(IntervalSet(None, x + 2))) == "[x, x + 2]"
    assert IntervalSet.single_point(x).is_single_point()
    r = IntervalSet(c(3), c(9)).to_range()
    assert (r.min.value, r.extent.value) == (3, 7)


# linear equations ---------------------------------------------------------------------------
def test_detect_linear_equation(v):
    i, j, k, n = v["i"], v["j"], v["k"], v["n"]
    r = detect_linear_equation(i * 64 + j * 8 + k, [k])
    assert [str(x) for x in r] == ["1", "i * 64 + j * 8"]
    r = detect_linear_equation(i * 64 + j * 8 + k, [i, j])
    assert [str(x) for x in r] == ["64", "8", "k"]
    r = detect_linear_equation(i * n + k * 2 + 3, [i])
    assert [str(x) for x in r] == ["n", "k * 2 + 3"]
    assert detect_linear_equation(i * i + k, [i]) is None
    assert detect_linear_equation(i // 4 + k, [i]) is None
    assert [str(x) for x in detect_linear_equation(j + 1, [i])] == ["0", "j + 1"]


# evaluator ----------------------------------------------------------------------------------
def test_evaluate_semantics(v):
    x, y = v["x"], v["y"]
    env = {x: -7, y: 2}
    assert evaluate(x // y, env) == -4
    assert evaluate(x % y, env) == 1
    assert evaluate(truncdiv(x, y), env) == -3
    assert evaluate(truncmod(x, y), env) == -1
    assert evaluate(x < y, env) is True
    assert evaluate(Ramp(x, y, 3), env) == (-7, -5, -3)
    assert evaluate(Ramp(x, y, 3) + Broadcast(y, 3), env) == (-5, -3, -1)
    assert evaluate(select(x < 0, x, y), env) == -7
    assert evaluate(Cast("int8", c(200)), {}) == -56
    assert evaluate(Cast("float32", x) / FloatImm(2.0), env) == -3.5
    assert evaluate(Let(Var("t"), x, x + 1), env) == -6
    assert evaluate(const(True), {}) is True
    with pytest.raises(arith.EvaluationError):
        evaluate(x // (y - 2), env)
    with pytest.raises(arith.EvaluationError):
        evaluate(x + Var("unbound"), env)


def test_simplify_keeps_identity_when_nothing_changes(ana, v):
    e = v["x"] * v["y"] + v["z"]
    assert ana.simplify(e) is e
    e2 = FloorDiv(v["x"], v["n"])
    assert ana.simplify(e2) is e2
    assert isinstance(ana.simplify(FloorMod(v["io"] * 32 + v["ii"], c(32))), Var)
