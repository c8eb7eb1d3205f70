"""The models of the paper's evaluation (and SqueezeNet 1.1), built as ONNX with seeded weights.

`build(name, seed=0)` returns an `onnx.ModelProto`; `save(name, path)` writes it;
`MODELS[name].inputs` gives the input names, shapes and dtypes, and `example_inputs(name)`
a fixed-seed input. Nothing is downloaded: the architectures are written here with
`onnx.helper`, the weights drawn from `numpy.random.default_rng(seed)`. From the shell:
`python -m tensorforge_onnx.models resnet18 -o resnet18.onnx`."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx


@dataclass(frozen=True)
class ModelSpec:
    """A buildable model: `module` (in this package) has `build(seed, opset)`."""

    name: str
    module: str
    inputs: dict[str, tuple[tuple[int, ...], str]]
    description: str
    opset: int = 17


_IMAGE = {"input": ((1, 3, 224, 224), "float32")}

MODELS: dict[str, ModelSpec] = {s.name: s for s in (
    ModelSpec("resnet18", "resnet", _IMAGE, "ResNet-18, ImageNet"),
    ModelSpec("mobilenet_v2", "mobilenet", _IMAGE, "MobileNetV2 1.0, ImageNet"),
    ModelSpec("lstm_lm", "lstm", {"tokens": ((35, 1), "int64")},
              "2-layer LSTM language model, PTB small (vocab 10000, hidden 200, 35 steps)"),
    ModelSpec("lstm_lm_opset13", "lstm", {"tokens": ((35, 1), "int64")},
              "the LSTM language model at opset 13 (LSTM-7)", opset=13),
    ModelSpec("dqn", "dqn", {"input": ((1, 4, 84, 84), "float32")},
              "Nature DQN, 18 actions"),
    ModelSpec("dcgan", "dcgan", {"z": ((1, 100, 1, 1), "float32")},
              "DCGAN generator, 64x64 RGB"),
    ModelSpec("squeezenet1_1", "squeezenet", _IMAGE, "SqueezeNet 1.1, ImageNet"),
)}

PAPER_MODELS = ("resnet18", "mobilenet_v2", "lstm_lm", "dqn", "dcgan")


def _spec(name: str) -> ModelSpec:
    try:
        return MODELS[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(MODELS)}") from None


def build(name: str, seed: int = 0) -> onnx.ModelProto:
    """The model `name` with weights drawn from `default_rng(seed)`."""
    spec = _spec(name)
    mod = importlib.import_module(f"{__name__}.{spec.module}")
    return mod.build(seed=seed, opset=spec.opset)


def save(name: str, path: str | Path, seed: int = 0) -> Path:
    """Build `name` and write it to `path` (a .onnx file)."""
    path = Path(path)
    onnx.save_model(build(name, seed), str(path))
    return path


def example_inputs(name: str, seed: int = 0) -> dict[str, np.ndarray]:
    """A fixed-seed input for `name`: standard normal floats, token ids below 10000."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for key, (shape, dtype) in _spec(name).inputs.items():
        if dtype == "int64":
            out[key] = rng.integers(0, 10000, shape, dtype=np.int64)
        else:
            out[key] = rng.standard_normal(shape, dtype=np.float32)
    return out


__all__ = ["MODELS", "PAPER_MODELS", "ModelSpec", "build", "example_inputs", "save"]
