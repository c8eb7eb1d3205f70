"""Expression nodes: operators, dtype promotion, folding, structural equality and hashing."""

import pytest

from tensorforge.expr import (
    EQ,
    Add,
    Broadcast,
    Cast,
    FloatImm,
    FloorDiv,
    IntImm,
    Var,
    const,
    dtype,
    if_then_else,
    structural_equal,
    structural_hash,
    substitute,
)


def test_operators_build_nodes_with_promoted_dtypes():
    i = Var("i")
    x = Var("x", "float32")
    e = i * 4 + 1
    assert isinstance(e, Add) and e.dtype == "int32" and str(e) == "i * 4 + 1"
    f = x * i
    assert f.dtype == "float32" and isinstance(f.b, Cast)
    assert (i // 2).dtype == "int32" and isinstance(i // 2, FloorDiv)
    wide = Var("w", "int64") + i
    assert wide.dtype == "int64"
    assert (x + 1).b == FloatImm(1.0, "float32")


def test_trivial_folds():
    i = Var("i")
    assert (i + 0) is i and (i * 1) is i
    assert structural_equal(i * 0, IntImm(0))
    assert (const(6) // const(4)).value == 1 and (const(-7) // const(2)).value == -4
    assert (const(-7) % const(2)).value == 1


def test_integer_true_division_is_refused():
    with pytest.raises(TypeError, match="use `//` for floor division"):
        Var("i") / 2


def test_symbolic_comparison_has_no_truth_value():
    i = Var("i")
    with pytest.raises(TypeError, match="cannot use the symbolic expression `i < 3`"):
        if i < 3:
            pass


def test_structural_equality_and_hash():
    i, j = Var("i"), Var("j")
    a = (i * 4 + j) // 2
    b = (i * 4 + j) // 2
    assert a is not b and structural_equal(a, b) and bool(a == b)
    assert structural_hash(a) == structural_hash(b) and hash(a) == hash(b)
    assert not structural_equal(a, (j * 4 + i) // 2)
    assert isinstance(a == b, EQ)  # `==` still builds IR
    # variables are compared by identity, even with equal names
    assert not structural_equal(Var("i"), Var("i"))
    d = {a: 1}
    assert d[b] == 1


def test_substitute_and_vector_dtypes():
    i = Var("i")
    e = substitute(i * 2 + 1, {i: 5})
    assert str(e) == "5 * 2 + 1"
    v = Broadcast(const(1.0), 8)
    assert v.dtype == "float32x8" and dtype.lanes(v.dtype) == 8


def test_if_then_else_folds_constant_conditions():
    x = Var("x", "float32")
    assert if_then_else(const(True), x, 0.0) is x
    assert "if_then_else" in str(if_then_else(Var("i") < 3, x, 0.0))


def test_dtype_parsing_errors_name_the_choices():
    with pytest.raises(ValueError, match="unknown dtype 'floaty'"):
        dtype.parse("floaty")
    assert dtype.parse("int8x16").lanes == 16
    assert dtype.nbytes("float16") == 2
