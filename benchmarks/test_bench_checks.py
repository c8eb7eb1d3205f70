"""What the index checks in generated code cost (issue 12; aim: < 2%).

Each workload is compiled with checks and without (`ops.indexing.without_index_checks`, which
exists for this measurement only) and the two run in alternation in the same process; the
ratio is the median of per-round (unchecked / checked) time ratios, so 98% means the checks
cost 2%. Workloads:

- the LSTM LM (its embedding Gather reads the 35 token ids from the input: one checked
  kernel), whole model, and that Gather kernel alone;
- ResNet-18 (no data-indexed op: no check is generated; the figure is the noise floor);
- a transformer-sized embedding lookup (4096 token ids into a 50000 x 512 table): a check per
  row of 512 floats;
- GatherElements over 1M float32 elements along the last axis: a check per element, the
  worst case (vectorized gathers, the compare vectorized with them).
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

import numpy as np
import pytest
from _common import Row, interleaved, quartiles

import tensorforge
from tensorforge.ops.indexing import without_index_checks


def _checks(cm: Any) -> int:
    return sum(a.startswith("check:") for i in getattr(cm.module, "infos", [])
               for a in i.asserts)


def _workload(name: str) -> tuple[Any, dict[str, np.ndarray], int]:
    """(model, inputs, executions per timed round)."""
    from tensorforge_onnx import models
    from tensorforge_onnx.conformance import one_op_model

    rng = np.random.default_rng(0)
    if name in ("lstm_lm", "resnet18"):
        return models.build(name), models.example_inputs(name), 20 if name == "lstm_lm" else 3
    if name == "embedding":
        table = rng.standard_normal((50000, 512)).astype("float32")
        ids = rng.integers(0, 50000, (1, 4096)).astype("int64")
        return one_op_model("Gather", {"ids": ids}, {"table": table}, {"axis": 0},
                            input_names=["table", "ids"]), {"ids": ids}, 5
    x = rng.standard_normal((1024, 1024)).astype("float32")
    idx = rng.integers(-1024, 1024, (1024, 1024)).astype("int64")
    return one_op_model("GatherElements", {"x": x, "i": idx}, {}, {"axis": 1}), \
        {"x": x, "i": idx}, 5


def _kernel_runner(cm: Any, op: str, number: int) -> Any:
    """Call the kernel of the first group with `op` `number` times, on zero-filled arguments
    of its signature (zero indices are valid; the time does not depend on the values)."""
    for k in cm.desc["kernels"]:
        if op in k["ops"]:
            fn = cm.module[k["name"]]
            arrays = [np.zeros(p.shape, p.dtype) for p in fn.params]
            ptrs = [a.ctypes.data for a in arrays]
            raw = fn._cfunc  # the C function, without the Python-side argument checks

            def run(raw: Any = raw, ptrs: list[int] = ptrs) -> None:
                for _ in range(number):
                    raw(*ptrs)

            run.arrays = arrays  # type: ignore[attr-defined]  (kept alive with run)
            return run
    raise AssertionError(f"no kernel with {op}")


def model_runner(cm: Any, feeds: dict[str, np.ndarray], number: int, stack: ExitStack) -> Any:
    """Execute the whole model `number` times in one arena (held open by `stack`), inputs
    set once, as `CompiledModel.benchmark` does."""
    ex = cm.executor
    arena = stack.enter_context(ex.arena())
    ex.set_inputs(arena, feeds)

    def run() -> None:
        for _ in range(number):
            ex.execute(arena)

    return run


@pytest.mark.parametrize("name", ["lstm_lm", "lstm_lm:gather", "resnet18", "embedding",
                                  "gather_elements"])
def test_index_check_cost(benchmark, llvm_target, plugins, report, rounds, threads, name):
    plugins.register("tensorforge_onnx.plugin", "onnx", distribution="tensorforge-frontend-onnx")
    model_name, _, kernel = name.partition(":")
    m, feeds, number = _workload(model_name)
    target = f"llvm -num-threads={threads}"
    checked = tensorforge.compile(m, target=target)
    with without_index_checks():
        unchecked = tensorforge.compile(m, target=target)
    np.testing.assert_array_equal(checked.run(feeds)[0], unchecked.run(feeds)[0])
    n_checks = _checks(checked)
    assert _checks(unchecked) == 0 and (n_checks > 0) == (model_name != "resnet18")
    with ExitStack() as stack:
        if kernel:
            number *= 50
            run_checked = _kernel_runner(checked, "take", number)
            run_unchecked = _kernel_runner(unchecked, "take", number)
        else:
            run_checked = model_runner(checked, feeds, number, stack)
            run_unchecked = model_runner(unchecked, feeds, number, stack)
        mine, base = interleaved(benchmark, run_checked, run_unchecked, rounds)
    if not mine:
        return
    ratios = [b / a for a, b in zip(mine, base)]
    unit, scale = ("us", 1e6) if kernel else ("ms", 1e3)
    report.add(Row(f"{name} with index checks ({n_checks} in the code)", threads, unit,
                   quartiles([t / number * scale for t in mine]), "without checks",
                   quartiles([t / number * scale for t in base]), quartiles(ratios),
                   ">= 98%", quartiles(ratios)[1] >= 0.98))
    benchmark.extra_info.update(checks=n_checks, ratio_median=quartiles(ratios)[1])
