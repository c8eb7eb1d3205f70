"""GPU lowering in core, against a toy GPU target kind (keys include "gpu", no runtime):
scope-aware bound inference, thread-binding lowering, cross-thread reduction, barriers, the
verifier and the host/device split. Golden loop IR where the shape is the point."""

from __future__ import annotations

import numpy as np
import pytest

import tensorforge
from tensorforge import te
from tensorforge.testing.gpu_schedules import TOY_GPU, ToyGPUPlugin, row_sum, shared_matmul
from tensorforge.tir.transform.pipeline import PassContext


@pytest.fixture
def gpu(plugins):
    plugins.register(ToyGPUPlugin(), "toygpu", distribution="toy")
    return tensorforge.target.Target.parse("toygpu")


GOLDEN_SIMPLE_FETCH = """\
          for k.outer in range(4):
            A.shared = allocate((16, 16), float32, 'shared')
            B.shared = allocate((16, 16), float32, 'shared')
            for ax0 in range(16):  # thread_binding threadIdx.y
              for ax1 in range(16):  # thread_binding threadIdx.x
                A.shared[ax0, ax1] = A[i.outer * 16 + ax0, k.outer * 16 + ax1]
            for ax0 in range(16):  # thread_binding threadIdx.y
              for ax1 in range(16):  # thread_binding threadIdx.x
                B.shared[ax0, ax1] = B[k.outer * 16 + ax0, j.outer * 16 + ax1]"""

GOLDEN_LOWERED = """\
def main(A: Buffer[(4096), float32], B: Buffer[(4096), float32], C: Buffer[(4096), float32]):
  attr [blockIdx.x] thread_extent = 4
  attr [blockIdx.y] thread_extent = 4
  attr [threadIdx.x] thread_extent = 16
  attr [threadIdx.y] thread_extent = 16
  A.shared = allocate((256), float32, 'shared')
  B.shared = allocate((256), float32, 'shared')
  C[blockIdx.y * 1024 + threadIdx.y * 64 + blockIdx.x * 16 + threadIdx.x] = 0.0f
  for k.outer in range(4):
    A.shared[threadIdx.y * 16 + threadIdx.x] = \
A[blockIdx.y * 1024 + threadIdx.y * 64 + k.outer * 16 + threadIdx.x]
    B.shared[threadIdx.y * 16 + threadIdx.x] = \
B[k.outer * 1024 + threadIdx.y * 64 + blockIdx.x * 16 + threadIdx.x]
    storage_sync('shared')
    for k.inner in range(16):
      C[blockIdx.y * 1024 + threadIdx.y * 64 + blockIdx.x * 16 + threadIdx.x] = \
C[blockIdx.y * 1024 + threadIdx.y * 64 + blockIdx.x * 16 + threadIdx.x] + \
A.shared[threadIdx.y * 16 + k.inner] * B.shared[k.inner * 16 + threadIdx.x]
    storage_sync('shared')"""


def test_shared_tiles_cover_the_block_and_fetch_loops_are_thread_bound(gpu):
    """Scope-aware bounds: a shared tile under 16x16 threadIdx loops is 16x16, not the 1x16
    one thread reads (that was a race)."""
    s, args = shared_matmul()
    text = str(tensorforge.lower(s, args, simple_mode=True))
    assert GOLDEN_SIMPLE_FETCH in text


def test_shared_matmul_golden_loop_ir(gpu):
    """One variable per tag, launch extents as attributes, shared buffers at the kernel top,
    a barrier before each k-step's reads and one after them (before the next fetch)."""
    s, args = shared_matmul()
    assert str(tensorforge.lower(s, args, target=gpu)) == GOLDEN_LOWERED


def test_without_thread_sync_the_verifier_names_the_racing_buffer(gpu):
    from tensorforge.tir.transform.verify_gpu import GPUVerifyError

    s, args = shared_matmul()
    with PassContext(disabled={"thread_sync"}):
        with pytest.raises(GPUVerifyError, match=r"race on shared memory: A\.shared .*read "
                                                 r"after write"):
            tensorforge.lower(s, args, target=gpu)


def test_local_cache_is_per_thread_and_unattached_scope_defaults_by_position(gpu):
    """`local` relaxes no thread loop; a stage attached under threadIdx without set_scope is
    local, under blockIdx only it is shared (TVM's default storage rank)."""
    n = 64
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((n, n), lambda i, j: B[i, j] + 1.0, name="C")
    s = te.create_schedule(C.op)
    io, ii = s[C].split(C.op.axis[0], factor=8)
    s[C].bind(io, te.thread_axis("blockIdx.x"))
    s[C].bind(ii, te.thread_axis("threadIdx.x"))
    s[B].compute_at(s[C], ii)
    text = str(tensorforge.lower(s, [A, C], simple_mode=True))
    assert "B = allocate((1, 64), float32, 'local')" in text
    s2 = te.create_schedule(C.op)
    io, ii = s2[C].split(C.op.axis[0], factor=8)
    s2[C].bind(io, te.thread_axis("blockIdx.x"))
    s2[C].bind(ii, te.thread_axis("threadIdx.x"))
    s2[B].compute_at(s2[C], io)
    text = str(tensorforge.lower(s2, [A, C], simple_mode=True))
    assert "B = allocate((8, 64), float32, 'shared')" in text


