"""The tensor-core dense/matmul strategy: float16 operands, float32 result, every dimension a
multiple of 16 -> one warp per 16x16 output tile, its k loop in steps of 16, the 16x16x16
step tensorized with the registered `wmma` intrinsic (`intrinsics.py`).

Anything else (float32, odd shapes, operands computed in the group) gets core's GPU dense
template, so registering this strategy above it changes nothing for those. An epilogue
(bias, activation) runs as a second kernel over the product, one thread per element.
"""

from __future__ import annotations

from typing import Any

from tensorforge import te
from tensorforge.ops.schedules_gpu import schedule_dense_gpu
from tensorforge.te.tensor import ComputeOp, PlaceholderOp, Tensor

from .intrinsics import NAMES, TILE


def tensorcore_layout(master: Any) -> str | None:
    """"nt" (dense) or "nn" (matmul) when the stage fits the wmma intrinsic, else None."""
    op = master.op if hasattr(master, "op") else master
    tag = str(getattr(op, "tag", "") or "")
    if tag not in ("dense", "matmul") or len(op.axis) != 2 or len(op.reduce_axis) != 1:
        return None
    ins = op.input_tensors
    if len(ins) != 2 or any(not isinstance(t.op, PlaceholderOp) or t.dtype != "float16"
                            for t in ins) or op.output(0).dtype != "float32":
        return None
    dims = [int(a.dom.extent.value) for a in [*op.axis, *op.reduce_axis]]
    if any(d % TILE for d in dims):
        return None
    return "nt" if tag == "dense" else "nn"


def _master(outs: list[Tensor]) -> Any:
    seen, stack = set(), [o.op for o in outs]
    while stack:
        op = stack.pop()
        if op in seen or not isinstance(op, ComputeOp):
            continue
        seen.add(op)
        if str(getattr(op, "tag", "")) in ("dense", "matmul"):
            return op
        stack += [t.op for t in op.input_tensors]
    return None


def schedule_dense_tensorcore(outs: list[Tensor], target: Any, cfg: Any = None) -> Any:
    master_op = _master(outs)
    layout = tensorcore_layout(master_op) if master_op is not None else None
    if layout is None or len(outs) != 1:
        return schedule_dense_gpu(outs, target, cfg)
    s = te.create_schedule([o.op for o in outs])
    master = s[master_op]
    i, j = master.op.axis
    io, ii = master.split(i, factor=TILE)
    jo, ji = master.split(j, factor=TILE)
    ko, ki = master.split(master.op.reduce_axis[0], factor=TILE)
    master.reorder(io, jo, ko, ii, ji, ki)
    master.bind(io, te.thread_axis("blockIdx.y"))
    master.bind(jo, te.thread_axis("blockIdx.x"))
    master.tensorize(ii, te.get_intrin(NAMES[layout], target))
    for st in s.stages:  # the epilogue: elementwise, one thread per element
        if st is master or not isinstance(st.op, ComputeOp):
            continue
        if st.op is not outs[0].op:
            st.compute_inline()
            continue
        fused = st.fuse(*st.op.axis)
        bx, tx = st.split(fused, factor=256 if _size(st) % 256 == 0 else TILE)
        st.bind(bx, te.thread_axis("blockIdx.x"))
        st.bind(tx, te.thread_axis("threadIdx.x"))
    return s


def _size(stage: Any) -> int:
    n = 1
    for a in stage.op.axis:
        n *= int(a.dom.extent.value)
    return n
