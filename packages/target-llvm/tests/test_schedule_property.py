"""Property test: random valid schedules of matmul and conv2d must all match numpy.

Each example draws a schedule: splits (factors that divide and that do not, or nparts),
a random reorder of the leaf axes (any permutation is legal: reduction axes may go anywhere),
fuse of adjacent axes of one kind, vectorize of a data-parallel leaf, unroll of small leaves,
parallel of an outermost data-parallel leaf, compute_at of the padding stage at a random
consumer leaf (or inline, or root), cache_write with compute_at. The schedule is built with
the llvm target and compared with numpy (float32: rtol 1e-5, atol 1e-6 * K); on a mismatch
the message lists the primitives applied and the lowered IR.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorforge
from tensorforge import ops, te
from tensorforge.ops import reference as ref
from tensorforge.te.tensor import REDUCE

# TF_PROPERTY_EXAMPLES=400 runs a longer search locally; CI keeps 40 per test
SETTINGS = settings(
    max_examples=int(os.environ.get("TF_PROPERTY_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


class Recorder:
    """Applies schedule primitives while keeping leaf extents and a readable log."""

    def __init__(self, s: Any, data: Any):
        self.s = s
        self.data = data
        self.log: list[str] = []
        self.ext: dict[Any, int] = {}

    def draw(self, strategy: Any) -> Any:
        return self.data.draw(strategy)

    def init_stage(self, t: Any) -> None:
        stage = self.s[t]
        for iv in stage.leaf_iter_vars:
            self.ext[iv] = int(iv.dom.extent.value)

    def random_stage(self, t: Any, parallel: bool, max_splits: int = 2) -> None:
        """Splits, a reorder, maybe a fuse, and annotations on stage `t`."""
        stage = self.s[t]
        name = stage.name
        for iv in list(stage.leaf_iter_vars):
            todo = [iv]
            for _ in range(self.draw(st.integers(0, max_splits))):
                cur = todo.pop()
                e = self.ext[cur]
                amount = self.draw(st.sampled_from(sorted({1, 2, 3, 4, 5, 7, 8, 16, e, e + 3})))
                if self.draw(st.booleans()):
                    o, i = stage.split(cur, factor=amount)
                    self.ext[o], self.ext[i] = -(-e // amount), amount
                    self.log.append(f"{name}.split({cur.name}, factor={amount})")
                else:
                    o, i = stage.split(cur, nparts=amount)
                    self.ext[o], self.ext[i] = amount, -(-e // amount)
                    self.log.append(f"{name}.split({cur.name}, nparts={amount})")
                todo.append(self.draw(st.sampled_from([o, i])))
        perm = self.draw(st.permutations(list(stage.leaf_iter_vars)))
        stage.reorder(*perm)
        self.log.append(f"{name}.reorder({', '.join(v.name for v in perm)})")
        leaves = stage.leaf_iter_vars
        pairs = [p for p in range(len(leaves) - 1) if leaves[p].kind == leaves[p + 1].kind]
        if pairs and self.draw(st.booleans()):
            p = self.draw(st.sampled_from(pairs))
            a, b = leaves[p], leaves[p + 1]
            f = stage.fuse(a, b)
            self.ext[f] = self.ext[a] * self.ext[b]
            self.log.append(f"{name}.fuse({a.name}, {b.name})")
        self.annotate(t, parallel)

    def annotate(self, t: Any, parallel: bool) -> None:
        stage = self.s[t]
        name = stage.name
        leaves = list(stage.leaf_iter_vars)
        taken: set[Any] = set()
        dp = [iv for iv in leaves if iv.kind != REDUCE]
        if parallel and dp and self.draw(st.booleans()):
            # mostly the outermost leaf; sometimes a data-parallel leaf inside other loops
            # (even inside a reduction loop: each iteration is then one parallel region)
            iv = leaves[0] if leaves[0].kind != REDUCE and self.draw(st.booleans()) else (
                self.draw(st.sampled_from(dp)))
            stage.parallel(iv)
            taken.add(iv)
            self.log.append(f"{name}.parallel({iv.name})")
        vec = [iv for iv in dp if iv not in taken and self.ext[iv] <= 64]
        if vec and self.draw(st.booleans()):
            # mostly the innermost data-parallel leaf, sometimes any
            iv = vec[-1] if self.draw(st.booleans()) else self.draw(st.sampled_from(vec))
            stage.vectorize(iv)
            taken.add(iv)
            self.log.append(f"{name}.vectorize({iv.name})")
        small = [iv for iv in leaves if iv not in taken and self.ext[iv] <= 8]
        if small and self.draw(st.booleans()):
            iv = self.draw(st.sampled_from(small))
            stage.unroll(iv)
            self.log.append(f"{name}.unroll({iv.name})")

    def attach(self, producer: Any, consumer: Any, allow_inline: bool) -> str:
        """Inline, root, or compute_at a random leaf of the consumer."""
        choices = ["root", "at"] + (["inline"] if allow_inline else [])
        how = self.draw(st.sampled_from(choices))
        stage = self.s[producer]
        if how == "inline":
            stage.compute_inline()
            self.log.append(f"{stage.name}.compute_inline()")
        elif how == "at":
            leaves = self.s[consumer].leaf_iter_vars
            iv = self.draw(st.sampled_from(list(leaves)))
            stage.compute_at(self.s[consumer], iv)
            self.log.append(f"{stage.name}.compute_at({self.s[consumer].name}, {iv.name})")
        return how


def _check(s: Any, args: list[Any], inputs: list[np.ndarray], expected: np.ndarray, k: int,
           rec: Recorder) -> None:
    schedule = "\n".join(rec.log)
    try:
        f = tensorforge.build(s, args, target="llvm")
    except Exception as e:  # every drawn schedule is valid: it must compile
        raise AssertionError(f"schedule failed to build:\n{schedule}\n{e!r}") from e
    out = np.full(expected.shape, np.nan, dtype="float32")
    f(*inputs, out)
    if not np.allclose(out, expected, rtol=1e-5, atol=max(1e-5, 1e-6 * k)):
        err = np.nanmax(np.abs(out - expected)) if not np.isnan(out).all() else "nan"
        raise AssertionError(
            f"mismatch (max err {err}, nan {int(np.isnan(out).sum())})\nschedule:\n{schedule}\n"
            f"IR:\n{tensorforge.lower(s, args)}"
        )


@pytest.mark.parametrize("shape", [(17, 23, 19), (32, 32, 32)],
                         ids=["17x23x19", "32x32x32"])
@SETTINGS
@given(data=st.data())
def test_matmul_random_schedule(llvm_target: Any, shape: tuple[int, int, int],
                                data: Any) -> None:
    m, n, k = shape
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    C = ops.matmul(A, B)
    # sometimes a relu epilogue: the matmul is then an intermediate stage to attach
    epilogue = data.draw(st.booleans(), label="epilogue")
    out = te.compute((m, n), lambda i, j: te.max_expr(C[i, j], 0.0), name="D") if (
        epilogue) else C
    s = te.create_schedule(out.op)
    rec = Recorder(s, data)
    reader = C
    if epilogue:
        rec.log.append("D = relu(C)")
        rec.init_stage(out)
        rec.init_stage(C)
        rec.random_stage(out, parallel=True, max_splits=1)
        rec.attach(C, out, allow_inline=False)
        rec.random_stage(C, parallel=s[C].attach_type == "root", max_splits=1)
    elif data.draw(st.booleans(), label="cache_write"):
        reader = s.cache_write(C, "local")
        rec.log.append("CC = cache_write(C, 'local')")
        rec.init_stage(C)
        rec.init_stage(reader)
        rec.random_stage(C, parallel=True, max_splits=1)
        rec.attach(reader, C, allow_inline=False)
        c_par = any(a.kind == "parallel" for a in s[C].iter_var_attrs.values())
        rec.random_stage(reader, parallel=not c_par and s[reader].attach_type == "root")
    else:
        rec.init_stage(C)
        rec.random_stage(C, parallel=True)
    if data.draw(st.booleans(), label="cache_read"):
        AA = s.cache_read(A, "local", [reader])
        rec.log.append(f"AA = cache_read(A, 'local', [{s[reader].name}])")
        rec.init_stage(AA)
        if rec.attach(AA, reader, allow_inline=False) == "root":
            rec.random_stage(AA, parallel=True, max_splits=1)
        else:
            rec.annotate(AA, parallel=False)
    rng = np.random.default_rng(len(rec.log))
    a = rng.uniform(-1, 1, (m, k)).astype("float32")
    b = rng.uniform(-1, 1, (k, n)).astype("float32")
    expected = a.astype("float64") @ b
    if epilogue:
        expected = np.maximum(expected, 0)
    _check(s, [A, B, out], [a, b], expected, k, rec)


@st.composite
def conv_shapes(draw: Any) -> tuple[int, ...]:
    c = draw(st.integers(3, 8))
    hw = draw(st.integers(7, 12))
    o = draw(st.integers(4, 8))
    stride = draw(st.integers(1, 2))
    pad = draw(st.integers(0, 1))
    return (1, c, hw, hw, o, 3, stride, pad)


@SETTINGS
@given(shape=conv_shapes(), data=st.data())
def test_conv2d_random_schedule(llvm_target: Any, shape: tuple[int, ...], data: Any) -> None:
    n, c, h, w, o, k, stride, pad = shape
    X = te.placeholder((n, c, h, w), name="X")
    W = te.placeholder((o, c, k, k), name="W")
    C = ops.conv2d_nchw(X, W, stride, pad)
    P = C.op.input_tensors[0] if pad else None
    s = te.create_schedule(C.op)
    rec = Recorder(s, data)
    rec.log.append(f"# conv2d {shape}")
    consumer = C
    if data.draw(st.booleans(), label="cache_write"):
        CC = s.cache_write(C, "local")
        rec.log.append("CC = cache_write(C, 'local')")
        rec.init_stage(C)
        rec.init_stage(CC)
        rec.random_stage(C, parallel=True, max_splits=1)
        rec.attach(CC, C, allow_inline=False)
        rec.random_stage(CC, parallel=s[CC].attach_type == "root", max_splits=1)
        consumer = CC
    else:
        rec.init_stage(C)
        rec.random_stage(C, parallel=True, max_splits=1)
    if P is not None:
        rec.init_stage(P)
        how = rec.attach(P, consumer, allow_inline=True)
        if how == "root":
            rec.random_stage(P, parallel=True, max_splits=1)
        elif how == "at":
            rec.random_stage(P, parallel=False, max_splits=1)
    rng = np.random.default_rng(len(rec.log))
    x = rng.uniform(-1, 1, (n, c, h, w)).astype("float32")
    wt = rng.uniform(-1, 1, (o, c, k, k)).astype("float32")
    expected = ref.conv2d_nchw(x.astype("float64"), wt.astype("float64"), stride, pad)
    _check(s, [X, W, C], [x, wt], expected, c * k * k, rec)
