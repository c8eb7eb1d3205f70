"""Every schedule misuse is a clear ScheduleError naming the stage and the axis."""

import pytest

import tensorforge
from tensorforge import te
from tensorforge.schedule import ScheduleError


def _matmul(n=16):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def _chain():
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((8, 8), lambda i, j: B[i, j] * 2.0, name="C")
    return A, B, C


def test_split_of_an_axis_already_split():
    _, _, C = _matmul()
    s = te.create_schedule(C.op)
    i = C.op.axis[0]
    s[C].split(i, factor=4)
    with pytest.raises(ScheduleError, match=r"split on stage C: axis i is not a current loop "
                       r"axis \(it was already split"):
        s[C].split(i, factor=2)


def test_split_of_a_fused_axis_names_the_axes_to_use():
    _, _, C = _matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    s[C].fuse(i, j)
    with pytest.raises(ScheduleError, match=r"Current axes: i\.j\.fused, k"):
        s[C].split(j, factor=2)


def test_split_needs_one_amount():
    _, _, C = _matmul()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="exactly one of factor= or nparts="):
        s[C].split(C.op.axis[0])
    with pytest.raises(ScheduleError, match="must be positive"):
        s[C].split(C.op.axis[0], factor=0)


def test_axis_of_another_stage():
    A, B, C = _chain()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="belongs to another stage"):
        s[C].split(B.op.axis[0], factor=2)


def test_compute_at_into_itself():
    _, B, C = _chain()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="stage B cannot be computed at itself"):
        s[B].compute_at(s[B], B.op.axis[0])


def test_compute_at_into_its_own_subtree():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((8,), lambda i: B[i] * 2.0, name="C")
    D = te.compute((8,), lambda i: C[i] - B[i], name="D")
    s = te.create_schedule(D.op)
    s[B].compute_at(s[C], C.op.axis[0])
    with pytest.raises(ScheduleError, match="already attached inside stage C"):
        s[C].compute_at(s[B], B.op.axis[0])


def test_compute_at_a_stage_that_does_not_read_it():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((8,), lambda i: A[i] * 2.0, name="C")
    D = te.compute((8,), lambda i: B[i] + C[i], name="D")
    s = te.create_schedule(D.op)
    with pytest.raises(ScheduleError, match="stage C does not read B"):
        s[B].compute_at(s[C], C.op.axis[0])


def test_vectorize_and_parallel_of_a_reduction_axis():
    _, _, C = _matmul()
    s = te.create_schedule(C.op)
    k = C.op.reduce_axis[0]
    with pytest.raises(ScheduleError, match="vectorize on stage C: axis k is a reduction axis"):
        s[C].vectorize(k)
    with pytest.raises(ScheduleError, match="parallel on stage C: axis k is a reduction axis"):
        s[C].parallel(k)


def test_fuse_needs_adjacent_axes_of_one_kind():
    _, _, C = _matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    k = C.op.reduce_axis[0]
    with pytest.raises(ScheduleError, match="must be adjacent"):
        s[C].fuse(i, k)
    with pytest.raises(ScheduleError, match="cannot fuse a reduction axis"):
        s[C].fuse(j, k)


def test_bind_one_thread_tag_twice():
    _, _, C = _matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    tx = te.thread_axis("threadIdx.x")
    s[C].bind(i, tx)
    with pytest.raises(ScheduleError, match="thread tag 'threadIdx.x' is already bound to axis i"):
        s[C].bind(j, te.thread_axis("threadIdx.x"))
    with pytest.raises(ScheduleError, match="is not a thread axis"):
        s[C].bind(j, C.op.axis[0])


def test_two_annotations_on_one_axis():
    _, _, C = _matmul()
    s = te.create_schedule(C.op)
    i = C.op.axis[0]
    s[C].parallel(i)
    with pytest.raises(ScheduleError, match="axis i is already marked parallel"):
        s[C].unroll(i)


def test_inline_of_a_reduction_and_of_an_output():
    A, B, C = _matmul()
    D = te.compute((16, 16), lambda i, j: C[i, j] + 1.0, name="D")
    s = te.create_schedule(D.op)
    with pytest.raises(ScheduleError, match="stage C is not an injective compute"):
        s[C].compute_inline()
    with pytest.raises(ScheduleError, match="stage D is an output"):
        s[D].compute_inline()


def test_missing_input_in_args():
    A, B, C = _chain()
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="input placeholder\\(s\\) A are read"):
        tensorforge.lower(s, [C])


def test_reorder_with_duplicate_axis():
    _, _, C = _matmul()
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    with pytest.raises(ScheduleError, match="an axis is given twice"):
        s[C].reorder(i, i)


def test_schedule_error_is_a_tensorforge_error():
    from tensorforge.errors import TensorforgeError

    assert issubclass(ScheduleError, TensorforgeError)
