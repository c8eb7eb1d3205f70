"""The frameworks we compare with, run in our process: ONNX Runtime (CPU execution provider),
PyTorch (CPU, eager) and TensorFlow (a `tf.function`, and the same compiled by XLA), each
limited to the benchmark's thread count. Each is skipped, with a note in the report, when it
is not installed (or, for TensorFlow, when its thread pool was fixed at another count)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import numpy as np

BASELINES = ("ort", "torch", "tf", "tf-xla")
LABELS = {"ort": "ONNX Runtime", "torch": "PyTorch", "tf": "TensorFlow", "tf-xla": "TF-XLA"}
MODULES = {"ort": "onnxruntime", "torch": "torch", "tf": "tensorflow", "tf-xla": "tensorflow"}


def available(name: str) -> str | None:
    """None when baseline `name` can run here, else why not."""
    module = MODULES[name]
    if importlib.util.find_spec(module) is None:
        return f"{module} is not installed"
    return None


def ort_session(model: Any, threads: int) -> Any:
    """An ONNX Runtime session on `threads` intra-op threads (sequential, all graph
    optimizations, the CPU execution provider only)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    data = model.SerializeToString() if hasattr(model, "SerializeToString") else model
    return ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])


def ort_runner(model: Any, threads: int, inputs: dict[str, np.ndarray]
               ) -> Callable[[], list[np.ndarray]]:
    sess = ort_session(model, threads)
    return lambda: sess.run(None, inputs)


def torch_threads(threads: int) -> None:
    """Limit PyTorch's intra-op pool (process-wide; set before each phase)."""
    import torch

    torch.set_num_threads(threads)


def torch_op_runner(workload: Any, arrays: dict[str, np.ndarray]
                    ) -> Callable[[], np.ndarray]:
    """torch.nn.functional conv2d / linear on the workload's tensors (inference mode)."""
    import torch
    import torch.nn.functional as F

    x, w, b = (torch.from_numpy(np.ascontiguousarray(arrays[k])) for k in ("x", "w", "b"))
    if workload.kind == "dense":
        fn = lambda: F.linear(x, w, b)
    else:
        fn = lambda: F.conv2d(x, w, b, stride=workload.strides,
                              padding=(workload.pads[0], workload.pads[1]),
                              groups=workload.groups)

    def run() -> np.ndarray:
        with torch.inference_mode():
            return fn().numpy()

    return run


def torch_model_runner(model: Any, inputs: dict[str, np.ndarray]
                       ) -> Callable[[], list[np.ndarray]]:
    """The ONNX model run eagerly by PyTorch, op by op (see `torch_onnx`)."""
    from .torch_onnx import TorchOnnxModel

    return TorchOnnxModel(model).runner(inputs)


def tf_threads(threads: int) -> str | None:
    """Set TensorFlow's thread pools to `threads` (intra-op; inter-op 1). TensorFlow fixes
    them when its runtime starts, so a later count cannot be set: returns why not."""
    from ..quiet_import import import_quietly

    tf = import_quietly("tensorflow")

    cfg = tf.config.threading
    if cfg.get_intra_op_parallelism_threads() == threads:
        return None
    try:
        cfg.set_intra_op_parallelism_threads(threads)
        cfg.set_inter_op_parallelism_threads(1)
    except RuntimeError:
        have = cfg.get_intra_op_parallelism_threads() or "its default"
        return (f"TensorFlow's thread pool is fixed once it runs (here at {have}); for "
                f"{threads} thread(s) run tforge bench --threads {threads} --baselines tf,tf-xla")
    tf.get_logger().setLevel("ERROR")  # one tf.function per case: retracing notes are noise
    return None


def tf_op_runner(model: Any, inputs: dict[str, np.ndarray], xla: bool = False
                 ) -> Callable[[], list[np.ndarray]]:
    """The ONNX model run by TensorFlow in NHWC (see `tf_onnx`), XLA-compiled with `xla`."""
    from .tf_onnx import TfOnnxModel

    return TfOnnxModel(model).runner(inputs, xla)
