"""Tensor cores as a tensor intrinsic: `wmma` 16x16x16, float16 inputs, float32 accumulators.

Registered through `register_intrinsics` (the paper's point: new hardware plugs in as a
table of semantics + implementation), in two operand layouts:

- `wmma_16x16x16_f16f32_nt`: c[i, j] = sum_k f32(a[i, k]) * f32(b[j, k]) (dense: weights
  (N, K), the layout of ONNX Gemm with transB);
- `wmma_16x16x16_f16f32_nn`: c[i, j] = sum_k f32(a[i, k]) * f32(b[k, j]) (matmul).

The implementation is a warp-wide call: the 32 threads of a warp load the operand tiles into
fragments, `mma_sync`, and store the accumulator tile (row-major float). It is emitted inside
a loop bound to `threadIdx.x` of extent 32, so the kernel launches one warp per tile and every
lane makes the call, as `wmma` requires. Tensorize checks that the matched loop nest computes
exactly the TE semantics above before it substitutes the call. The helpers require what the
strategy guarantees: tile pointers 32-byte aligned, leading dimensions multiples of 16.
"""

from __future__ import annotations

from typing import Any

from tensorforge import te
from tensorforge.expr import Buffer, BufferLoad, StringImm, Var
from tensorforge.expr import construct as _c
from tensorforge.tir import stmt as tir

TILE = 16
WARP = 32
NAMES = {"nt": "wmma_16x16x16_f16f32_nt", "nn": "wmma_16x16x16_f16f32_nn"}

#: the printer's spellings of the calls (the dialect merges these into its math table)
WMMA_MATH = {
    ("cuda.wmma_fill", ""): "tf_wmma_fill({0}, {1})",
    ("cuda.wmma_mma_nt", ""): "tf_wmma_mma<nvcuda::wmma::col_major>({0}, {1}, {2}, {3}, {4}, "
                              "{5}, {6})",
    ("cuda.wmma_mma_nn", ""): "tf_wmma_mma<nvcuda::wmma::row_major>({0}, {1}, {2}, {3}, {4}, "
                              "{5}, {6})",
}

WMMA_HELPERS = """\
static __device__ __forceinline__ void tf_wmma_fill(float* c, int ldc) {
  nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> acc;
  nvcuda::wmma::fill_fragment(acc, 0.0f);
  nvcuda::wmma::store_matrix_sync(c, acc, ldc, nvcuda::wmma::mem_row_major);
}
template <typename LayoutB>
static __device__ __forceinline__ void tf_wmma_mma(float* c, int ldc, const half* a, int lda,
                                                   const half* b, int ldb, int accumulate) {
  nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, half,
                         nvcuda::wmma::row_major> fa;
  nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, half, LayoutB> fb;
  nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> acc;
  if (accumulate) {
    nvcuda::wmma::load_matrix_sync(acc, c, ldc, nvcuda::wmma::mem_row_major);
  } else {
    nvcuda::wmma::fill_fragment(acc, 0.0f);
  }
  nvcuda::wmma::load_matrix_sync(fa, a, lda);
  nvcuda::wmma::load_matrix_sync(fb, b, ldb);
  nvcuda::wmma::mma_sync(acc, fa, fb, acc);
  nvcuda::wmma::store_matrix_sync(c, acc, ldc, nvcuda::wmma::mem_row_major);
}"""


def _bind(t: te.Tensor) -> Buffer:
    strides = [Var(f"{t.name}_s0"), 1]
    return Buffer(t.name, t.shape, t.dtype, "global", strides=strides,
                  elem_offset=Var(f"{t.name}_elem_offset"))


def _desc(layout: str) -> tuple[te.Tensor, dict]:
    a = te.placeholder((TILE, TILE), "float16", name="a")
    b = te.placeholder((TILE, TILE), "float16", name="b")
    k = te.reduce_axis((0, TILE), name="k")

    def b_at(j: Any) -> Any:
        return b[j, k] if layout == "nt" else b[k, j]

    c = te.compute((TILE, TILE), lambda i, j: te.sum(
        a[i, k].astype("float32") * b_at(j).astype("float32"), axis=k), name="c")
    return c, {a: _bind(a), b: _bind(b), c: _bind(c)}


def wmma_nt_desc(target: Any) -> tuple[te.Tensor, dict]:
    return _desc("nt")


def wmma_nn_desc(target: Any) -> tuple[te.Tensor, dict]:
    return _desc("nn")


def address_of(buf: Buffer, mode: str = "rw") -> Any:
    """The address of `buf`'s first element (storage flattening rewrites it like any access);
    mode "r": the call only reads there (the kernel parameter stays `const`)."""
    return _c.call("handle", "address_of", BufferLoad(buf, (_c.const(0), _c.const(0))),
                   StringImm(mode))


def warp_wide(call: Any) -> Any:
    """`call` made by every lane of one warp: a loop bound to threadIdx.x, extent 32."""
    lane = Var("wmma_lane")
    return tir.For(lane, _c.const(0), _c.const(WARP), "thread_binding", tir.Evaluate(call),
                   thread_tag="threadIdx.x")


def _impl(layout: str, ins: list[Buffer], outs: list[Buffer]) -> tuple[Any, Any, Any]:
    a, b = ins
    (c,) = outs

    def mma(accumulate: int) -> Any:
        return warp_wide(_c.call("int32", f"cuda.wmma_mma_{layout}", address_of(c),
                                 c.strides[0], address_of(a, "r"), a.strides[0], address_of(b, "r"),
                                 b.strides[0], accumulate))

    reset = warp_wide(_c.call("int32", "cuda.wmma_fill", address_of(c), c.strides[0]))
    return mma(0), reset, mma(1)


def wmma_nt_impl(ins: list[Buffer], outs: list[Buffer], target: Any) -> tuple[Any, Any, Any]:
    return _impl("nt", ins, outs)


def wmma_nn_impl(ins: list[Buffer], outs: list[Buffer], target: Any) -> tuple[Any, Any, Any]:
    return _impl("nn", ins, outs)


def intrinsic_refs() -> dict[str, tuple[str, str]]:
    """Registered name -> (desc, impl) references, for `plugin.register_intrinsics`."""
    return {name: (f"{__name__}:wmma_{lay}_desc", f"{__name__}:wmma_{lay}_impl")
            for lay, name in NAMES.items()}
