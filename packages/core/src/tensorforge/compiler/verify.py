"""`tforge run --verify`: bisect a wrong answer to the first fused kernel that computes it.

The model runs kernel by kernel in two arenas beside the numpy reference interpreter
(`graph.interpreter.evaluate`) over the same optimized graph:

* chained: each kernel reads what the compiled kernels before it wrote, as in a normal run;
* isolated: each kernel reads the reference's values of its inputs, so its error is its own.

After each kernel its outputs are compared with the reference's values of the same graph
values. The report names the first kernel whose isolated output diverges (a kernel that is
wrong by itself), else the first whose chained output does (error accumulated across
kernels), with its ops, shapes and schedule. Tolerance, as in the tests: |got - ref| <=
atol + rtol |ref| with rtol 1e-4 and atol 1e-5 times max(1, the reference tensor's largest
magnitude) (intermediate values are not of order one the way model outputs are); NaN must
match NaN.

The reference needs the graph, which a package does not carry (it holds native code, the
executor's description and the constants, not the ops and their attributes): `verify_model`
plans the model file again for the package's target and checks that its fused kernels are the
package's before comparing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import TensorforgeError
from ..target import Target

__all__ = ["KernelCheck", "VerifyReport", "verify_model"]

RTOL, ATOL = 1e-4, 1e-5


@dataclass
class KernelCheck:
    """One kernel's outputs against the reference: worst errors chained and isolated."""

    index: int
    name: str
    group: str
    ops: list[str]
    schedule: str
    inputs: list[str]
    outputs: list[str]
    chained_error: float = 0.0  # worst |got - ref| / tolerance; > 1 diverges
    isolated_error: float = 0.0
    where: str = ""  # value and element of the worst isolated (else chained) error

    @property
    def wrong_alone(self) -> bool:
        return self.isolated_error > 1.0

    @property
    def diverges(self) -> bool:
        return self.chained_error > 1.0 or self.isolated_error > 1.0

    def describe(self) -> str:
        return (f"kernel #{self.index} {self.group!r} (function {self.name!r}): ops "
                f"{' + '.join(self.ops)}; inputs {', '.join(self.inputs) or 'none'}; outputs "
                f"{', '.join(self.outputs)}; schedule: {self.schedule or 'unknown'}")


@dataclass
class VerifyReport:
    checks: list[KernelCheck] = field(default_factory=list)
    rtol: float = RTOL
    atol: float = ATOL

    @property
    def first_divergent(self) -> KernelCheck | None:
        alone = [c for c in self.checks if c.wrong_alone]
        if alone:
            return alone[0]
        return next((c for c in self.checks if c.diverges), None)

    @property
    def ok(self) -> bool:
        return self.first_divergent is None

    def lines(self) -> list[str]:
        tol = (f"rtol {self.rtol:g}, atol {self.atol:g} x max(1, |reference|) per tensor")
        bad = self.first_divergent
        if bad is None:
            return [f"verify: all {len(self.checks)} kernels match the reference interpreter "
                    f"({tol})"]
        how = ("it is wrong on the reference's own inputs: the kernel itself computes wrong "
               "values" if bad.wrong_alone else "it is right on the reference's inputs: error "
               "accumulated by the kernels before it exceeds the tolerance here")
        n_bad = sum(c.diverges for c in self.checks)
        return [f"verify: first divergent {bad.describe()}",
                f"  worst error {max(bad.isolated_error, bad.chained_error):.3g}x the tolerance "
                f"at {bad.where} ({tol})",
                f"  {how}",
                f"  {n_bad} of {len(self.checks)} kernels differ from the reference"]


def _spec(v: Mapping[str, Any]) -> str:
    return f"{v['name']}: {v['dtype']}{list(v['shape'])}"


def _error(got: np.ndarray, ref: np.ndarray, rtol: float, atol: float) -> tuple[float, str]:
    """(worst |got - ref| / tolerance, index of it); NaN against non-NaN is infinite."""
    if got.shape != ref.shape:
        return float("inf"), f"shape {got.shape} vs {ref.shape}"
    if got.size == 0:
        return 0.0, ""
    g, r = got.astype("float64"), ref.astype("float64")
    finite = np.isfinite(r)
    scale = max(1.0, float(np.max(np.abs(r[finite])))) if finite.any() else 1.0
    tol = atol * scale + rtol * np.abs(np.where(finite, r, 0.0))
    with np.errstate(invalid="ignore"):
        diff = np.abs(g - r)
        same = (g == r) | (np.isnan(g) & np.isnan(r))
        ratio = np.where(same, 0.0, np.where(np.isnan(diff), np.inf, diff / tol))
    k = int(np.argmax(ratio))
    idx = np.unravel_index(k, got.shape)
    return float(ratio.flat[k]), f"{tuple(int(i) for i in idx)} (got {g.flat[k]:.6g}, " \
                                 f"reference {r.flat[k]:.6g})"