GOLDEN_TREE = """\
def main(A: Buffer[(400), float32], S: Buffer[(4), float32]):
  attr [blockIdx.x] thread_extent = 4
  attr [threadIdx.x] thread_extent = 16
  S.red = allocate((1), float32, 'local')
  red_buf1_0 = allocate((16), float32, 'shared')
  S.red[0] = 0.0f
  for k.outer in range(7):
    if likely(k.outer * 16 + threadIdx.x < 100):
      S.red[0] = S.red[0] + A[blockIdx.x * 100 + k.outer * 16 + threadIdx.x]
  red_buf1_0[threadIdx.x] = S.red[0]
  storage_sync('shared')
  if threadIdx.x < 8:
    red_buf1_0[threadIdx.x] = red_buf1_0[threadIdx.x] + red_buf1_0[threadIdx.x + 8]
  storage_sync('shared')
  if threadIdx.x < 4:
    red_buf1_0[threadIdx.x] = red_buf1_0[threadIdx.x] + red_buf1_0[threadIdx.x + 4]
  storage_sync('shared')
  if threadIdx.x < 2:
    red_buf1_0[threadIdx.x] = red_buf1_0[threadIdx.x] + red_buf1_0[threadIdx.x + 2]
  storage_sync('shared')
  if threadIdx.x < 1:
    red_buf1_0[0] = red_buf1_0[0] + red_buf1_0[1]
  storage_sync('shared')
  S.red[0] = red_buf1_0[0]
  storage_sync('shared')
  if threadIdx.x == 0:
    S[blockIdx.x] = S.red[0]"""


def test_thread_bound_reduction_lowers_to_a_tree(gpu):
    s, args = row_sum(16)
    assert str(tensorforge.lower(s, args, target=gpu)) == GOLDEN_TREE


def test_reduction_over_a_non_power_of_two_folds_the_tail_first(gpu):
    s, args = row_sum(12)
    text = str(tensorforge.lower(s, args, target=gpu))
    assert "if threadIdx.x < 4:\n    red_buf1_0[threadIdx.x] = red_buf1_0[threadIdx.x] + " \
           "red_buf1_0[threadIdx.x + 8]" in text
    assert text.count("storage_sync('shared')") == 6  # fill, tail, 4 -> 2 -> 1, read


def test_warp_shuffles_where_the_target_has_them(gpu):
    from tensorforge.tir.transform.lower_allreduce import lower_thread_allreduce
    from tensorforge.tir.transform.lower_thread_binding import lower_thread_bindings
    from tensorforge.tir.transform.storage_flatten import storage_flatten

    s, args = row_sum(32)
    f = lower_thread_bindings(storage_flatten(tensorforge.lower(s, args, simple_mode=True)))
    text = str(lower_thread_allreduce(f, warp_size=32))
    assert "tir.shuffle_down(S.red[0], 16, 32)" in text
    assert "tir.shuffle_idx(S.red[0], 0, 32)" in text
    assert "storage_sync" not in text and "shared" not in text


