"""The Ray executor on a local cluster (skipped when ray is not installed)."""

from __future__ import annotations

import pytest

from tensorforge.autotune import Builder, Measurer, RayExecutor, Runner, Task

ray = pytest.importorskip("ray", reason="ray is not installed (pip install ray)")

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, resources={"testdev": 1}, include_dashboard=False,
             log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()


def test_ray_executor_outcomes(cluster) -> None:
    ex = RayExecutor(plugins=[])
    res = ex.map("math:sqrt", [4.0, -1.0], timeout=60)
    assert res[0].ok and res[0].value == 2.0
    assert res[1].status == "error" and "ValueError" in res[1].error
    (crash,) = ex.map("ctypes:string_at", [0], timeout=60)
    assert crash.status == "crash"
    (slow,) = ex.map("time:sleep", [60], timeout=2)
    assert slow.status == "timeout"
    # a device pool: jobs needing the "testdev" resource run on the node that has it
    res = ex.map("math:sqrt", [16.0], timeout=60, resource="testdev")
    assert res[0].value == 4.0


def test_measure_on_ray(cluster, llvm_target) -> None:
    ex = RayExecutor()
    task = Task("matmul_packed.llvm", (16, 32, 16), "llvm -num-threads=1")
    # generous time-outs: the first job of a Ray worker imports tensorforge and LLVM, slow on
    # a loaded machine (this test failed once under load 7-8, before it printed the reason)
    m = Measurer(Builder(executor=ex, timeout=120),
                 Runner(executor=ex, resource="testdev", timeout=120))
    results = m.measure(task, [0, 1, task.config_space.default_index])
    assert all(r.ok and r.costs for r in results), [(r.error_class, r.error_msg[:300])
                                                     for r in results]
