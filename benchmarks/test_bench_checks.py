"""What the index checks in generated code cost (issue 12; aim: < 2%): the LSTM LM (its
embedding Gather reads token ids from the input, so every lookup is checked) and ResNet-18
(no data-indexed op: no check is generated, the figure shows the noise floor), each compiled
with checks and without (`ops.indexing.without_index_checks`, which exists for this
measurement only), the two executed in alternation in the same process; the ratio is the
median of per-round (unchecked / checked) time ratios, so 98% means the checks cost 2%."""

from __future__ import annotations

import numpy as np
import pytest
from _common import Row, interleaved, quartiles

import tensorforge
from tensorforge.ops.indexing import without_index_checks


def _checks(cm: object) -> int:
    infos = getattr(cm.module, "infos", [])  # type: ignore[attr-defined]
    return sum(a.startswith("check:") for i in infos for a in i.asserts)


@pytest.mark.parametrize("name", ["lstm_lm", "resnet18"])
def test_index_check_cost(benchmark, llvm_target, plugins, report, rounds, threads, name):
    from tensorforge_onnx import models

    plugins.register("tensorforge_onnx.plugin", "onnx", distribution="tensorforge-frontend-onnx")
    m, feeds = models.build(name), models.example_inputs(name)
    target = f"llvm -num-threads={threads}"
    checked = tensorforge.compile(m, target=target)
    with without_index_checks():
        unchecked = tensorforge.compile(m, target=target)
    np.testing.assert_array_equal(checked.run(feeds)[0], unchecked.run(feeds)[0])
    n_checks = _checks(checked)
    assert _checks(unchecked) == 0 and (n_checks > 0) == (name == "lstm_lm")
    number = 20 if name == "lstm_lm" else 3

    def run_checked() -> None:
        for _ in range(number):
            checked.executor.execute()

    def run_unchecked() -> None:
        for _ in range(number):
            unchecked.executor.execute()

    mine, base = interleaved(benchmark, run_checked, run_unchecked, rounds)
    if not mine:
        return
    ratios = [b / a for a, b in zip(mine, base)]
    ms = [t / number * 1e3 for t in mine]
    report.add(Row(f"{name} with index checks ({n_checks} in the code)", threads, "ms",
                   quartiles(ms), "without checks",
                   quartiles([t / number * 1e3 for t in base]), quartiles(ratios),
                   ">= 98%", quartiles(ratios)[1] >= 0.98))
    benchmark.extra_info.update(checks=n_checks, ratio_median=quartiles(ratios)[1])
