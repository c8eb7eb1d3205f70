"""Tensor expressions: shapes, reductions, tuple reducers, input discovery, errors."""

import pytest

from tensorforge import te
from tensorforge.expr import Reduce


def test_compute_names_axes_after_the_lambda():
    A = te.placeholder((4, 5), name="A")
    B = te.compute((4, 5), lambda row, col: A[row, col] * 2.0, name="B")
    assert [a.var.name for a in B.op.axis] == ["row", "col"]
    assert B.op.input_tensors == [A]
    assert tuple(s.value for s in B.shape) == (4, 5) and B.dtype == "float32"


def test_reductions_record_their_axes():
    A = te.placeholder((4, 5), name="A")
    k = te.reduce_axis((0, 5), name="k")
    B = te.compute((4,), lambda i: te.max(A[i, k], axis=k), name="B")
    assert B.op.reduce_axis == (k,)
    assert isinstance(B.op.body[0], Reduce) and B.op.body[0].combiner.name == "max"


def test_tuple_reducer_makes_two_outputs():
    A = te.placeholder((3, 6), name="A")
    k = te.reduce_axis((0, 6), name="k")
    idx, val = te.compute((3,), lambda i: te.argmax_reducer()((k.var, A[i, k]), axis=k),
                          name="T")
    assert idx.op is val.op and idx.dtype == "int32" and val.dtype == "float32"


def test_wrong_index_count_and_bad_reduce_axis():
    A = te.placeholder((4, 5), name="A")
    with pytest.raises(IndexError, match="has 2 dimensions but was indexed with 1"):
        A[1]
    with pytest.raises(TypeError, match="is not a reduce_axis"):
        te.compute((4,), lambda i: te.sum(A[i, 0], axis=te.thread_axis("threadIdx.x")))


def test_reduction_must_be_the_whole_body():
    A = te.placeholder((4, 5), name="A")
    k = te.reduce_axis((0, 5), name="k")
    with pytest.raises(ValueError, match="must be the whole body"):
        te.compute((4,), lambda i: te.sum(A[i, k], axis=k) + 1.0)


def test_math_intrinsics_are_calls():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: te.exp(A[i]) + te.sqrt(A[i]) + te.sigmoid(A[i]), name="B")
    assert "exp(A[i])" in str(B.op.body[0]) and "sigmoid" in str(B.op.body[0])
    assert te.abs(te.var("n")).dtype == "int32"


def test_placeholder_rejects_unknown_dtype():
    with pytest.raises(ValueError, match="unknown dtype"):
        te.placeholder((2,), dtype="float31x")
