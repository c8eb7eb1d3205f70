"""The executor's arenas on a model of Python-callable kernels (no code generator): the bound,
re-entrant calls, errors returning the arena, close(), constants shared read-only and held
once. The concurrent run of real compiled models is tests/test_concurrency.py."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from tensorforge.errors import PackageError, TensorforgeError
from tensorforge.runtime import Module
from tensorforge.runtime.arena import ClosedError
from tensorforge.runtime.graph_executor import CompiledModel


def _desc() -> dict:
    """y = (x + w) * 2 in two kernels through one intermediate storage."""
    return {
        "name": "tiny",
        "inputs": [{"name": "x", "shape": [4], "dtype": "float32", "value": 0}],
        "outputs": [{"name": "y", "shape": [4], "dtype": "float32", "value": 3}],
        "values": [
            {"name": "x", "shape": [4], "dtype": "float32", "kind": "input", "storage": None},
            {"name": "w", "shape": [4], "dtype": "float32", "kind": "const", "storage": None,
             "param": "p0"},
            {"name": "t", "shape": [4], "dtype": "float32", "kind": "intermediate",
             "storage": 0},
            {"name": "y", "shape": [4], "dtype": "float32", "kind": "output", "storage": None},
        ],
        "storages": [16],
        "kernels": [{"name": "add", "group": "g_add", "args": [0, 1, 2], "outputs": 1,
                     "ops": ["add"]},
                    {"name": "dbl", "group": "g_dbl", "args": [2, 3], "outputs": 1,
                     "ops": ["mul"]}],
    }


class Probe:
    """Kernels that count how many calls are inside them at once."""

    def __init__(self, delay: float = 0.0):
        self.delay = delay
        self.lock = threading.Lock()
        self.inside = 0
        self.most = 0
        self.hook = None

    def add(self, x, w, t):
        with self.lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
        t[...] = x + w
        time.sleep(self.delay)  # another thread's call would overwrite t if t were shared
        if self.hook is not None:
            self.hook()
        with self.lock:
            self.inside -= 1

    @staticmethod
    def dbl(t, y):
        y[...] = t * 2


def _model(probe: Probe, **kw) -> CompiledModel:
    w = np.arange(4, dtype="float32")
    return CompiledModel(Module({"add": probe.add, "dbl": probe.dbl}), _desc(), {"p0": w}, **kw)


def test_threads_get_their_own_arenas_up_to_the_bound() -> None:
    probe = Probe(delay=0.01)
    model = _model(probe, max_concurrency=3)
    results: dict[int, np.ndarray] = {}

    def work(i: int) -> None:
        x = np.full(4, float(i), "float32")
        for _ in range(5):
            results[i] = model.run({"x": x})[0]
            np.testing.assert_array_equal(results[i], (x + np.arange(4)) * 2)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(results) == 8
    assert 1 < probe.most <= 3  # concurrent, and never more than the bound
    assert model.executor.pool.created <= 3


def test_lowering_the_bound_and_reusing_arenas() -> None:
    model = _model(Probe())
    for _ in range(5):
        model.run([np.ones(4, "float32")])
    assert model.executor.pool.created == 1  # one arena, reused
    model.max_concurrency = 1
    assert model.max_concurrency == 1
    with pytest.raises(TensorforgeError, match="at least 1"):
        model.max_concurrency = 0


def test_a_reentrant_call_does_not_wait_for_itself() -> None:
    probe = Probe()
    model = _model(probe, max_concurrency=1)
    inner = []

    def reenter() -> None:
        probe.hook = None
        inner.append(model.run({"x": np.full(4, 5.0, "float32")})[0])

    probe.hook = reenter
    done = []
    t = threading.Thread(target=lambda: done.append(model.run({"x": np.ones(4, "float32")})))
    t.start()
    t.join(10)
    assert done, "a re-entrant run deadlocked"
    np.testing.assert_array_equal(done[0][0], (1 + np.arange(4)) * 2)
    np.testing.assert_array_equal(inner[0], (5 + np.arange(4)) * 2)
    assert model.executor.pool.created == 1  # the extra arena was dropped again


def test_a_failing_kernel_returns_its_arena() -> None:
    probe = Probe()
    model = _model(probe, max_concurrency=1)

    def boom() -> None:
        raise TensorforgeError("boom")

    probe.hook = boom
    with pytest.raises(TensorforgeError, match="boom"):
        model.run({"x": np.ones(4, "float32")})
    probe.hook = None
    model.run({"x": np.ones(4, "float32")})  # would block forever if the arena were lost


def test_close_waits_then_refuses_and_is_a_context_manager() -> None:
    probe = Probe(delay=0.2)
    closed = []
    with _model(probe, on_close=[lambda: closed.append(1)]) as model:
        t = threading.Thread(target=model.run, args=({"x": np.ones(4, "float32")},))
        t.start()
        time.sleep(0.05)
    t.join(10)
    assert model.closed and closed == [1]
    with pytest.raises(ClosedError, match="closed"):
        model.run({"x": np.ones(4, "float32")})
    model.close()  # idempotent
    assert closed == [1]


def test_constants_are_shared_read_only_and_held_once() -> None:
    w = np.arange(4, dtype="float32")
    model = CompiledModel(Module({"add": Probe().add, "dbl": Probe.dbl}), _desc(), {"p0": w},
                          max_concurrency=2)
    p = model.params["p0"]
    assert np.shares_memory(p, w)  # no copy of a constant already in the kernels' layout
    assert not p.flags.writeable
    with model.executor.arena() as a1, model.executor.arena() as a2:
        assert a1 is not a2
        assert a1.arrays[1] is a2.arrays[1] is p  # every arena reads the same array
        assert not np.shares_memory(a1.arrays[2], a2.arrays[2])  # intermediates are private


@pytest.mark.parametrize("edit, match", [
    (lambda d: d["kernels"][0].update(name="nope"), "names kernel 'nope'"),
    (lambda d: d["values"][2].update(storage=7), "entry 7, which does not exist"),
    (lambda d: d.update(storages=[8]), "needs 16 bytes but its storage 0 has 8"),
    (lambda d: d["values"][1].update(shape=[8]), "parameter 'p0' is float32\\[4\\]"),
    (lambda d: d["values"][0].update(dtype="object"), "dtype 'object'"),
    (lambda d: d["kernels"][1].update(args=[2, 1]), "writes value 1 \\('w'\\), a model const"),
    (lambda d: d["values"][3].update(shape=[-1]), "shape \\[-1\\]"),
    (lambda d: d.update(version=9), "format version 9"),
])
def test_an_inconsistent_description_is_refused(edit, match) -> None:
    desc = _desc()
    edit(desc)
    with pytest.raises(PackageError, match=match):
        CompiledModel(Module({"add": Probe().add, "dbl": Probe.dbl}), desc,
                      {"p0": np.arange(4, dtype="float32")})
