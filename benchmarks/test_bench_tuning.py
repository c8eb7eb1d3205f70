"""Search efficiency (issue 6): trials the model-based tuner (xgboost + simulated annealing,
or exhaustive scoring on spaces up to 512 configs) needs to reach 95% / 99% of the best
GFLOP/s of a long random search, against random search's own; also xgboost pretrained on the
other tasks' tables (transfer) and the genetic tuner.

The "long random search" is a table per task (``tuner_efficiency.py``): every config of the
space (or a random sample of 400 of the matmul's 1680), measured once with the minimum of 3
timings. The tuners are then replayed against the table (their own code, only measurement
replaced by a look-up) over 20 seeds each, so the comparison is about the order in which
configs are tried, not the machine's noise, and the median and quartiles over seeds are
reported. The default config is neither given to the tuners nor counted.

A missing table is measured first (about 0.3-0.5 s per config on one thread); the replay
itself takes seconds to a minute per task.
"""

from __future__ import annotations

import pytest
from _common import Row
from tuner_efficiency import (
    GOALS,
    TUNERS,
    load_tables,
    make_tasks,
    measure_table,
    report,
    run_replay,
    table_path,
)

from tensorforge.autotune.replay import summarize

NAMES = list(make_tasks())


@pytest.mark.parametrize("name", NAMES, ids=[n.split(" (")[0].replace(" ", "_") for n in NAMES])
def test_tuning_efficiency(benchmark, llvm_target, plugins, report_rows, name) -> None:
    pytest.importorskip("xgboost")
    plugins.register("tensorforge_xgboost.plugin", "xgboost",
                     distribution="tensorforge-costmodel-xgboost")
    plugins.register("tensorforge_onnx.plugin", "onnx", distribution="tensorforge-frontend-onnx")
    if not table_path(name).exists():
        measure_table(name, make_tasks()[name]())
    tables = load_tables()  # this task is replayed; the others are the transfer data
    outcomes: list = []

    def search() -> None:
        outcomes[:] = run_replay(tables, seeds=20, only=name)

    benchmark.pedantic(search, rounds=1, iterations=1, warmup_rounds=0)
    (o,) = outcomes
    print("\n" + report(outcomes))
    for g in GOALS:
        rnd = summarize(o.trials["random"][g])
        for tuner in TUNERS[1:]:
            med = summarize(o.trials[tuner][g])
            report_rows.add(Row(
                f"tuning {name}: trials to {int(g * 100)}% of the best, {tuner}", 1, "trials",
                (med[1], med[0], med[2]), "random search", (rnd[1], rnd[0], rnd[2]),
                (rnd[0] / med[0],) * 3, "<= 1/3 of random's trials",
                med[0] * 3 <= rnd[0],
                {"space": o.space, "searched": o.searched, "best_gflops": o.best_gflops,
                 "default_gflops": o.default_gflops}))
    benchmark.extra_info.update(space=o.space, searched=o.searched, best_gflops=o.best_gflops,
                                trials={t: {str(g): v for g, v in d.items()}
                                        for t, d in o.trials.items()})


@pytest.fixture
def report_rows(report):  # noqa: ANN001, ANN201 - the suite's summary report
    return report
