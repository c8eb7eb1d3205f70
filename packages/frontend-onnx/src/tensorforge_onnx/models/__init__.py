"""The models of the paper's evaluation (and SqueezeNet 1.1), and three transformers (BERT-like,
GPT-2-like, ViT-B/16), built as ONNX with seeded weights.

`build(name, seed=0, **config)` returns an `onnx.ModelProto`; `save(name, path)` writes it;
`MODELS[name].inputs` gives the input names, shapes and dtypes, and `example_inputs(name)`
a fixed-seed input. The transformers take size options (`MODELS[name].config` holds their
defaults: `layers`, `seq`, ...), e.g. `build("bert", layers=2, seq=32)`; `input_specs(name,
**config)` and `example_inputs(name, **config)` follow them. Nothing is downloaded: the
architectures are written here with `onnx.helper`, the weights drawn from
`numpy.random.default_rng(seed)`. From the shell:
`python -m tensorforge_onnx.models resnet18 -o resnet18.onnx`."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx


@dataclass(frozen=True)
class ModelSpec:
    """A buildable model: `module` (in this package) has `build(seed, opset, **config)`;
    `config`: the size options it takes and their defaults (a module with options also has
    `inputs(**config)` and `example_inputs(rng, **config)`)."""

    name: str
    module: str
    inputs: dict[str, tuple[tuple[int, ...], str]]
    description: str
    opset: int = 17
    config: tuple[tuple[str, int], ...] = ()


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
    ModelSpec("bert", "bert", {k: ((1, 128), "int64") for k in (
        "input_ids", "token_type_ids", "attention_mask")},
        "BERT-base-like encoder: 12 layers, d 768, 12 heads, seq 128",
        config=(("layers", 12), ("seq", 128), ("d", 768), ("heads", 12), ("hidden", 3072),
                ("vocab", 30522), ("dynamic", 0))),
    ModelSpec("gpt2", "gpt2", {"input_ids": ((1, 128), "int64")},
              "GPT-2-small-like decoder with a causal mask and LM head: 12 layers, d 768, "
              "seq 128", config=(("layers", 12), ("seq", 128), ("d", 768), ("heads", 12),
                                 ("hidden", 3072), ("vocab", 50257))),
    ModelSpec("vit_b_16", "vit", _IMAGE, "ViT-B/16: 16x16 patches, 12 layers, d 768, seq 197",
              config=(("layers", 12), ("image", 224), ("patch", 16), ("d", 768),
                      ("heads", 12), ("hidden", 3072), ("classes", 1000))),
)}

TRANSFORMERS = ("bert", "gpt2", "vit_b_16")

PAPER_MODELS = ("resnet18", "mobilenet_v2", "lstm_lm", "dqn", "dcgan")


def _spec(name: str) -> ModelSpec:
    try:
        return MODELS[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(MODELS)}") from None


def _module(spec: ModelSpec, config: dict[str, int]) -> Any:
    bad = set(config) - {k for k, _ in spec.config}
    if bad:
        known = ", ".join(k for k, _ in spec.config) or "none"
        raise TypeError(f"model {spec.name!r} has no option {', '.join(sorted(bad))} "
                        f"(its options: {known})")
    return importlib.import_module(f"{__name__}.{spec.module}")


def build(name: str, seed: int = 0, **config: int) -> onnx.ModelProto:
    """The model `name` with weights drawn from `default_rng(seed)`; `config` overrides the
    size options of `MODELS[name].config` (a transformer's `layers`, `seq` ...)."""
    spec = _spec(name)
    return _module(spec, config).build(seed=seed, opset=spec.opset, **config)


def save(name: str, path: str | Path, seed: int = 0, **config: int) -> Path:
    """Build `name` and write it to `path` (a .onnx file)."""
    path = Path(path)
    onnx.save_model(build(name, seed, **config), str(path))
    return path


def input_specs(name: str, **config: int) -> dict[str, tuple[tuple[int, ...], str]]:
    """Input names -> (shape, dtype) of `name` built with `config`."""
    spec = _spec(name)
    mod = _module(spec, config)
    return mod.inputs(**config) if spec.config else dict(spec.inputs)


def example_inputs(name: str, seed: int = 0, **config: int) -> dict[str, np.ndarray]:
    """A fixed-seed input for `name`: standard normal floats, token ids below 10000 (the
    transformers: ids below their vocabulary, BERT's segments and padding mask)."""
    rng = np.random.default_rng(seed)
    spec = _spec(name)
    if spec.config:
        return _module(spec, config).example_inputs(rng, **config)
    out: dict[str, np.ndarray] = {}
    for key, (shape, dtype) in spec.inputs.items():
        if dtype == "int64":
            out[key] = rng.integers(0, 10000, shape, dtype=np.int64)
        else:
            out[key] = rng.standard_normal(shape, dtype=np.float32)
    return out


__all__ = ["MODELS", "PAPER_MODELS", "TRANSFORMERS", "ModelSpec", "build", "example_inputs",
           "input_specs", "save"]
