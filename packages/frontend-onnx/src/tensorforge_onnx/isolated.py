"""ONNX's C++ shape inference, run in a child process.

The onnx wheel is built with C++ library assertions, and its inference functions trust
values they should check: a Pad with negative pads larger than the dimension, followed by a
Slice, ends in ``std::clamp`` with hi < lo, which aborts the process (found by the fuzzer,
seed 22238). A damaged model must not take its caller down, so inference runs in a child:
forked where the OS can (it starts in a millisecond with onnx already loaded, and calls
nothing but onnx before it exits), else a worker of tensorforge's `LocalExecutor` (a fresh
interpreter, kept for later models). If the child dies or hangs, the model is reported as
one ONNX's inference cannot handle."""

from __future__ import annotations

import os
import pickle
import re
import select
import signal
import threading
import time
import warnings
from typing import Any

__all__ = ["InferenceCrash", "infer_shapes_isolated"]

TIMEOUT = 300.0  # seconds for one model's inference

_lock = threading.Lock()
_executor: Any = None


class InferenceCrash(RuntimeError):
    """The child died (or hung) while ONNX inferred this model's shapes."""


def infer_job(data: bytes) -> tuple[str, bytes | str]:
    """("ok", inferred model bytes) or ("error", ONNX's message)."""
    import onnx
    from onnx import shape_inference

    m = onnx.ModelProto()
    m.ParseFromString(data)
    errors = (onnx.shape_inference.InferenceError, onnx.checker.ValidationError, RuntimeError,
              ValueError)
    try:
        out = shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
    except errors as e:
        if not _inside_function_body(str(e)):
            return "error", str(e)
        # onnx's own expansion of a standard op failed (its MeanVarianceNormalization body
        # has a Constant strict inference refuses): not the model's fault; the shapes it
        # can infer without the body are what we get
        try:
            out = shape_inference.infer_shapes(m, check_type=True, strict_mode=False)
        except errors as e2:
            return "error", str(e2)
    return "ok", out.SerializeToString()


def _inside_function_body(message: str) -> bool:
    """Whether ONNX's inference error arose in the function body of a node (an op_type
    inside an op_type's error), not in the model's own nodes."""
    return re.search(r"\(op_type:\w+(, node name: [^)]*)?\): \[\w+\] Inference error\(s\): "
                     r"\(op_type:",
                     message) is not None


def infer_shapes_isolated(data: bytes) -> tuple[str, bytes | str]:
    """`infer_job(data)` in a child process; InferenceCrash if it dies or hangs."""
    if hasattr(os, "fork"):
        return _forked(data)
    return _in_worker(data)  # pragma: no cover - platforms without fork


def _forked(data: bytes) -> tuple[str, bytes | str]:
    import onnx.shape_inference  # noqa: F401 - loaded before the fork, not in the child

    r, w = os.pipe()
    with warnings.catch_warnings():  # 3.12+ warns about forking a threaded process: the
        warnings.simplefilter("ignore", DeprecationWarning)  # child calls only onnx
        pid = os.fork()
    if pid == 0:  # the child: infer, send the result, leave without any cleanup of ours
        code = 0
        try:
            os.close(r)
            payload = pickle.dumps(infer_job(data))
            view = memoryview(payload)
            while view:
                view = view[os.write(w, view):]
        except BaseException:  # noqa: BLE001 - reported by the parent as a crash
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    chunks, deadline = [], time.monotonic() + TIMEOUT
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([r], [], [], left)[0]:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise InferenceCrash(f"ONNX's shape inference hung (over {TIMEOUT:g} s)")
            chunk = os.read(r, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(r)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        raise InferenceCrash(f"ONNX's shape inference crashed (killed by "
                             f"{signal.Signals(os.WTERMSIG(status)).name})")
    if not chunks or os.WEXITSTATUS(status) != 0:
        raise InferenceCrash(f"ONNX's shape inference failed in the child (exit status "
                             f"{os.WEXITSTATUS(status)})")
    return pickle.loads(b"".join(chunks))


def _in_worker(data: bytes) -> tuple[str, bytes | str]:  # pragma: no cover - no fork
    global _executor
    from tensorforge.autotune.executor import LocalExecutor

    with _lock:
        if _executor is None:
            _executor = LocalExecutor(n_workers=1, plugins=[])
        res = _executor.map("tensorforge_onnx.isolated:infer_job", [data], TIMEOUT)[0]
    if res.status == "ok":
        return res.value
    if res.status == "error":
        raise RuntimeError(f"shape inference job failed: {res.error}")
    raise InferenceCrash(f"ONNX's shape inference {res.status} ({res.error})")
