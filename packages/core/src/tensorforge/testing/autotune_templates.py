"""Templates for testing the tuner: a small tunable kernel whose ``fault`` knob makes a
candidate fail in each way measurement must survive.

``testing/faulty`` (workload ``n``): ``B = 2 * A`` with a split of the loop (``tile``) and
``fault``: "none" (the default), "raise" (the template refuses: COMPILE_ERROR), "segfault"
(reads ``A`` a billion elements out of range: the worker dies, RUNTIME_ERROR), "hang" (a
2^40-step reduction per element: TIMEOUT), "wrong" (computes ``2 * A + 1``: WRONG_RESULT).
They live in an importable module so measurement workers find them by name.
"""

from __future__ import annotations

from typing import Any

from .. import te
from ..autotune.template import template

FAULTS = ["none", "raise", "segfault", "hang", "wrong"]


@template("testing/faulty")
def faulty(cfg: Any, n: int) -> tuple[Any, list]:
    cfg.define_split("tile", n, 2, max_factor=8, default=(-1, 4 if n % 4 == 0 else 1))
    cfg.define_knob("fault", FAULTS, default="none")
    cfg.add_flop(float(n))
    fault = cfg["fault"].val
    if fault == "raise":
        raise ValueError("this config is invalid (testing/faulty, fault='raise')")
    A = te.placeholder((n,), "float32", name="A")
    if fault == "segfault":
        B = te.compute((n,), lambda i: A[i + 1_000_000_000] * 2.0, name="B")
    elif fault == "hang":
        k1 = te.reduce_axis((0, 1 << 20), name="k1")
        k2 = te.reduce_axis((0, 1 << 20), name="k2")
        B = te.compute((n,), lambda i: te.sum(A[i] * 2.0, axis=[k1, k2]), name="B")
    elif fault == "wrong":
        B = te.compute((n,), lambda i: A[i] * 2.0 + 1.0, name="B")
    else:
        B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    cfg["tile"].apply(s, s[B], B.op.axis[0])
    return s, [A, B]


class SyntheticMeasurer:
    """A stand-in for ``Measurer`` whose cost is a function of the config (no compiling): for
    testing tuners and the tuning loop fast and deterministically.

    ``cost(config) -> seconds`` (``None`` means the candidate fails with ``error``).
    """

    def __init__(self, cost: Any, error: str = "RUNTIME_ERROR"):
        self.cost, self.error = cost, error
        self.measured: list[int] = []

    def _one(self, task: Any, index: int) -> Any:
        from ..autotune.measure import MeasureResult

        self.measured.append(index)
        c = self.cost(task.config(index))
        if c is None:
            return MeasureResult([], self.error, "synthetic failure")
        return MeasureResult([c, c, c], None, "", 0.0)

    def reference(self, task: Any) -> list[Any]:
        return []

    def reference_result(self, task: Any) -> Any:
        return self._one(task, task.config_space.default_index)

    def measure(self, task: Any, indices: Any, check: bool = True, on_result: Any = None,
                ) -> list[Any]:
        out = []
        for k, i in enumerate(indices):
            r = self._one(task, i)
            if on_result is not None:
                on_result(k, r)
            out.append(r)
        return out

    def close(self) -> None:
        pass
