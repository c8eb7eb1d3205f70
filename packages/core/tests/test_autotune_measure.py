"""Measurement survives every way a candidate can fail; executors isolate jobs."""

from __future__ import annotations

from tensorforge.autotune import (
    COMPILE_ERROR,
    RUNTIME_ERROR,
    TIMEOUT,
    WRONG_RESULT,
    Builder,
    Database,
    LocalExecutor,
    Measurer,
    Runner,
    Task,
    tune_task,
)
from tensorforge.testing import autotune_templates

EXPECTED = {"none": None, "raise": COMPILE_ERROR, "segfault": RUNTIME_ERROR, "hang": TIMEOUT,
            "wrong": WRONG_RESULT}


def test_local_executor_isolates_jobs() -> None:
    with LocalExecutor(2, plugins=[]) as ex:
        res = ex.map("math:sqrt", [4.0, -1.0], timeout=30)
        assert res[0].ok and res[0].value == 2.0
        assert res[1].status == "error" and "ValueError" in res[1].error
        res = ex.map("ctypes:string_at", [0], timeout=30)  # reads address 0: SIGSEGV
        assert res[0].status == "crash" and "SIGSEGV" in res[0].error
        res = ex.map("time:sleep", [60, 0], timeout=1.5)
        assert res[0].status == "timeout" and res[1].ok
        assert ex.restarts == 2
        assert ex.map("math:sqrt", [9.0], timeout=30)[0].value == 3.0  # still serving


def test_each_fault_gets_its_error_class(llvm_target) -> None:
    task = Task("testing/faulty", (64,), "llvm -num-threads=1")
    space = task.config_space
    tile = space.knobs["tile"].default
    order = autotune_templates.FAULTS
    idx = [space.index_of_positions([tile, order.index(f)]) for f in order]
    with Measurer(Builder(timeout=30, n_parallel=2), Runner(timeout=2)) as m:
        results = m.measure(task, idx)
        # the measurer is still usable after crashes and time-outs
        again = m.measure(task, [space.index_of_positions([0, 0])])
    for fault, r in zip(order, results):
        assert r.error_class == EXPECTED[fault], (fault, r.error_msg)
        assert r.ok == (fault == "none") and bool(r.costs) == r.ok
    assert "ValueError" in results[1].error_msg and "SIGSEGV" in results[2].error_msg
    assert again[0].ok


def test_tuning_goes_on_past_failures(llvm_target, tmp_path) -> None:
    task = Task("testing/faulty", (1,), "llvm -num-threads=1")  # one tile: 5 configs
    db = Database(tmp_path / "t.db")
    measurer = Measurer(Builder(timeout=30, n_parallel=2), Runner(timeout=1))
    with measurer:
        res = tune_task(task, len(task.config_space), tuner="grid", db=db, measurer=measurer,
                        batch_size=10)
    assert res.n_measured == len(task.config_space) == db.count(task.key)
    n_tiles = len(task.config_space.knobs["tile"])
    assert res.errors == {COMPILE_ERROR: n_tiles, RUNTIME_ERROR: n_tiles, TIMEOUT: n_tiles,
                          WRONG_RESULT: n_tiles}
    best = db.best(task.key, task.target_str)
    assert best is not None and task.config(best.config_index)["fault"].val == "none"
    recs = db.records(task.key)
    assert {r.error_class for r in recs} == set(EXPECTED.values())
    assert all(r.error_msg for r in recs if r.error_class)


def test_unchecked_measurement_and_timing_options(llvm_target) -> None:
    task = Task("testing/faulty", (16,), "llvm -num-threads=1")
    runner = Runner(number=2, repeat=4, min_repeat_ms=1, flush_cache=True, timeout=20)
    with Measurer(Builder(n_parallel=1), runner) as m:
        idx = task.config_space.index_of_positions([0, autotune_templates.FAULTS.index("wrong")])
        (r,) = m.measure(task, [idx], check=False)
    # flush_cache: single calls, at least `repeat` and at most 10x as many (a tiny kernel)
    assert r.ok and 4 <= len(r.costs) <= 40 and all(c > 0 for c in r.costs)


def test_cache_flush_sweeps_before_every_timed_call(llvm_target, monkeypatch) -> None:
    """With flush_cache each timed call is one call after its own sweep (a kernel inside a
    model finds its weights in memory, not in the cache a back-to-back loop warmed); without,
    no sweep and `number` calls per timing. make_measurer flushes by default."""
    from tensorforge.autotune import measure
    from tensorforge.autotune.tune_tasks import make_measurer

    task = Task("testing/faulty", (16,), "llvm -num-threads=1")
    idx = task.config_space.index_of_positions([0, autotune_templates.FAULTS.index("none")])
    art = measure.build_job({"task": task.to_json(), "index": idx})
    sweeps: list[int] = []
    monkeypatch.setattr(measure, "_flush_cache", lambda: sweeps.append(1))
    warmed: list[tuple] = []  # the data input is read back in after each sweep
    monkeypatch.setattr(measure, "_warm", lambda a: warmed.append(a.shape))

    def payload(flush: bool) -> dict:
        return {"artifact": art, "seed": 0, "ref": None, "rtol": 1e-3, "number": 3,
                "repeat": 5, "min_repeat_ms": 2.0, "flush_cache": flush}

    out = measure.run_job(payload(True))
    assert 5 <= len(out["costs"]) <= 50 and len(sweeps) == len(out["costs"])
    assert warmed == [tuple(art["specs"][0][0])] * len(sweeps)
    sweeps.clear()
    warmed.clear()
    out = measure.run_job(payload(False))
    assert len(out["costs"]) == 5 and not sweeps and not warmed
    with make_measurer(n_parallel=1) as m:
        assert m.runner.flush_cache
    with make_measurer(n_parallel=1, cache_flush=False) as m:
        assert not m.runner.flush_cache


class _CountingExecutor(LocalExecutor):
    """A local executor that counts the build jobs it runs."""

    def __init__(self, n: int):
        super().__init__(n, plugins=None)
        self.built: list[int] = []

    def map(self, fn, payloads, timeout, resource=None):
        if fn.endswith(":build_job"):
            self.built += [p["index"] for p in payloads]
        return super().map(fn, payloads, timeout, resource)


def test_builder_keeps_recent_builds_not_failures(llvm_target) -> None:
    """A config built again (the confirmation times each pair twice) is not compiled again;
    a failed build is tried again, and the oldest builds make room for new ones."""
    task = Task("testing/faulty", (64,), "llvm -num-threads=1")
    space = task.config_space
    tile = space.knobs["tile"].default
    ok, bad = (space.index_of_positions([tile, autotune_templates.FAULTS.index(f)])
               for f in ("none", "raise"))
    with _CountingExecutor(2) as ex:
        b = Builder(timeout=30, executor=ex)
        first = b.build(task, [ok, bad])
        again = b.build(task, [bad, ok, ok])
        assert ex.built == [ok, bad, bad]
        assert again[1] is first[0] and again[2] is first[0] and again[0].artifact is None
        b.KEEP = 1
        other = space.index_of_positions([0, 0])
        b.build(task, [other])
        b.build(task, [ok])
        assert ex.built == [ok, bad, bad, other, ok]
