"""tensorize checks what the nest computes, not only its shape: the body must equal the
intrinsic's TE body up to the renaming of loop variables and tensors."""

import pytest

import tensorforge
from tensorforge import te, tir
from tensorforge.expr import Var, const
from tensorforge.schedule import ScheduleError


def _dot_intrin(n, combine="mul", transpose=False):
    a = te.placeholder((n,), name="a")
    b = te.placeholder((n,), name="b")
    k = te.reduce_axis((0, n), name="k")
    if combine == "mul":
        c = te.compute((1,), lambda i: te.sum(a[k] * b[k], axis=k), name="c")
    else:
        c = te.compute((1,), lambda i: te.sum(a[k] + b[k], axis=k), name="c")

    def impl(ins, outs):
        aa, bb = ins
        cc = outs[0]
        kk = Var("kk")
        update = tir.For(kk, const(0), const(n), "serial",
                         tir.BufferStore(cc, cc[0] + aa[kk] * bb[kk], (0,)))
        reset = tir.BufferStore(cc, const(0.0), (0,))
        return tir.seq(reset, update), reset, update

    return te.decl_tensor_intrin(c, impl, name=f"dot_{combine}")


def _matvec(transposed):
    M, L = 4, 8
    A = te.placeholder((M, L), name="A")
    B = te.placeholder((L, M) if transposed else (L,), name="B")
    k = te.reduce_axis((0, L), name="k")
    if transposed:
        C = te.compute((M,), lambda i: te.sum(A[i, k] * B[k, i], axis=k), name="C")
    else:
        C = te.compute((M,), lambda i: te.sum(A[i, k] * B[k], axis=k), name="C")
    return A, B, C


def test_matching_body_lowers():
    A, B, C = _matvec(False)
    s = te.create_schedule(C.op)
    s[C].tensorize(C.op.reduce_axis[0], _dot_intrin(8))
    text = str(tensorforge.lower(s, [A, B, C], simple_mode=True))
    assert "kk" in text


def test_other_operation_is_rejected_showing_both_bodies():
    A, B, C = _matvec(False)
    s = te.create_schedule(C.op)
    s[C].tensorize(C.op.reduce_axis[0], _dot_intrin(8, combine="add"))
    with pytest.raises(ScheduleError) as err:
        tensorforge.lower(s, [A, B, C], simple_mode=True)
    msg = str(err.value)
    assert "does not compute what intrinsic 'dot_add'" in msg
    assert "nest:" in msg and "intrinsic:" in msg and "*" in msg and "+" in msg


def test_read_along_another_dimension_is_rejected():
    # B[k, i] walks B's first dimension, the intrinsic's 1-D b its last: the view would read
    # B[i, k] instead (the shape check alone accepted this and computed the wrong thing)
    A, B, C = _matvec(True)
    s = te.create_schedule(C.op)
    s[C].tensorize(C.op.reduce_axis[0], _dot_intrin(8))
    with pytest.raises(ScheduleError, match=r"nest: .*b\[0\]"):
        tensorforge.lower(s, [A, B, C], simple_mode=True)


def test_swapped_roles_are_rejected():
    # the nest reduces over the first index of a 2-D read the intrinsic walks by the second
    M, L = 8, 8
    A = te.placeholder((M, L), name="A")
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((M,), lambda i: te.sum(A[i, k] * A[k, i], axis=k), name="C")
    a = te.placeholder((L,), name="a")
    kk = te.reduce_axis((0, L), name="kk")
    c = te.compute((1,), lambda i: te.sum(a[kk] * a[kk], axis=kk), name="c")
    intrin = te.decl_tensor_intrin(c, lambda ins, outs: (None, None, None), name="sq")
    s = te.create_schedule(C.op)
    s[C].tensorize(C.op.reduce_axis[0], intrin)
    with pytest.raises(ScheduleError, match="does not compute"):
        tensorforge.lower(s, [A, C], simple_mode=True)
