"""Export PyTorch transformers to ONNX with both exporters (random weights, seeded).

    /work/torchenv/bin/python benchmarks/export_transformers.py            # full-size, cache
    /work/torchenv/bin/python benchmarks/export_transformers.py --tiny     # the test models

Needs torch and torchvision (the benchmark extra, never CI's install; the dynamo exporter
also needs onnxscript). Models:

- `transformer_encoder`: `nn.TransformerEncoder` of `nn.TransformerEncoderLayer`s
  (batch_first, GELU, a key padding mask given as a bool input), what a user who writes
  their own model exports. Full: 6 layers, d 512, 8 heads, feed-forward 2048, sequence 128.
- `vit_b_16`: torchvision's `vit_b_16` (224x224, 12 layers, d 768). The tiny version is
  torchvision's `VisionTransformer` class at image 32, patch 8, 2 layers, d 64.

Each is exported with TorchScript (`dynamo=False`, `<name>.onnx`, opset 17) and dynamo
(`dynamo=True`, `<name>.dynamo.onnx`, opset 18); a failing exporter is reported and skipped.
**tiny** versions (each under 2 MB, same op patterns) go to `tests/data/transformers/` and are
committed so CI tests them without torch, with their inputs and the PyTorch outputs
(`<name>.npz`); **full** ones go to the cache (`$TENSORFORGE_MODEL_CACHE`, default
`benchmarks/.models/`, ignored by git).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TINY_DIR = ROOT / "tests" / "data" / "transformers"
CACHE = Path(os.environ.get("TENSORFORGE_MODEL_CACHE", ROOT / "benchmarks" / ".models"))
OPSET, DYNAMO_OPSET = 17, 18


@dataclass(frozen=True)
class Export:
    name: str
    build: Callable[[], object]  # -> (torch.nn.Module, example inputs: dict name -> tensor)


def _encoder(layers: int, d: int, heads: int, ff: int, seq: int) -> Callable[[], object]:
    def build() -> object:
        import torch
        from torch import nn

        class Encoder(nn.Module):
            """`nn.TransformerEncoder` with a key padding mask (True: padding)."""

            def __init__(self) -> None:
                super().__init__()
                layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0,
                                                   activation="gelu", batch_first=True)
                # the nested-tensor fast path is a training/eager optimisation; exports
                # see the plain computation either way
                self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

            def forward(self, x: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
                return self.encoder(x, src_key_padding_mask=padding)

        x = torch.randn(1, seq, d)
        padding = torch.zeros(1, seq, dtype=torch.bool)
        padding[0, seq - seq // 8:] = True
        return Encoder().eval(), {"x": x, "padding": padding}

    return build


def _vit(tiny: bool) -> Callable[[], object]:
    def build() -> object:
        import torch
        import torchvision

        if tiny:
            from torchvision.models.vision_transformer import VisionTransformer

            model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                                      hidden_dim=64, mlp_dim=128, num_classes=10)
            # the classifier head starts at zero in torchvision: give it weights
            torch.nn.init.normal_(model.heads.head.weight, std=0.1)
            size = 32
        else:
            model = torchvision.models.vit_b_16(weights=None)
            torch.nn.init.normal_(model.heads.head.weight, std=0.02)
            size = 224
        return model.eval(), {"input": torch.randn(1, 3, size, size)}

    return build


TINY = [Export("transformer_encoder_tiny", _encoder(2, 64, 4, 128, 32)),
        Export("vit_tiny", _vit(True))]
FULL = [Export("transformer_encoder", _encoder(6, 512, 8, 2048, 128)),
        Export("vit_b_16", _vit(False))]


def export(e: Export, out: Path, seed: int = 0) -> list[Path]:
    """Both exports of `e` (and the inputs + PyTorch outputs as .npz); the written paths."""
    import numpy as np
    import torch

    torch.manual_seed(seed)
    model, inputs = e.build()
    names = list(inputs)
    args = tuple(inputs.values())
    with torch.inference_mode():
        expected = model(*args)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for suffix, dynamo, opset in ((".onnx", False, OPSET), (".dynamo.onnx", True, DYNAMO_OPSET)):
        path = out / f"{e.name}{suffix}"
        try:
            torch.onnx.export(model, args, str(path), input_names=names,
                              output_names=["output"], opset_version=opset, dynamo=dynamo,
                              external_data=False)
        except Exception as exc:  # one exporter failing must not stop the other
            print(f"{path.name}: export failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        written.append(path)
        print(f"{path}  {path.stat().st_size / 2**20:.2f} MB")
    npz = out / f"{e.name}.npz"
    np.savez(npz, **{k: v.numpy() for k, v in inputs.items()}, output=expected.numpy())
    written.append(npz)
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tiny", action="store_true", help="the small test models")
    p.add_argument("--out", type=Path, help="output directory")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    todo = TINY if args.tiny else FULL
    out = args.out or (TINY_DIR if args.tiny else CACHE)
    for e in todo:
        export(e, out, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
