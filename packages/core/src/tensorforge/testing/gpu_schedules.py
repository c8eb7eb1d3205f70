"""Hand-written GPU schedules the GPU tests share (lowering goldens, printer goldens, runs on
a device), and a toy GPU target kind for lowering without any runtime."""

from __future__ import annotations

from typing import Any

from tensorforge.plugins import hookimpl
from tensorforge.target import TargetKind, TargetOption

TOY_GPU = TargetKind(name="toygpu", device_type="gpu", keys=("toygpu", "gpu"),
                     options={"max-threads-per-block": TargetOption(int, 1024, ""),
                              "max-shared-memory-per-block": TargetOption(int, 48 * 1024, ""),
                              "thread-warp-size": TargetOption(int, 1, "")},
                     build="tensorforge.codegen.build:build_gpu",
                     description="a GPU kind for lowering tests (no code generator)")


class ToyGPUPlugin:
    """Registers `toygpu`: GPU passes run for it (its keys include "gpu")."""

    @hookimpl
    def register_targets(self, register: Any) -> None:
        register(TOY_GPU)


def shared_matmul(n: int = 64, tile: int = 16) -> tuple[Any, list[Any]]:
    """The paper's cooperative-fetch matmul: tile x tile blocks of threads, A and B tiles
    fetched into shared memory by all threads of a block at each k-step."""
    from tensorforge import te

    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "shared", [C])
    BB = s.cache_read(B, "shared", [C])
    tx, ty = te.thread_axis("threadIdx.x"), te.thread_axis("threadIdx.y")
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], tile, tile)
    s[C].bind(io, te.thread_axis("blockIdx.y"))
    s[C].bind(jo, te.thread_axis("blockIdx.x"))
    s[C].bind(ii, ty)
    s[C].bind(ji, tx)
    ko, ki = s[C].split(k, factor=tile)
    s[C].reorder(io, jo, ii, ji, ko, ki)
    for T in (AA, BB):
        s[T].compute_at(s[C], ko)
        a, b = s[T].op.axis
        s[T].bind(a, ty)
        s[T].bind(b, tx)
    return s, [A, B, C]


def row_sum(nthreads: int, n: int = 100, rows: int = 4) -> tuple[Any, list[Any]]:
    """S[i] = sum_k A[i, k]: a block per row, the k axis split over `nthreads` threads."""
    from tensorforge import te

    A = te.placeholder((rows, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    S = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="S")
    s = te.create_schedule(S.op)
    ko, ki = s[S].split(k, factor=nthreads)
    s[S].bind(S.op.axis[0], te.thread_axis("blockIdx.x"))
    s[S].bind(ki, te.thread_axis("threadIdx.x"))
    return s, [A, S]
