"""The kinds of fuzz cases: how to draw a plan, build the case, and run it through
tensorforge; the reference side is always ONNX Runtime on a model (`jobs.reference`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Kind:
    """`strategy()` -> hypothesis strategy of plans; `build(plan)` -> a case dict with a
    ``reference`` entry ({"model": bytes, "data_seed": int}); `run_ours(case, target)` ->
    outputs, or None when no inputs can be made."""

    strategy: Callable[[], Any]
    build: Callable[[dict[str, Any]], dict[str, Any]]
    run_ours: Callable[[dict[str, Any], str], Any]


def _onnx_strategy() -> Any:
    from mutate_onnx import plans

    return plans()


def _onnx_build(plan: dict[str, Any]) -> dict[str, Any]:
    from mutate_onnx import apply_plan

    model = apply_plan(plan)
    return {"model": model, "reference": {"model": model, "data_seed": plan["data_seed"]}}


def _onnx_run(case: dict[str, Any], target: str) -> Any:
    from jobs import compile_and_run

    return compile_and_run(case["model"], case["reference"]["data_seed"], target)


KINDS: dict[str, Kind] = {"onnx": Kind(_onnx_strategy, _onnx_build, _onnx_run)}
