"""Loop-IR passes and the schedule primitives they serve, checked on what they print and on
what the compiled kernel computes (numpy reference; float32 tolerances rtol 1e-5, atol
1e-5 * reduction length)."""

import io

import numpy as np
import pytest

import tensorforge
from tensorforge import te, tir
from tensorforge.expr import Var, const
from tensorforge.schedule import ScheduleError
from tensorforge.tir.transform.pipeline import PassContext

RNG = np.random.default_rng(0)


def _rand(*shape):
    return RNG.random(shape, dtype=np.float32)


def _matmul(m, n, k, name="C"):
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name=name)
    return A, B, C


def _run_matmul(s, args, m, n, k):
    f = tensorforge.build(s, args, target="llvm")
    a, b = _rand(m, k), _rand(k, n)
    c = np.zeros((m, n), np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5 * k)


def test_loop_partition_removes_guards_from_the_main_loop(llvm_target):
    m, n, k = 17, 23, 19
    A, B, C = _matmul(m, n, k)
    s = te.create_schedule(C.op)
    io_, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 8)
    s[C].reorder(io_, jo, ii, C.op.reduce_axis[0], ji)
    s[C].vectorize(ji)
    text = str(tensorforge.lower(s, [A, B, C]))
    assert "likely" not in text and "if " not in text
    assert "ramp(" in text  # the main part and the tails are vector code
    with PassContext(disabled={"loop_partition"}):
        assert "likely" in str(tensorforge.lower(s, [A, B, C]))
    _run_matmul(s, [A, B, C], m, n, k)


def test_print_ir_after_a_pass():
    A, B, C = _matmul(8, 8, 8)
    s = te.create_schedule(C.op)
    out = io.StringIO()
    with PassContext(print_ir_after={"storage_flatten"}, print_ir_before={"vectorize"},
                     stream=out):
        tensorforge.lower(s, [A, B, C])
    text = out.getvalue()
    assert "# IR after storage_flatten" in text and "# IR before vectorize" in text
    assert "Buffer[(64), float32]" in text


@pytest.mark.parametrize("factor_axis", [0, 1])
def test_rfactor(llvm_target, factor_axis):
    n, m = 13, 37
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=8)
    BF = s.rfactor(B, ki, factor_axis=factor_axis)
    assert BF.shape[factor_axis].value == 8
    if factor_axis == 1:
        s[BF].compute_at(s[B], s[B].op.axis[0])
    else:
        s[B].parallel(s[B].op.axis[0])
    f = tensorforge.build(s, [A, B], target="llvm")
    a = _rand(n, m)
    b = np.zeros(n, np.float32)
    f(a, b)
    np.testing.assert_allclose(b, a.sum(1), rtol=1e-5, atol=1e-5 * m)


def test_rfactor_errors():
    A, B, C = _matmul(8, 8, 8)
    s = te.create_schedule(C.op)
    with pytest.raises(ScheduleError, match="must be a current reduction axis"):
        s.rfactor(C, C.op.axis[0])


def _gemv_intrin(m, length, with_reset=True):
    a = te.placeholder((length,), name="a")
    b = te.placeholder((m, length), name="b")
    k = te.reduce_axis((0, length), name="k")
    c = te.compute((m,), lambda i: te.sum(a[k] * b[i, k], axis=k), name="c")

    def impl(ins, outs):
        aa, bb = ins
        cc = outs[0]
        i, kk = Var("ii"), Var("kk")
        reset = tir.For(i, const(0), const(m), "serial", tir.BufferStore(cc, const(0.0), (i,)))
        update = tir.For(i, const(0), const(m), "serial", tir.For(
            kk, const(0), const(length), "serial",
            tir.BufferStore(cc, cc[i] + aa[kk] * bb[i, kk], (i,))))
        if not with_reset:
            return tir.seq(reset, update)
        return tir.seq(reset, update), reset, update

    return te.decl_tensor_intrin(c, impl, name="gemv")


@pytest.mark.parametrize("split_k", [False, True])
def test_tensorize_gemv(llvm_target, split_k):
    M, N, L = 6, 32, 24
    A = te.placeholder((M, L), name="A")
    B = te.placeholder((N, L), name="B")
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    i, j = C.op.axis
    jo, ji = s[C].split(j, factor=16)
    if split_k:
        ko, ki = s[C].split(k, factor=8)
        s[C].reorder(i, jo, ko, ji, ki)
        s[C].tensorize(ji, _gemv_intrin(16, 8))
    else:
        s[C].reorder(i, jo, ji, k)
        s[C].tensorize(ji, _gemv_intrin(16, L))
    text = str(tensorforge.lower(s, [A, B, C]))
    assert "ii" in text and "kk" in text  # the intrinsic's own loops replaced the nest
    f = tensorforge.build(s, [A, B, C], target="llvm")
    a, b = _rand(M, L), _rand(N, L)
    c = np.zeros((M, N), np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b.T, rtol=1e-5, atol=1e-5 * L)


def test_tensorize_shape_mismatch_and_missing_reset():
    M, N, L = 6, 32, 24
    A = te.placeholder((M, L), name="A")
    B = te.placeholder((N, L), name="B")
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    s[C].tensorize(ji, _gemv_intrin(16, L))
    with pytest.raises(ScheduleError, match=r"extents \[8\] .* computes \[16\]"):
        tensorforge.lower(s, [A, B, C])
    s = te.create_schedule(C.op)
    jo, ji = s[C].split(C.op.axis[1], factor=16)
    ko, ki = s[C].split(k, factor=8)
    s[C].reorder(C.op.axis[0], jo, ko, ji, ki)
    s[C].tensorize(ji, _gemv_intrin(16, 8, with_reset=False))
    with pytest.raises(ScheduleError, match="must return \\(body, reset, update\\)"):
        tensorforge.lower(s, [A, B, C])