def _fetch_inside_threads(kchunk: int):
    """C[i] = sum_k A[i, k]; A's tile fetched at each k-step inside the threadIdx loop, its
    k axis bound to threadIdx.x."""
    n = 64
    A = te.placeholder((n, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "shared", [C])
    io, ii = s[C].split(C.op.axis[0], factor=16)
    s[C].bind(io, te.thread_axis("blockIdx.x"))
    s[C].bind(ii, te.thread_axis("threadIdx.x"))
    ko, ki = s[C].split(k, factor=kchunk)
    s[AA].compute_at(s[C], ko)
    s[AA].bind(s[AA].op.axis[1], te.thread_axis("threadIdx.x"))
    return s, [A, C]


def test_fetch_with_more_threads_than_its_consumer_is_an_error(gpu):
    from tensorforge.tir.transform.lower_thread_binding import ThreadBindingError

    s, args = _fetch_inside_threads(32)  # 32 fetch threads inside a 16-thread loop
    with pytest.raises(ThreadBindingError, match=r"stage A\.shared, axis ax1 is bound to "
                                                 r"threadIdx\.x with extent 32.*axis i\.inner "
                                                 r"of stage C"):
        tensorforge.lower(s, args, target=gpu)


def test_fetch_with_fewer_threads_gets_a_guard(gpu):
    s, args = _fetch_inside_threads(8)  # 8 of the 16 threads fetch
    text = str(tensorforge.lower(s, args, target=gpu))
    assert "if likely(threadIdx.x < 8):" in text
    assert "A.shared = allocate((128), float32, 'shared')" in text  # 16 rows x 8


def test_an_unbound_nest_is_an_error_naming_the_stage(gpu):
    from tensorforge.tir.transform.split_host_device import HostDeviceError, split_host_device

    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    f = tensorforge.lower(s, [A, B], target=gpu)
    with pytest.raises(HostDeviceError, match="the loop nest writing B has no loop bound"):
        split_host_device(f)


def test_two_root_stages_become_two_kernels_with_a_workspace(gpu):
    from tensorforge.tir.transform.split_host_device import split_host_device

    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 2.0, name="B")
    C = te.compute((64,), lambda i: B[63 - i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    for T in (B, C):
        o, i = s[T].split(T.op.axis[0], factor=32)
        s[T].bind(o, te.thread_axis("blockIdx.x"))
        s[T].bind(i, te.thread_axis("threadIdx.x"))
    prog = split_host_device(tensorforge.lower(s, [A, C], name="f", target=gpu))
    assert [k.name for k in prog.kernels] == ["f_k0", "f_k1"]
    assert [w.name for w in prog.workspaces] == ["B"]
    assert prog.steps == [{"launch": "f_k0", "args": [["param", 0], ["workspace", 0]]},
                          {"launch": "f_k1", "args": [["param", 1], ["workspace", 0]]}]
    assert prog.kernels[0].grid == (2, 1, 1) and prog.kernels[0].block == (32, 1, 1)


def test_verifier_limits_threads_and_shared_bytes(plugins):
    from tensorforge.target import Target
    from tensorforge.tir.transform.verify_gpu import GPUVerifyError

    plugins.register(ToyGPUPlugin(), "toygpu", distribution="toy")
    s, args = shared_matmul(64, 16)
    with pytest.raises(GPUVerifyError, match="256 threads .* exceeds the target's "
                                             "max-threads-per-block 128"):
        tensorforge.lower(s, args, target=Target.parse("toygpu -max-threads-per-block=128"))
    s, args = shared_matmul(64, 16)
    with pytest.raises(GPUVerifyError, match="shared buffers take 2048 bytes"):
        tensorforge.lower(s, args,
                          target=Target.parse("toygpu -max-shared-memory-per-block=1024"))


def test_verifier_rejects_a_barrier_under_a_thread_dependent_condition():
    from tensorforge.expr import IntImm, Var
    from tensorforge.tir import AttrStmt, IfThenElse, PrimFunc
    from tensorforge.tir.transform.thread_sync import sync_stmt
    from tensorforge.tir.transform.verify_gpu import GPUVerifyError, verify_gpu

    tx = Var("threadIdx.x")
    body = AttrStmt(tx, "thread_extent", IntImm(32), IfThenElse(tx < 16, sync_stmt()))
    with pytest.raises(GPUVerifyError, match=r"barrier runs under `if threadIdx.x < 16`"):
        verify_gpu(PrimFunc("k", (), body))


def test_plugin_passes_run_at_every_tir_stage(plugins):
    from tensorforge.plugins import Pass, hookimpl
    from tensorforge.tir.transform.pipeline import default_passes

    seen = []

    class _Passes:
        @hookimpl
        def register_targets(self, register):
            register(TOY_GPU)

        @hookimpl
        def register_passes(self, register, target, stage):
            if stage.startswith("tir."):
                register(Pass(f"mark-{stage.split('.')[1]}", stage,
                              "tensorforge.tir.transform.remove_noop:remove_noop"))

    plugins.register(_Passes(), "marks", distribution="marks")
    names = [n for n, _ in default_passes(tensorforge.target.Target.parse("toygpu"))]
    for stage, before in (("after_lower", "storage_flatten"),
                          ("after_flatten", "inject_virtual_thread"),
                          ("before_codegen", None)):
        i = names.index(f"mark-{stage}")
        seen.append(stage)
        if before is not None:
            assert names[i + 1] == before
        else:
            assert i == len(names) - 1
    assert seen == ["after_lower", "after_flatten", "before_codegen"]


def test_loop_features_see_threads_vthreads_and_shared_bytes(gpu):
    from tensorforge.autotune import Task
    from tensorforge.autotune.features import feature_names, features_of

    task = Task("dense.gpu", (64, 64, 64), gpu)
    cfg = task.config_space.from_json({"knobs": {
        "tile_y": [4, 2, 8, 1], "tile_x": [2, 2, 8, 2], "tile_k": [8, 8],
        "double_buffer": False, "storage_align": False, "unroll": True, "shared": True}})
    f = dict(zip(feature_names(), features_of(task, cfg.index)))
    assert f["gpu_threads"] == pytest.approx(np.log2(1 + 8 * 8))
    assert f["gpu_blocks"] == pytest.approx(np.log2(1 + 4 * 2))
    assert f["gpu_vthreads"] == pytest.approx(np.log2(1 + 2 * 2))
    # X tile: 2 vthreads x 8 rows x 8 k; W tile: 2 x 8 x 2 columns x 8 k, float32
    assert f["gpu_shared_bytes"] == pytest.approx(np.log2(1 + (8 * 8 + 16 * 8) * 4))