def compare(model: Any, graph: Any, inputs: Mapping[str, np.ndarray], rtol: float = RTOL,
            atol: float = ATOL) -> VerifyReport:
    """Compare every kernel of `model` (a CompiledModel) with the reference interpreter over
    `graph`, the optimized graph the model was compiled from."""
    from ..graph.interpreter import evaluate

    ex = model.executor
    desc = model.desc
    by_name: dict[str, Any] = {}
    for v in list(graph.inputs) + [o for n in graph.nodes for o in n.outputs]:
        by_name.setdefault(v.name, v)
    checked = ex.check_inputs(inputs)
    ref = evaluate(graph, {desc["values"][vi]["name"]: x for vi, x in checked})
    report = VerifyReport(rtol=rtol, atol=atol)
    with ex.arena() as chained, ex.arena() as isolated:
        for vi, x in checked:
            np.copyto(chained.arrays[vi], x)
            np.copyto(isolated.arrays[vi], x)
        for i, k in enumerate(desc["kernels"]):
            vals = [desc["values"][a] for a in k["args"]]
            n_out = k.get("outputs", 1)
            ins, outs = k["args"][:len(vals) - n_out], k["args"][len(vals) - n_out:]
            check = KernelCheck(i, k["name"], k.get("group", k["name"]), list(k.get("ops", [])),
                                k.get("schedule", ""), [_spec(v) for v in vals[:-n_out]],
                                [_spec(v) for v in vals[-n_out:]])
            for a in ins:  # isolated: the reference's values as inputs
                v = desc["values"][a]
                if v["kind"] in ("intermediate", "input", "output") and v["name"] in by_name:
                    np.copyto(isolated.arrays[a], ref[by_name[v["name"]]])
            ex.execute_kernel(chained, i)
            ex.execute_kernel(isolated, i)
            for a in outs:
                v = desc["values"][a]
                gv = by_name.get(v["name"])
                if gv is None or gv not in ref:
                    raise TensorforgeError(f"verify: value {v['name']!r} of kernel #{i} is not "
                                           "in the reference graph; the model and the compiled "
                                           "kernels do not correspond")
                want = ref[gv]
                for arena, attr in ((chained, "chained_error"), (isolated, "isolated_error")):
                    err, at = _error(ex.value(arena, a), want, rtol, atol)
                    if err > getattr(check, attr):
                        setattr(check, attr, err)
                        if attr == "isolated_error" or not check.where:
                            check.where = f"{v['name']}{at}"
            report.checks.append(check)
    return report


def verify_model(model_file: Any, compiled: Any = None, target: Any = "llvm",
                 inputs: Mapping[str, np.ndarray] | None = None,
                 input_shapes: dict[str, Any] | None = None, rtol: float = RTOL,
                 atol: float = ATOL) -> tuple[VerifyReport, Any]:
    """(report, compiled model): compile `model_file` for `target` (or take `compiled`, e.g.
    a loaded package of it), plan the model again for the same target, check the plan's fused
    kernels are the compiled model's, and compare them kernel by kernel (see the module
    docstring). `inputs` default to `compiled.random_inputs()`."""
    from .compile import compile as compile_model
    from .compile import plan

    if compiled is None:
        compiled = compile_model(model_file, target=target, input_shapes=input_shapes)
    desc = compiled.desc
    p = plan(model_file, Target.coerce(desc.get("target") or target), input_shapes,
             int(desc.get("opt_level", 3)))
    groups = [g.name for g in p.groups]
    names = [k.get("group", k["name"]) for k in desc["kernels"]]
    if groups != names:
        first = next((i for i, (a, b) in enumerate(zip(groups, names)) if a != b),
                     min(len(groups), len(names)))
        raise TensorforgeError(
            f"verify: the compiled model's kernels are not the fused groups of "
            f"{model_file!s} for {desc.get('target')} ({len(names)} kernels vs {len(groups)} "
            f"groups, first difference at #{first}); verify a package with the model file it "
            "was compiled from, by the same tensorforge")
    return compare(compiled, p.graph, inputs if inputs is not None
                   else compiled.random_inputs(), rtol, atol), compiled
