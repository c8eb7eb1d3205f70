"""The AOT executor's native quick path (`runtime/aot_quick.py`, issue 15): `run`'s checks,
pointer tables, fast arena and entry call in generated code.

* a run whose inputs fit is done natively (the Python paths are not entered) and gives the
  graph executor's outputs bit for bit, by name, by position or as one array, with inputs and
  outputs in an order other than the entry's tables;
* every other input (wrong dtype or shape, strided, misaligned, a subclass, another dtype
  object that compares equal, missing or extra names) takes the Python paths and gets the
  answer or the error it got before; the builtin itself refuses what it cannot take;
* a failing kernel gives the same error and the fast arena back; threads at a bound of one
  arena all finish (the native holder wakes the waiters); `close` stops the native path;
* packages carry the quick path (loaded without llvmlite); a library without it, or an
  interpreter whose layout the ABI probe refuses, keeps the Python checks and says why."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorforge
from tensorforge.graph import Graph
from tensorforge.runtime import aot_quick
from tensorforge.runtime.arena import ClosedError
from tensorforge.runtime.graph_executor import CompiledModel, InputError

SHAPE = (3, 16)


def two_way_model() -> CompiledModel:
    """Two inputs, two outputs, listed in an order the entry's tables need not share."""
    g = Graph("two_way")
    b = g.add_input("b", SHAPE, "float32")
    a = g.add_input("a", SHAPE, "float32")
    w = g.add_const("w", np.linspace(-1, 1, SHAPE[1], dtype="float32"))
    g.outputs = [g.add("mul", a, w), g.add("relu", g.add("add", a, b))]
    model = tensorforge.compile(g, target="llvm -num-threads=1")
    assert model.executor_kind == "aot", model.executor_reason
    return model


def graph_twin(model: CompiledModel) -> CompiledModel:
    return CompiledModel(model.module, model.desc, dict(model.params), executor="graph")


def inputs(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"b": rng.standard_normal(SHAPE).astype("float32"),
            "a": rng.standard_normal(SHAPE).astype("float32")}


class Spy:
    """Counts the runs that reach the Python paths of `model`'s AOT runner."""

    def __init__(self, model: CompiledModel, monkeypatch: pytest.MonkeyPatch):
        self.calls = 0
        runner = model.executor._aot
        for name in ("_run_quick", "_run"):
            monkeypatch.setattr(runner, name, self._counting(getattr(runner, name)))

    def _counting(self, fn: Any) -> Any:
        def wrapped(*args: Any) -> Any:
            self.calls += 1
            return fn(*args)
        return wrapped


def same(got: list[np.ndarray], ref: list[np.ndarray]) -> bool:
    return len(got) == len(ref) and all(
        g.dtype == r.dtype and g.shape == r.shape and np.array_equal(g, r)
        for g, r in zip(got, ref))


@pytest.fixture
def model(llvm_target) -> CompiledModel:
    return two_way_model()


def test_fitting_inputs_run_natively_and_match_the_graph_executor(model, monkeypatch) -> None:
    runner = model.executor._aot
    assert runner.native is not None and runner.native_reason == ""
    ref_model = graph_twin(model)
    spy = Spy(model, monkeypatch)
    for seed in range(3):
        x = inputs(seed)
        ref = ref_model.run(x)
        assert same(model.run(x), ref)
        assert same(model.run([x["b"], x["a"]]), ref)  # positional: the model's order
    assert spy.calls == 0
    x = inputs(7)
    ro = {k: v.copy() for k, v in x.items()}
    for v in ro.values():
        v.flags.writeable = False  # read in place, never written
    out = model.run(ro)
    assert same(out, ref_model.run(x)) and spy.calls == 0
    assert all(o.flags.owndata and o.flags.writeable for o in out)
    again = model.run(ro)  # fresh arrays each call, which the caller owns
    assert not any(np.shares_memory(o, p) for o in out for p in again)
    assert model.executor.pool.created == 1 and not runner.native.busy()


def test_native_runs_leak_no_references(model) -> None:
    """The outputs the generated code makes hold one reference each (the list's), and every
    descriptor reference it takes for them is given back when they go."""
    import sys

    x = inputs()
    dt = np.dtype("float32")
    model.run(x)
    before = sys.getrefcount(dt)
    for _ in range(200):
        out = model.run(x)
        model.executor._aot.native.call(x["b"], None)  # a refused call
    assert sys.getrefcount(out) == 2
    assert all(sys.getrefcount(out[i]) == 2 for i in range(len(out)))  # the list only
    del out
    assert sys.getrefcount(dt) == before


def test_a_single_array_runs_natively(llvm_target, monkeypatch) -> None:
    g = Graph("one")
    x = g.add_input("x", SHAPE, "float32")
    g.outputs = [g.add("sigmoid", x)]
    model = tensorforge.compile(g, target="llvm -num-threads=1")
    spy = Spy(model, monkeypatch)
    data = inputs()["a"]
    assert same(model.run(data), graph_twin(model).run([data]))
    assert spy.calls == 0


