"""ONNX backend node tests (onnx.backend.test): every case of the suite, compiled and run.

node_suite_expected.txt lists every one of onnx's node cases (the whole denominator, not only
the cases whose ops the frontend converts) as PASS or FAIL <reason>, with its run time and
onnxruntime's result on the same case with the same comparison. A listed PASS that fails is
a regression, a listed FAIL that passes is a new pass: both fail the build until the file is
updated:

    TFORGE_UPDATE_NODE_SUITE=1 pytest packages/frontend-onnx/tests/test_onnx_node_suite.py

Inputs stay inputs: a shape fed as an input (Reshape's shape, Tile's repeats) specializes
the compiled model (`TensorforgeRep`), whose kernels still read every data input; a case
whose output would be folded from input values at import fails (see `backend.py`).

onnx >= 1.20 builds the ~1,900 node cases in memory (`load_node_model_tests`, ~20 s once);
the cases run through `onnx.backend.test.BackendTest` with `TensorforgeBackend`."""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

EXPECTED_FILE = Path(__file__).with_name("node_suite_expected.txt")
UPDATE = os.environ.get("TFORGE_UPDATE_NODE_SUITE") == "1"
HEADER_LINES = 7


def _read_expected() -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    if not EXPECTED_FILE.exists():
        return out
    for line in EXPECTED_FILE.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split(maxsplit=4)
        out[parts[0]] = (parts[1], parts[4] if len(parts) > 4 else "")
    return out


EXPECTED = _read_expected()


@pytest.fixture(autouse=True)
def _llvm(llvm_target: Any) -> None:
    """The node tests compile every case for this machine's CPU (the llvm plugin)."""


RESULTS: dict[str, tuple[str, float, str]] = {}  # name -> (status, seconds, reason)


@pytest.fixture(scope="module")
def suite() -> dict[str, Any]:
    """The node cases and BackendTest's runnable test methods."""
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    import onnx.backend.test
    from onnx.backend.test.loader import load_node_model_tests

    from tensorforge_onnx.backend import TensorforgeBackend

    cases = {c.name: c for c in load_node_model_tests()}
    bt = onnx.backend.test.BackendTest(TensorforgeBackend, __name__)
    cls = bt.test_cases["OnnxBackendNodeModelTest"]
    return {"cases": cases, "cls": cls}


def test_every_case_is_listed(suite: dict[str, Any]) -> None:
    if UPDATE:
        pytest.skip("updating the expectations")
    cases, listed = set(suite["cases"]), set(EXPECTED)
    assert cases == listed, (
        f"node cases not listed: {sorted(cases - listed)[:20]}; listed but not node cases "
        f"of this onnx: {sorted(listed - cases)[:20]}. Update {EXPECTED_FILE.name} "
        "(TFORGE_UPDATE_NODE_SUITE=1).")


def _run(suite: dict[str, Any], name: str) -> tuple[str, float, str]:
    cls = suite["cls"]
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            getattr(cls(f"{name}_cpu"), f"{name}_cpu")()
        status, reason = "PASS", ""
    except Exception as e:  # noqa: BLE001
        status = "FAIL"
        reason = f"{type(e).__name__}: {' '.join(str(e).split())}"[:160]
    return status, time.perf_counter() - t0, reason


_NAMES = sorted(EXPECTED) if EXPECTED and not UPDATE else []


@pytest.mark.slow
@pytest.mark.parametrize("name", _NAMES)
def test_node(suite: dict[str, Any], name: str) -> None:
    if name not in suite["cases"]:
        pytest.fail(f"{name} is listed in {EXPECTED_FILE.name} but onnx has no such case")
    status, secs, reason = _run(suite, name)
    RESULTS[name] = (status, secs, reason)
    want, want_reason = EXPECTED[name]
    if want == "PASS" and status != "PASS":
        pytest.fail(f"regression: {name} passed before and now fails: {reason}")
    if want == "FAIL" and status == "PASS":
        pytest.fail(f"new pass: {name} is listed as FAIL ({want_reason}) and passes now; "
                    f"update {EXPECTED_FILE.name} (TFORGE_UPDATE_NODE_SUITE=1)")
    if want == "FAIL":
        pytest.xfail(want_reason or reason)


def test_report_totals() -> None:
    """Runs after the node tests (file order): the totals and the wall time."""
    if not RESULTS:
        pytest.skip("no node tests ran")
    passed = sum(s == "PASS" for s, _, _ in RESULTS.values())
    total = sum(t for _, t, _ in RESULTS.values())
    print(f"\nONNX node suite: {passed}/{len(RESULTS)} pass, {total:.1f} s")


@pytest.mark.skipif(not UPDATE, reason="set TFORGE_UPDATE_NODE_SUITE=1 to rewrite the file")
def test_update_expectations(suite: dict[str, Any]) -> None:
    """Run every case (ours and onnxruntime's) and rewrite the expectations file."""
    rows = []
    for name in sorted(suite["cases"]):
        status, secs, reason = _run(suite, name)
        rows.append((name, status, secs, _ort_status(suite["cases"][name]), reason))
    ours = sum(r[1] == "PASS" for r in rows)
    ort = sum(r[3] == "PASS" for r in rows)
    head = [
        "# Every ONNX backend node test of the installed onnx, compiled for the CPU by",
        "# tensorforge and run. Columns: test, our status, seconds, onnxruntime's status on the",
        "# same case with the same comparison, the reason for our FAIL.",
        f"# cases {len(rows)}; tensorforge PASS {ours}; onnxruntime PASS {ort}; our time "
        f"{sum(r[2] for r in rows):.0f} s.",
        "# Regenerate: TFORGE_UPDATE_NODE_SUITE=1 pytest "
        "packages/frontend-onnx/tests/test_onnx_node_suite.py",
        "# (summary by reason: python packages/frontend-onnx/tests/node_suite_report.py)",
        "#",
    ]
    assert len(head) == HEADER_LINES
    body = [f"{n} {s} {t:.3f} ort={o} {r}".rstrip() for n, s, t, o, r in rows]
    EXPECTED_FILE.write_text("\n".join(head + body) + "\n")


def _ort_status(case: Any) -> str:
    import numpy as np
    import onnxruntime.backend as ob
    from onnx.backend.test.runner import Runner, _normalize_tensor

    try:
        rep = ob.prepare(case.model, "CPU")
        for inputs, outputs in case.data_sets:
            got = rep.run([_normalize_tensor(i) for i in inputs])
            Runner.assert_similar_outputs([_normalize_tensor(o) for o in outputs],
                                          [np.asarray(g) for g in got], case.rtol, case.atol)
        return "PASS"
    except Exception:  # noqa: BLE001
        return "FAIL"
