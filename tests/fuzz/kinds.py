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


def _package_strategy() -> Any:
    from mutate_package import plans

    return plans()


def _package_build(plan: dict[str, Any]) -> dict[str, Any]:
    from mutate_package import apply_plan
    from seeds import SEEDS

    model = SEEDS[plan["seed"]]().SerializeToString()
    return {"package": apply_plan(plan),
            "reference": {"model": model, "data_seed": plan["data_seed"]}}


def _package_run(case: dict[str, Any], target: str) -> Any:
    """Load the (damaged) package as a user would and run it on the seed model's inputs."""
    import os
    import tempfile

    from jobs import make_feeds

    import tensorforge

    feeds = make_feeds(case["reference"]["model"], case["reference"]["data_seed"])
    with tempfile.TemporaryDirectory(prefix="tf-fuzz-") as d:
        path = os.path.join(d, "model.tfpkg")
        with open(path, "wb") as f:
            f.write(case["package"])
        model = tensorforge.load(path)
        try:
            return model.run(feeds)
        finally:
            model.close()


KINDS: dict[str, Kind] = {
    "onnx": Kind(_onnx_strategy, _onnx_build, _onnx_run),
    "package": Kind(_package_strategy, _package_build, _package_run),
}