def _misaligned(x: np.ndarray) -> np.ndarray:
    raw = np.zeros(x.nbytes + x.itemsize, np.uint8)
    start = 1 if raw.ctypes.data % x.itemsize == 0 else 0
    view = raw[start:start + x.nbytes].view(x.dtype).reshape(x.shape)
    view[...] = x
    assert view.ctypes.data % x.itemsize
    return view


class Sub(np.ndarray):
    pass


FALLBACKS = {
    "strided": lambda x: np.repeat(x, 2, axis=1)[:, ::2],
    "misaligned": _misaligned,
    "subclass": lambda x: x.view(Sub),
    "equal dtype object": lambda x: x.view(np.dtype("float32", metadata={"k": 1})),
    "fortran order": np.asfortranarray,
}


@pytest.mark.parametrize("case", list(FALLBACKS))
def test_inputs_the_builtin_refuses_get_the_same_answer(model, monkeypatch, case) -> None:
    x = inputs(3)
    odd = {"b": x["b"], "a": FALLBACKS[case](x["a"])}
    assert np.array_equal(odd["a"], x["a"])
    ref = graph_twin(model).run(x)
    spy = Spy(model, monkeypatch)
    assert same(model.run(odd), ref)
    assert spy.calls == 1  # the Python paths took it
    assert same(model.run(x), ref) and spy.calls == 1  # and the next one is native again


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(offset=st.integers(0, 3), step=st.sampled_from([1, 2]), order=st.sampled_from("CF"),
       writeable=st.booleans(), sub=st.booleans(), container=st.sampled_from(["dict", "list"]),
       seed=st.integers(0, 2**16))
