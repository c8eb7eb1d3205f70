"""What a fuzz worker runs: one case through tensorforge (`ours`) or ONNX Runtime
(`reference`).

Each job catches everything a case can raise and reports it as data: ``clean`` (a
TensorforgeError with a message), ``internal`` (any other exception: a bug), ``ok`` (outputs).
A crash or a hang takes the job's process down instead; the fork server
(`forkserver.py`) reports those, and the next job runs in a fresh child. The two engines run
as separate jobs, so a crash is always attributed to the right one."""

from __future__ import annotations

import os
import tempfile
import traceback
from typing import Any

import numpy as np

MAX_FEED_ELEMENTS = 1 << 24  # inputs larger than this are not generated (the case is skipped)

_quiet = False


def _silence() -> None:
    """Send this worker's stdout/stderr (LLVM's warnings) to /dev/null unless asked not to."""
    global _quiet
    if _quiet or os.environ.get("TENSORFORGE_FUZZ_VERBOSE"):
        return
    _quiet = True
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)


def make_feeds(model_bytes: bytes, seed: int) -> dict[str, np.ndarray] | None:
    """Random inputs for the model's declared input types, or None if they cannot be made
    (a symbolic or non-positive dim, a dtype numpy lacks, too many elements)."""
    import onnx
    from onnx import helper

    m = onnx.ModelProto()
    m.ParseFromString(model_bytes)
    inits = {t.name for t in m.graph.initializer}
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    total = 0
    for vi in m.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = []
        for d in tt.shape.dim:
            if not d.HasField("dim_value") or d.dim_value <= 0:
                return None
            shape.append(int(d.dim_value))
        try:
            dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type))
        except (KeyError, TypeError, ValueError):
            return None
        size = int(np.prod(shape, dtype=np.float64))
        total += size
        if total > MAX_FEED_ELEMENTS or dtype.kind not in "biuf":
            return None
        if dtype.kind == "f":
            arr = rng.uniform(-2.0, 2.0, shape).astype(dtype)
        elif dtype.kind == "b":
            arr = rng.integers(0, 2, shape).astype(dtype)
        else:
            arr = rng.integers(0, 3, shape).astype(dtype)
        feeds[vi.name] = arr
    return feeds


def ours(payload: dict[str, Any]) -> dict[str, Any]:
    """Draw case `payload["seed"]`, compile its model with tensorforge and run it. The result
    carries the plan and what `reference` needs to run the same case."""
    _silence()
    from harness import draw
    from kinds import KINDS

    kind = KINDS[payload["kind"]]
    try:
        plan = draw(kind.strategy(), payload["seed"])
        case = kind.build(plan)
    except Exception as e:  # noqa: BLE001 - a harness bug, reported as such
        return {"status": "harness",
                "error": f"harness could not build the case: {type(e).__name__}: {e}\n"
                         f"{traceback.format_exc(limit=-6)}"}
    result = _run_ours(kind, case, payload["target"])
    result["plan"] = plan
    result["reference"] = case["reference"]
    return result


def _run_ours(kind: Any, case: dict[str, Any], target: str) -> dict[str, Any]:
    from tensorforge.errors import TensorforgeError

    try:
        outs = kind.run_ours(case, target)
        if outs is None:
            return {"status": "no_feeds"}
        return {"status": "ok", "outputs": [np.asarray(o) for o in outs]}
    except TensorforgeError as e:
        if not str(e).strip():
            return {"status": "internal", "error": f"{type(e).__name__} with no message"}
        return {"status": "clean", "error": f"{type(e).__name__}: {e}"}
    except Exception as e:  # noqa: BLE001 - that is what the fuzzer looks for
        return {"status": "internal",
                "error": f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=-12)}"}


def compile_and_run(model: bytes, data_seed: int, target: str) -> list[Any] | None:
    """tensorforge on a model file: compile, make the inputs, run (None: no inputs)."""
    import tensorforge

    with tempfile.TemporaryDirectory(prefix="tf-fuzz-") as d:
        path = os.path.join(d, "model.onnx")
        with open(path, "wb") as f:
            f.write(model)
        cm = tensorforge.compile(path, target=target)
        feeds = make_feeds(model, data_seed)
        return None if feeds is None else cm.run(feeds)


def reference(payload: dict[str, Any]) -> dict[str, Any]:
    """The same case through ONNX Runtime (CPU, graph optimizations off, one thread):
    `payload` holds the model bytes and the input seed."""
    _silence()
    import onnxruntime as rt

    so = rt.SessionOptions()
    so.graph_optimization_level = rt.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 4
    try:
        sess = rt.InferenceSession(payload["model"], so, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - ORT's error classes live in a pybind module
        return {"status": "rejected", "error": f"{type(e).__name__}: {e}"}
    feeds = make_feeds(payload["model"], payload["data_seed"])
    if feeds is None:
        return {"status": "no_feeds"}
    try:
        outs = sess.run(None, feeds)
    except Exception as e:  # noqa: BLE001
        return {"status": "run_error", "error": f"{type(e).__name__}: {e}"}
    return {"status": "ok", "outputs": [np.asarray(o) for o in outs]}