def test_virtual_threads_interleave_and_compute_right(llvm_target):
    m, n, k = 16, 16, 8
    A, B, C = _matmul(m, n, k)
    s = te.create_schedule(C.op)
    CL = s.cache_write(C, "local")
    io_, ii = s[C].split(C.op.axis[0], nparts=2)
    s[C].bind(io_, te.thread_axis("vthread"))
    s[CL].compute_at(s[C], io_)
    text = str(tensorforge.lower(s, [A, B, C]))
    assert "thread_binding" not in text
    assert "allocate((256)" in text  # each of the 2 virtual threads owns a 128-element slice
    _run_matmul(s, [A, B, C], m, n, k)


def test_double_buffer(llvm_target):
    m, n, k = 8, 16, 32
    A, B, C = _matmul(m, n, k)
    s = te.create_schedule(C.op)
    BB = s.cache_read(B, "local", [C])
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=4)
    s[C].reorder(ko, C.op.axis[0], C.op.axis[1], ki)
    s[BB].compute_at(s[C], ko)
    s[BB].double_buffer()
    text = str(tensorforge.lower(s, [A, B, C]))
    assert "B.local = allocate((128)" in text  # two slots of 4x16
    assert "if k.outer + 1 < 8" in text or "k.outer < 7" in text
    _run_matmul(s, [A, B, C], m, n, k)


def test_storage_rewrite_reuses_dead_buffers(llvm_target):
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((64,), lambda i: B[i] * 2.0, name="C")
    D = te.compute((64,), lambda i: C[i] - 3.0, name="D")
    E = te.compute((64,), lambda i: D[i] * D[i], name="E")
    s = te.create_schedule(E.op)
    func = tensorforge.lower(s, [A, E])
    stats = func.attrs["storage_rewrite"]
    assert stats["bytes_before"] == 3 * 64 * 4 and stats["bytes_after"] == 2 * 64 * 4
    f = tensorforge.build(s, [A, E], target="llvm")
    a = _rand(64)
    e = np.zeros(64, np.float32)
    f(a, e)
    np.testing.assert_allclose(e, ((a + 1) * 2 - 3) ** 2, rtol=1e-6)


def test_storage_align_pads_the_stride(llvm_target):
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] * 3.0, name="B")
    C = te.compute((8, 8), lambda i, j: B[i, j] + 1.0, name="C")
    s = te.create_schedule(C.op)
    s[B].storage_align(B.op.axis[0], 16, 1)
    text = str(tensorforge.lower(s, [A, C]))
    assert "B = allocate((136)" in text  # rows 17 apart: stride % 16 == 1
    f = tensorforge.build(s, [A, C], target="llvm")
    a = _rand(8, 8)
    c = np.zeros((8, 8), np.float32)
    f(a, c)
    np.testing.assert_allclose(c, a * 3 + 1, rtol=1e-6)


def test_cache_read_into_a_tile(llvm_target):
    m, n, k = 12, 20, 10
    A, B, C = _matmul(m, n, k)
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "local", [C])
    io_, ii = s[C].split(C.op.axis[0], factor=4)
    s[AA].compute_at(s[C], io_)
    text = str(tensorforge.lower(s, [A, B, C]))
    assert "A.local = allocate((40)" in text  # a 4x10 tile of A per outer row block
    _run_matmul(s, [A, B, C], m, n, k)


def test_thread_sync_between_shared_write_and_read():
    from tensorforge.expr import Buffer
    from tensorforge.tir.transform.thread_sync import thread_sync

    sh = Buffer("sh", (32,), "float32", "shared")
    out = Buffer("out", (32,), "float32")
    tx = Var("threadIdx.x")
    k = Var("k")
    body = tir.For(k, const(0), const(4), "serial", tir.seq(
        tir.BufferStore(sh, out[tx] + 1.0, (tx,)),
        tir.BufferStore(out, sh[31 - tx], (tx,)),
    ))
    fn = tir.PrimFunc("f", (out,), tir.Allocate(sh, tir.For(
        tx, const(0), const(32), "thread_binding", body, "threadIdx.x")))
    text = str(thread_sync(fn))
    # a barrier between the write and the read, and one before the next iteration's write
    assert text.count('storage_sync("shared")') == 2 or text.count("storage_sync('shared')") == 2


def test_gpu_binding_on_a_cpu_target_is_a_clear_error(llvm_target):
    from tensorforge.errors import TensorforgeError

    A, B, C = _matmul(8, 8, 8)
    s = te.create_schedule(C.op)
    s[C].bind(C.op.axis[0], te.thread_axis("threadIdx.x"))
    with pytest.raises(TensorforgeError, match=r"bound to GPU threads \(i -> threadIdx.x\)"):
        tensorforge.build(s, [A, B, C], target="llvm")


def test_parameters_with_equal_names_keep_their_own_shapes(llvm_target):
    # regression: the logical shapes of parameters were keyed by name, so two buffers both
    # named "x" were checked against one shape
    a = te.placeholder((2, 3), name="x")
    b = te.placeholder((3,), name="x")
    c = te.compute((2, 3), lambda i, j: a[i, j] + b[j], name="x")
    s = te.create_schedule(c.op)
    f = tensorforge.build(s, [a, b, c], target="llvm")
    av, bv = _rand(2, 3), _rand(3)
    cv = np.zeros((2, 3), np.float32)
    f(av, bv, cv)
    np.testing.assert_allclose(cv, av + bv, rtol=1e-6)
