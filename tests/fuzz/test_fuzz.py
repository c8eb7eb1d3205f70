"""The fuzzers as a CI gate, one test per kind (ONNX models, packages): a time-boxed share of
cases (harness.py explains what a case is and what counts as a failure); any crash, hang,
internal error, mismatch or accepted invalid model fails the test and is printed with the
seed that reproduces it.

Environment: TENSORFORGE_FUZZ_CASES=N runs N cases of each kind with no time box (e.g. 10000
before a release); TENSORFORGE_FUZZ_SECONDS sets the CI time box per kind (default 90 s for
models, 60 s for packages: a few hundred cases each); TENSORFORGE_FUZZ_FIRST sets the first
case seed (default 0, so CI is repeatable; set it to explore other cases)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Runner, ensure_importable, worker_env  # noqa: E402

DEFAULT_SECONDS = {"onnx": 90.0, "package": 60.0}
DEFAULT_CASES = 3000  # the time box stops the CI share well before this


def fuzz_share(kind: str) -> tuple[range, float | None]:
    """(case seeds, time budget) from the environment."""
    first = int(os.environ.get("TENSORFORGE_FUZZ_FIRST", "0"))
    cases = os.environ.get("TENSORFORGE_FUZZ_CASES")
    if cases:
        return range(first, first + int(cases)), None
    seconds = float(os.environ.get("TENSORFORGE_FUZZ_SECONDS", DEFAULT_SECONDS[kind]))
    return range(first, first + DEFAULT_CASES), seconds


def run_share(kind: str) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tensorforge_llvm")
    pytest.importorskip("tensorforge_onnx")
    ensure_importable()
    seeds, budget = fuzz_share(kind)
    report = Runner(kind, n_workers=2, timeout=60.0, env=worker_env()).run(
        seeds, time_budget=budget)
    print(report.summary())
    for o in report.outcomes:
        if o.category == "known":
            print(report.describe(o, limit=300))
    failures = report.failures()
    assert report.outcomes, "no fuzz case ran"
    assert not failures, (f"{len(failures)} failing fuzz cases ({report.summary()}):\n"
                          + "\n".join(report.describe(o) for o in failures[:10]))


@pytest.mark.slow
def test_fuzz_onnx_models():
    run_share("onnx")


@pytest.mark.slow
def test_fuzz_packages():
    run_share("package")
