"""The generic GPU schedule: any fused group, every stage bound to threads (never an unbound
kernel).

- injective intermediates (padding, broadcasts, casts, exp of a softmax) are inlined into
  their readers, except stages tagged `materialize` (read many times each, or a chain of
  decisions each reading the last: inlined, the work would multiply) and `injective_root`
  (a separable resize's rows pass): those are computed at root, a kernel each, their results
  in workspaces (as on the CPU, `schedule_generic.py`);
- each output stage's data-parallel axes are fused and split into blocks of `threads`
  (`blockIdx.x` x `threadIdx.x`), one output element per thread, its reduction (if any) a
  serial loop in that thread;
- an output with little data-parallel work but a long reduction (a global sum, a 1 x 1000
  dense) gives each element a block and reduces across its threads instead (a shared-memory
  tree, see `lower_thread_allreduce`);
- a reduction that is not an output is computed where its reader needs it: in a register of
  the reading thread when it has the output's shape (a conv2d under its bias and relu),
  otherwise at root as a kernel of its own whose result goes through a workspace (softmax's
  max and sum, a multi-output group's shared product).

The op-specific templates in `schedules_gpu.py` do better for conv2d, dense, pools, softmax
and layer norm; this one is the fallback every group can take.
"""

from __future__ import annotations

from typing import Any

from ..te.tensor import ComputeOp, Tensor

__all__ = ["bind_elementwise", "gpu_threads", "schedule_gpu_generic"]

#: an output with fewer data-parallel elements than this and a reduction of at least
#: CROSS_THREAD_REDUCE elements per element reduces across threads
SMALL_OUTPUT = 64
CROSS_THREAD_REDUCE = 128


def gpu_threads(target: Any, want: int = 128) -> int:
    """Threads per block: `want`, at most the target's `max-threads-per-block`."""
    opts = getattr(target, "options", None) or {}
    limit = int(opts.get("max-threads-per-block", 1024) or 1024)
    return max(1, min(want, limit))


def _ext(iv: Any) -> int:
    return int(iv.dom.extent.value)


def _prod(axes: list[Any]) -> int:
    n = 1
    for a in axes:
        n *= _ext(a)
    return n


def bind_elementwise(stage: Any, threads: int) -> Any:
    """Fuse the stage's data-parallel axes, split into blocks of `threads` and bind; returns
    the threadIdx axis (None for a 0-d stage)."""
    from .. import te

    axes = list(stage.op.axis)
    if not axes:
        return None
    fused = stage.fuse(*axes) if len(axes) > 1 else axes[0]
    if _prod(axes) <= threads:
        stage.bind(fused, te.thread_axis("threadIdx.x"))
        return fused
    bo, bi = stage.split(fused, factor=threads)
    stage.bind(bo, te.thread_axis("blockIdx.x"))
    stage.bind(bi, te.thread_axis("threadIdx.x"))
    return bi


def bind_cross_thread(stage: Any, threads: int) -> None:
    """One block per data-parallel element (or one block for a 0-d stage), the reduction split
    over its threads."""
    from .. import te

    axes, red = list(stage.op.axis), list(stage.op.reduce_axis)
    r = stage.fuse(*red) if len(red) > 1 else red[0]
    n = min(threads, _prod(red))
    ro, ri = stage.split(r, factor=n)
    if axes:
        fused = stage.fuse(*axes) if len(axes) > 1 else axes[0]
        stage.bind(fused, te.thread_axis("blockIdx.x"))
    stage.bind(ri, te.thread_axis("threadIdx.x"))


def _wants_cross_thread(stage: Any) -> bool:
    red = list(stage.op.reduce_axis)
    return bool(red) and _prod(list(stage.op.axis)) < SMALL_OUTPUT and \
        _prod(red) >= CROSS_THREAD_REDUCE


def bind_stage(stage: Any, threads: int) -> Any:
    """Bind a root stage the generic way; the threadIdx axis of a one-element-per-thread
    binding, else None."""
    if _wants_cross_thread(stage):
        bind_cross_thread(stage, threads)
        return None
    if not stage.op.axis and stage.op.reduce_axis:
        bind_cross_thread(stage, threads)
        return None
    return bind_elementwise(stage, threads)


ROOT_TAGS = ("materialize", "injective_root")


def _at_root(op: Any) -> bool:
    tags = str(getattr(op, "tag", "") or "")
    return any(t in tags for t in ROOT_TAGS)


def _stages(s: Any) -> list[Any]:
    return [st for st in s.stages if isinstance(st.op, ComputeOp)]


def schedule_gpu_generic(outs: list[Tensor] | Tensor, target: Any = None,
                         threads: int | None = None) -> Any:
    """The default GPU schedule of one fused group (see the module docstring)."""
    from .. import te

    outs = [outs] if isinstance(outs, Tensor) else list(outs)
    s = te.create_schedule([o.op for o in outs])
    n = threads or gpu_threads(target)
    out_ops = {o.op for o in outs}
    reductions = [st for st in _stages(s) if st.op.reduce_axis and st.op not in out_ops]
    for st in _stages(s):
        if st.op in out_ops or st.op.reduce_axis:
            continue
        if _at_root(st.op):
            bind_stage(st, n)
        else:
            st.compute_inline()
    tx = {o.op: bind_stage(s[o], n) for o in outs}
    main = outs[0]
    shape = [_ext(a) for a in main.op.axis]
    for r in reductions:
        if len(outs) == 1 and tx[main.op] is not None and \
                [_ext(a) for a in r.op.axis] == shape:
            r.compute_at(s[main], tx[main.op])  # in the reading thread's registers
        else:
            bind_stage(r, n)
    return s