def test_any_layout_of_the_right_values_gives_the_same_answer(
        llvm_target, offset, step, order, writeable, sub, container, seed) -> None:
    """Inputs of every layout the checks tell apart (offsets in bytes, strides, order,
    read-only, a subclass), by name or position: the outputs are the graph executor's."""
    model = _MODELS.setdefault("two_way", two_way_model())
    x = inputs(seed)
    raw = np.zeros(x["a"].nbytes * step + 64, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    flat = raw[start:start + x["a"].nbytes * step].view(np.float32)
    a = flat.reshape(SHAPE[0], SHAPE[1] * step)[:, ::step]
    a = np.asfortranarray(a) if order == "F" else a
    a[...] = x["a"]
    a.flags.writeable = writeable
    a = a.view(Sub) if sub else a
    given_x = {"b": x["b"], "a": a} if container == "dict" else [x["b"], a]
    assert same(model.run(given_x), _MODELS.setdefault("graph", graph_twin(model)).run(x))


_MODELS: dict[str, CompiledModel] = {}


def test_bad_inputs_get_the_same_errors(model) -> None:
    x = inputs()
    with pytest.raises(InputError, match="expected float32"):
        model.run({**x, "a": x["a"].astype("float64")})
    with pytest.raises(InputError, match=r"given float32\[3, 8\]"):
        model.run({**x, "a": x["a"][:, :8].copy()})
    with pytest.raises(InputError, match="missing input"):
        model.run({"a": x["a"], "c": x["b"]})
    with pytest.raises(InputError, match="unknown input name"):
        model.run({**x, "c": x["a"]})
    with pytest.raises(InputError, match="positional"):
        model.run([x["a"]])
    assert not model.executor._aot.native.busy()


def test_the_builtin_refuses_what_it_cannot_take(model) -> None:
    """Called directly (it is private, but it must never touch memory it was not given):
    anything but fitting arrays returns NOT_QUICK without running."""
    call = model.executor._aot.native.call
    x = inputs()
    b, a = x["b"], x["a"]
    for args in [(b,), (b, a, a), (b, None), (b, 3), (b, a.astype("float64")),
                 (b, a[:, :15].copy()), (b, a.reshape(-1)), (b, a[None])]:
        assert call(*args) == aot_quick.NOT_QUICK
    with pytest.raises(TypeError):
        call(b, a, extra=1)
    out = call(b, a)
    assert type(out) is list and same(out, graph_twin(model).run(x))
    assert all(o.flags.c_contiguous and o.flags.owndata and o.flags.writeable for o in out)


def test_a_failing_kernel_gives_the_error_and_the_arena_back(llvm_target) -> None:
    from tensorforge.errors import DataCheckError

    g = Graph("gather_model")
    idx = g.add_input("idx", (3,), "int64")
    table = g.add_const("table", np.arange(40, dtype="float32").reshape(10, 4))
    g.outputs = [g.add("relu", g.add("take", table, idx, axis=0))]
    model = tensorforge.compile(g, target="llvm -num-threads=1")
    native = model.executor._aot.native
    assert native is not None
    for _ in range(2):
        with pytest.raises(DataCheckError, match="17") as info:
            model.run({"idx": np.array([1, 17, 2])})
        assert "take" in str(info.value)
        assert not native.busy()
    (ok,) = model.run({"idx": np.array([0, 9, 3])})
    assert np.array_equal(ok, np.arange(40, dtype="float32").reshape(10, 4)[[0, 9, 3]])


def test_threads_at_a_bound_of_one_all_finish(model) -> None:
    """One arena for six threads: whoever holds it (natively or from the pool) hands it on,
    and every result is the one a call made alone gives."""
    model.max_concurrency = 1
    xs = [inputs(s) for s in range(6)]
    alone = [graph_twin(model).run(x) for x in xs]
    bad: list[Any] = []
    start = threading.Barrier(6)

    def work(i: int) -> None:
        try:
            start.wait()
            for k in range(30):
                x = xs[i] if k % 3 else {**xs[i], "a": xs[i]["a"][:, ::-1][:, ::-1]}
                if not same(model.run(x), alone[i]):
                    bad.append(i)
        except BaseException as e:  # pragma: no cover - reported below
            bad.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread waits for an arena forever"
    assert not bad
    assert model.executor.pool.created == 1


def test_a_held_arena_keeps_the_native_path_open(model, monkeypatch) -> None:
    """A thread holding an arena for long (as `benchmark` does) gets another one than the
    native caller's, below the bound; at the bound it gets that one, and runs wait."""
    spy = Spy(model, monkeypatch)
    x = inputs()
    with model.executor.arena():
        assert same(model.run(x), graph_twin(model).run(x))
        assert spy.calls == 0
    model.max_concurrency = 1
    pool = model.executor.pool
    with model.executor.arena() as held:
        assert held is model.executor._aot.fast  # the only arena left to lend
        done = threading.Event()
        t = threading.Thread(target=lambda: (model.run(x), done.set()))
        t.start()
        assert not done.wait(0.3)  # at the bound: it waits
    t.join(timeout=60)
    assert done.is_set() and pool.created == 1


def test_close_stops_the_native_path(model) -> None:
    x = inputs()
    model.run(x)
    model.close()
    with pytest.raises(ClosedError):
        model.run(x)
    assert model.executor._aot.native.call() == aot_quick.TAKEN_ELSEWHERE


def test_packages_carry_the_quick_path(model, tmp_path) -> None:
    import subprocess
    import sys

    path = model.export(tmp_path / "two.tfpkg")
    code = (
        "import sys, numpy as np, tensorforge\n"
        f"m = tensorforge.load({str(path)!r})\n"
        "r = m.executor._aot\n"
        "x = {'b': np.full((3, 16), 0.5, 'float32'), 'a': np.ones((3, 16), 'float32')}\n"
        "r._run = r._run_quick = None  # only the native path can answer\n"
        "out = m.run(x)\n"
        "print(r.native_reason == '', 'llvmlite' in sys.modules, out[1][0, 0])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False", "1.5"]


def test_a_library_without_the_quick_path_checks_in_python(model, tmp_path) -> None:
    """A library exported before the quick path existed: `run` checks in Python."""
    loaded = tensorforge.load(model.export(tmp_path / "two.tfpkg"))
    loaded.module.quick_address = None
    old = CompiledModel(loaded.module, loaded.desc, dict(loaded.params))
    assert old.executor_kind == "aot" and old.executor._aot.native is None
    assert "export it again" in old.executor._aot.native_reason
    x = inputs()
    assert same(old.run(x), model.run(x))


@pytest.mark.parametrize("breakage, reason", [
    (lambda mp: mp.setitem(aot_quick.ABI, "descr", 48), "descr"),
    (lambda mp: mp.setitem(aot_quick.ABI, "nd", 28), "nd"),
    (lambda mp: mp.setattr(aot_quick.sysconfig, "get_config_var",
                           lambda name: 1 if name == "Py_GIL_DISABLED" else None),
     "free-threaded"),
])
def test_the_abi_probe_keeps_python_checks_on_another_layout(model, monkeypatch, breakage,
                                                             reason) -> None:
    """Offsets numpy's own fields do not confirm, or a build without the GIL: the native path
    is off, says why, and `run` still answers."""
    aot_quick.abi_problem.cache_clear()
    monkeypatch.setattr(aot_quick, "abi_problem", aot_quick.abi_problem.__wrapped__)
    breakage(monkeypatch)
    probed = CompiledModel(model.module, model.desc, dict(model.params))
    runner = probed.executor._aot
    assert runner.native is None and reason in runner.native_reason
    x = inputs()
    assert same(probed.run(x), graph_twin(model).run(x))
    monkeypatch.undo()
    assert aot_quick.abi_problem() == ""


def test_python_checks_on_request(model, monkeypatch) -> None:
    monkeypatch.setenv("TENSORFORGE_AOT_QUICK", "python")
    python = CompiledModel(model.module, model.desc, dict(model.params))
    assert python.executor._aot.native is None
    assert "TENSORFORGE_AOT_QUICK=python" in python.executor._aot.native_reason
    x = inputs()
    assert same(python.run(x), model.run(x))
