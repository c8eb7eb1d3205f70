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
- `gpt2_lm`: a GPT-2-like causal language model written as people write one in PyTorch
  today: token + position embeddings, pre-LN blocks with Q, K, V from one `nn.Linear` split
  in three, `F.scaled_dot_product_attention(is_causal=True)`, tanh GELU, a final LayerNorm
  and the head tied to the token embedding. Full: GPT-2 small (12 layers, d 768, 12 heads,
  vocabulary 50257, sequence 128); tiny: 2 layers, d 64, 4 heads, vocabulary 256, sequence 32.

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
                # the encoder deep-copies one layer: draw each copy's weights again (and
                # LayerNorm's) so that the layers differ, as in a trained model
                for m in self.encoder.modules():
                    if hasattr(m, "_reset_parameters"):
                        m._reset_parameters()
                    elif isinstance(m, nn.Linear):
                        m.reset_parameters()
                    elif isinstance(m, nn.LayerNorm):
                        nn.init.uniform_(m.weight, 0.8, 1.2)
                        nn.init.normal_(m.bias, std=0.05)

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


def _gpt2(layers: int, d: int, heads: int, vocab: int, seq: int) -> Callable[[], object]:
    def build() -> object:
        import torch
        import torch.nn.functional as F
        from torch import nn

        class Block(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
                self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
                self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"),
                                         nn.Linear(4 * d, d))

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                b, s, _ = x.shape
                q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
                q, k, v = (t.view(b, s, heads, d // heads).transpose(1, 2) for t in (q, k, v))
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                x = x + self.c_proj(y.transpose(1, 2).reshape(b, s, d))
                return x + self.mlp(self.ln_2(x))

        class CausalLM(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(1024, d)
                self.blocks = nn.ModuleList(Block() for _ in range(layers))
                self.ln_f = nn.LayerNorm(d)
                self.lm_head = nn.Linear(d, vocab, bias=False)
                self.lm_head.weight = self.wte.weight  # tied, as in GPT-2

            def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
                pos = torch.arange(input_ids.shape[1], device=input_ids.device)
                x = self.wte(input_ids) + self.wpe(pos)[None]
                for blk in self.blocks:
                    x = blk(x)
                return self.lm_head(self.ln_f(x))

        ids = torch.randint(0, vocab, (1, seq))
        return CausalLM().eval(), {"input_ids": ids}

    return build


TINY = [Export("transformer_encoder_tiny", _encoder(2, 64, 4, 128, 32)),
        Export("vit_tiny", _vit(True)),
        Export("gpt2_lm_tiny", _gpt2(2, 64, 4, 256, 32))]
FULL = [Export("transformer_encoder", _encoder(6, 512, 8, 2048, 128)),
        Export("vit_b_16", _vit(False)),
        Export("gpt2_lm", _gpt2(12, 768, 12, 50257, 128))]


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


#: the tiny exports also written with a dynamic sequence axis (`--dynamic`): TorchScript
#: exporter, `dynamic_axes` naming the sequence dim "seq" of every input and the output
DYNAMIC_DIR = TINY_DIR.parent / "transformers_dynamic"
#: (not transformer_encoder_tiny: the TorchScript trace of nn.MultiheadAttention bakes the
#: sequence length into a Reshape, so that export is not dynamic, for ONNX Runtime either)
DYNAMIC_AXES = {"gpt2_lm_tiny": {"input_ids": {1: "seq"}, "output": {1: "seq"}}}


def export_dynamic(e: Export, out: Path, seed: int = 0) -> Path:
    """`<name>.dynseq.onnx`: `e` exported with its sequence axis dynamic (DYNAMIC_AXES)."""
    import torch

    torch.manual_seed(seed)
    model, inputs = e.build()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{e.name}.dynseq.onnx"
    torch.onnx.export(model, tuple(inputs.values()), str(path), input_names=list(inputs),
                      output_names=["output"], opset_version=OPSET, dynamo=False,
                      dynamic_axes=DYNAMIC_AXES[e.name], external_data=False)
    print(f"{path}  {path.stat().st_size / 2**20:.2f} MB")
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tiny", action="store_true", help="the small test models")
    p.add_argument("--out", type=Path, help="output directory")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dynamic", action="store_true",
                   help=f"the tiny exports with a dynamic sequence axis, to {DYNAMIC_DIR}")
    p.add_argument("--only", help="comma-separated model names (default: all of the set)")
    args = p.parse_args(argv)
    if args.dynamic:
        for e in TINY:
            if e.name in DYNAMIC_AXES and (not args.only or e.name in args.only.split(",")):
                export_dynamic(e, args.out or DYNAMIC_DIR, args.seed)
        return 0
    todo = TINY if args.tiny else FULL
    if args.only:
        todo = [e for e in todo if e.name in args.only.split(",")]
    out = args.out or (TINY_DIR if args.tiny else CACHE)
    for e in todo:
        export(e, out, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
