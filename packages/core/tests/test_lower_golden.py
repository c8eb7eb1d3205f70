"""The loop IR printed by `tensorforge.lower` is readable and stable (golden text)."""

import tensorforge
from tensorforge import te

GOLDEN_MATMUL = """\
def main(A: Buffer[(1024), float32], B: Buffer[(1024), float32], C: Buffer[(1024), float32]):
  for i.outer in range(4):  # parallel
    for j.outer in range(4):
      for i.inner in range(8):
        C[ramp(i.outer * 256 + i.inner * 32 + j.outer * 8, 1, 8)] = x8(0.0f)
        for k in range(32):
          C[ramp(i.outer * 256 + i.inner * 32 + j.outer * 8, 1, 8)] = \
C[ramp(i.outer * 256 + i.inner * 32 + j.outer * 8, 1, 8)] + \
x8(A[i.outer * 256 + i.inner * 32 + k]) * B[ramp(k * 32 + j.outer * 8, 1, 8)]"""

GOLDEN_MATMUL_SIMPLE = """\
def main(A: Buffer[(32, 32), float32], B: Buffer[(32, 32), float32], C: Buffer[(32, 32), float32]):
  for i.outer in range(4):  # parallel
    for j.outer in range(4):
      for i.inner in range(8):
        for j.inner in range(8):  # vectorized
          C[i.outer * 8 + i.inner, j.outer * 8 + j.inner] = 0.0f
          for k in range(32):
            C[i.outer * 8 + i.inner, j.outer * 8 + j.inner] = \
C[i.outer * 8 + i.inner, j.outer * 8 + j.inner] + \
A[i.outer * 8 + i.inner, k] * B[k, j.outer * 8 + j.inner]"""


def _matmul_schedule():
    n = 32
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 8)
    s[C].reorder(io, jo, ii, ji, k)
    s[C].parallel(io)
    s[C].vectorize(ji)
    return s, [A, B, C]


def test_lowered_matmul_simple_mode_golden():
    s, args = _matmul_schedule()
    assert str(tensorforge.lower(s, args, simple_mode=True)) == GOLDEN_MATMUL_SIMPLE


def test_lowered_matmul_vectorized_golden():
    n = 32
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 8, 8)
    s[C].reorder(io, jo, ii, k, ji)
    s[C].parallel(io)
    s[C].vectorize(ji)
    assert str(tensorforge.lower(s, [A, B, C])) == GOLDEN_MATMUL
