"""The torchvision model families of the benchmark (issue 15): ONNX files exported by
`benchmarks/export_torchvision.py` (torch and torchvision are a benchmark extra, never needed
to run them) into the model cache, `$TENSORFORGE_MODEL_CACHE` or `benchmarks/.models`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

FAMILIES = ("resnet50", "regnet_x_400mf", "resnext50_32x4d", "shufflenet_v2_x1_0",
            "densenet121", "deeplabv3_mobilenet_v3_large", "efficientnet_b0")


def cache_dir() -> Path:
    env = os.environ.get("TENSORFORGE_MODEL_CACHE")
    return Path(env) if env else Path.cwd() / "benchmarks" / ".models"


def family_path(name: str) -> Path | None:
    """The TorchScript export of family `name` in the cache, if it is there."""
    path = cache_dir() / f"{name}.onnx"
    return path if path.is_file() else None


def available() -> tuple[str, ...]:
    return tuple(n for n in FAMILIES if family_path(n) is not None)


def load(name: str, seed: int = 0) -> tuple[Any, dict[str, np.ndarray]]:
    """(ONNX ModelProto, seeded standard-normal inputs) of an exported family."""
    import onnx

    from ..errors import TensorforgeError

    path = family_path(name)
    if path is None:
        raise TensorforgeError(f"model family {name!r} is not exported to {cache_dir()}: run "
                               "benchmarks/export_torchvision.py (needs torch, torchvision)")
    model = onnx.load(str(path))
    rng = np.random.default_rng(seed)
    inits = {i.name for i in model.graph.initializer}
    inputs = {}
    for i in model.graph.input:
        if i.name in inits:
            continue
        shape = [d.dim_value or 1 for d in i.type.tensor_type.shape.dim]
        inputs[i.name] = rng.standard_normal(shape).astype(np.float32)
    return model, inputs
