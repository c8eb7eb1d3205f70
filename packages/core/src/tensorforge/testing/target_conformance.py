"""`TargetConformance`: the operator suite every target runs, subclassed in one line.

```python
import pytest
from tensorforge.testing import TargetConformance

@pytest.mark.opencl                       # skips where no OpenCL device is usable
class TestOpenCL(TargetConformance):
    target, plugin = "opencl", "tensorforge_opencl.plugin"
```

Every case of `op_cases.CASES` is scheduled with core's generic schedule for the target (GPU
threads for targets with the "gpu" key, CPU loops otherwise) and, when the target registers a
strategy for the case's op, with that strategy too. `mode` says how far each goes:

- ``"run"``: build, run on the case's inputs, compare with the numpy reference at the case's
  tolerance (the message carries the loop IR and the source);
- ``"compile"``: build only (a toolchain without the device: NVRTC without a GPU);
- ``"source"``: build and pass the source to `check_source` (e.g. a syntax checker for a
  language whose compiler is not on this machine).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from .op_cases import CASES, Built, OpCase

__all__ = ["TargetConformance"]


class TargetConformance:
    """Set `target` (a target string) and `plugin` (the module registering it)."""

    target: str = ""
    plugin: str = ""
    distribution: str | None = None
    mode: str = "run"
    seed: int = 0
    #: case-name prefixes to run (empty: every case)
    only: tuple[str, ...] = ()

    def check_source(self, source: str, case: OpCase) -> None:
        """Mode "source": raise (or fail) if `source` is not valid for the target."""
        assert source.strip(), f"{case}: empty source"

    # ---------------------------------------------------------------------------------------
    def _target(self, plugins: Any) -> Any:
        from tensorforge.target import Target

        if not self.target:
            pytest.skip("set `target` on the TargetConformance subclass")
        if self.plugin:
            plugins.register(self.plugin, self.target.split()[0],
                             distribution=self.distribution)
        return Target.parse(self.target)

    def _schedules(self, case: OpCase, built: Built, target: Any) -> list[tuple[str, Any]]:
        from tensorforge.compiler.kernels import generic_schedule
        from tensorforge.plugins import get_registry

        out = [("generic", generic_schedule(target)(built.outputs, target))]
        for strat in get_registry().strategies(target).get(case.op, [])[:1]:
            out.append((f"strategy {strat.key}",
                        strat.load_schedule()(built.outputs, target)))
        return out

    def pytest_generate_tests(self, metafunc: Any) -> None:
        """One test per case (per case named in `only`, when given)."""
        if "case" in metafunc.fixturenames:
            cases = [c for c in CASES if not self.only or c.name.startswith(self.only)]
            metafunc.parametrize("case", cases, ids=str)

    def test_op(self, case: OpCase, plugins: Any) -> None:
        import tensorforge

        if self.mode not in ("run", "compile", "source"):
            raise ValueError(f"mode must be run, compile or source, not {self.mode!r}")
        target = self._target(plugins)
        built = case.build(np.random.default_rng(self.seed))
        for how, sch in self._schedules(case, built, target):
            mod = tensorforge.build(sch, built.args, target=target)
            if self.mode == "source":
                self.check_source(mod.get_source(), case)
                continue
            if self.mode == "compile":
                continue
            self._run_and_compare(case, how, sch, built, mod, target)

    def _run_and_compare(self, case: OpCase, how: str, sch: Any, built: Built, mod: Any,
                         target: Any) -> None:
        import tensorforge

        outs = [np.full(e.shape, 7, dtype=str(t.dtype))
                for e, t in zip(built.expected, built.outputs)]
        mod(*built.inputs, *outs)
        rtol, atol = built.tolerance()
        for got, want in zip(outs, built.expected):
            ok = (np.array_equal(got, want) if built.exact else
                  np.allclose(got, want, rtol=rtol, atol=atol))
            if not ok:
                diff = np.abs(got.astype("float64") - np.asarray(want, "float64"))
                bad = np.argwhere(diff > (0 if built.exact else atol))[:5].tolist()
                ir = tensorforge.lower(sch, built.args, target=target)
                src = mod.get_source() if hasattr(mod, "get_source") else ""
                pytest.fail(f"{case} on {self.target} ({how}): max abs err {diff.max()}, "
                            f"first bad {bad}\n{ir}\n{src[:6000]}")
