"""ONNX's C++ shape inference, run in a helper process.

The onnx wheel is built with C++ library assertions, and its inference functions trust
values they should check: a Pad with negative pads larger than the dimension, followed by a
Slice, ends in ``std::clamp`` with hi < lo, which aborts the process (found by the fuzzer,
seed 22238). A damaged model must not take its caller down, so inference runs in a worker
process: tensorforge's `LocalExecutor` (a fresh interpreter, so neither our threads and JIT
state nor the caller's ``__main__`` are carried over), kept for later models; if the worker
dies or hangs, the model is reported as one ONNX's inference cannot handle and a new worker
serves the next one."""

from __future__ import annotations

import atexit
import threading
from typing import Any

__all__ = ["InferenceCrash", "infer_shapes_isolated"]

TIMEOUT = 300.0  # seconds for one model's inference

_lock = threading.Lock()
_executor: Any = None


class InferenceCrash(RuntimeError):
    """The helper process died (or hung) while ONNX inferred this model's shapes."""


def infer_job(data: bytes) -> tuple[str, bytes | str]:
    """In the worker: ("ok", inferred model bytes) or ("error", ONNX's message)."""
    import onnx
    from onnx import shape_inference

    m = onnx.ModelProto()
    m.ParseFromString(data)
    try:
        out = shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError, RuntimeError,
            ValueError) as e:
        return "error", str(e)
    return "ok", out.SerializeToString()


def _close() -> None:
    global _executor
    if _executor is not None:
        _executor.close()
        _executor = None


atexit.register(_close)


def infer_shapes_isolated(data: bytes) -> tuple[str, bytes | str]:
    """`infer_job(data)` in the helper process; InferenceCrash if it dies or hangs."""
    global _executor
    from tensorforge.autotune.executor import LocalExecutor

    with _lock:
        if _executor is None:
            _executor = LocalExecutor(n_workers=1, plugins=[])
        res = _executor.map("tensorforge_onnx.isolated:infer_job", [data], TIMEOUT)[0]
    if res.status == "ok":
        return res.value
    if res.status == "error":  # the job raised: a bug of ours, not the model's
        raise RuntimeError(f"shape inference job failed: {res.error}")
    what = "hung" if res.status == "timeout" else "crashed"
    raise InferenceCrash(f"ONNX's shape inference {what} in the helper process ({res.error})")
