"""Export the torchvision model families of issue 15 to ONNX (random weights, seeded).

    /work/torchenv/bin/python benchmarks/export_torchvision.py             # full-size, cache
    /work/torchenv/bin/python benchmarks/export_torchvision.py --tiny      # the test models
    ... --only shufflenet_v2,densenet121 --exporter torchscript

Needs torch and torchvision (the benchmark extra, never CI's install; the dynamo exporter
also needs onnxscript). Two sets:

- **full** (`FULL`): the torchvision architectures at batch 1, 224x224 (DeepLabV3 at 224x224
  too), exported into the cache directory (`$TENSORFORGE_MODEL_CACHE`, default
  `benchmarks/.models/`, ignored by git: DenseNet-121 alone is 32 MB).
- **tiny** (`TINY`): reduced-width versions of each family with the same op patterns (grouped
  conv, channel shuffle, dense concat, dilated conv + bilinear resize, squeeze-and-excitation
  + SiLU / hard-swish), each under 2 MB, written to `tests/data/families/` and committed, so
  CI tests the patterns without torch.

Each model is exported with both exporters where they work: TorchScript (`dynamo=False`,
`<name>.onnx`) and dynamo (`dynamo=True`, `<name>.dynamo.onnx`); a failing exporter is
reported and skipped. Weights are random (`torch.manual_seed(seed)`, torchvision's own
initialisation), and batch-norm statistics are randomised too (running mean ~ N(0, 0.1),
variance ~ U(0.5, 1.5)) so that folding them is exercised, not the identity.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TINY_DIR = ROOT / "tests" / "data" / "families"
CACHE = Path(os.environ.get("TENSORFORGE_MODEL_CACHE", ROOT / "benchmarks" / ".models"))
OPSET = 17  # TorchScript exporter; the dynamo exporter implements 18 and up
DYNAMO_OPSET = 18


@dataclass(frozen=True)
class Family:
    name: str
    build: Callable[[], object]  # -> torch.nn.Module (random weights)
    shape: tuple[int, ...]
    pattern: str


def _tv():
    import torchvision

    return torchvision.models


def _deeplab_full():
    return _tv().segmentation.deeplabv3_mobilenet_v3_large(
        weights=None, weights_backbone=None, aux_loss=False)


class _Segmenter:
    """DeepLabV3's forward without the dict output (one tensor out, bilinear upsampling)."""

    def __new__(cls, model):
        import torch.nn.functional as F
        from torch import nn

        class Seg(nn.Module):
            def __init__(self, m):
                super().__init__()
                self.backbone, self.classifier = m.backbone, m.classifier

            def forward(self, x):
                y = self.classifier(self.backbone(x)["out"])
                return F.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=False)

        return Seg(model)


def _deeplab_tiny():
    """MobileNetV3-Large at width 0.25, dilated (the torchvision backbone of DeepLabV3), with
    an ASPP head of 16 channels (torchvision's fixed 256 would be 6 MB)."""
    from torch import nn
    from torchvision.models import mobilenetv3
    from torchvision.models.segmentation.deeplabv3 import ASPP, DeepLabV3

    setting, last = mobilenetv3._mobilenet_v3_conf("mobilenet_v3_large", width_mult=0.25,
                                                    dilated=True)
    backbone = mobilenetv3.MobileNetV3(setting, last).features
    out_ch = backbone[-1].out_channels
    from torchvision.models._utils import IntermediateLayerGetter

    body = IntermediateLayerGetter(backbone, return_layers={str(len(backbone) - 1): "out"})
    head = nn.Sequential(ASPP(out_ch, [2, 4, 6], out_channels=16),
                         nn.Conv2d(16, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16),
                         nn.ReLU(), nn.Conv2d(16, 5, 1))
    return DeepLabV3(body, head)


def _regnet_tiny():
    from torchvision.models import regnet

    params = regnet.BlockParams(depths=[1, 2], widths=[32, 64], group_widths=[8, 16],
                                bottleneck_multipliers=[1.0, 1.0], strides=[2, 2],
                                se_ratio=None)
    return regnet.RegNet(params, num_classes=10, stem_width=16)


def _effnet_tiny():
    from torchvision.models import efficientnet

    setting, last = efficientnet._efficientnet_conf("efficientnet_b0", width_mult=0.25,
                                                   depth_mult=0.34)
    return efficientnet.EfficientNet(setting, 0.2, num_classes=10, last_channel=last)


FULL = [
    Family("resnet18", lambda: _tv().resnet18(), (1, 3, 224, 224), "residual"),
    Family("resnet50", lambda: _tv().resnet50(), (1, 3, 224, 224), "bottleneck"),
    Family("mobilenet_v2", lambda: _tv().mobilenet_v2(), (1, 3, 224, 224), "depthwise"),
    Family("squeezenet1_1", lambda: _tv().squeezenet1_1(), (1, 3, 224, 224), "fire concat"),
    Family("regnet_x_400mf", lambda: _tv().regnet_x_400mf(), (1, 3, 224, 224), "grouped conv"),
    Family("resnext50_32x4d", lambda: _tv().resnext50_32x4d(), (1, 3, 224, 224),
           "grouped conv"),
    Family("shufflenet_v2_x1_0", lambda: _tv().shufflenet_v2_x1_0(), (1, 3, 224, 224),
           "channel shuffle"),
    Family("densenet121", lambda: _tv().densenet121(), (1, 3, 224, 224), "dense concat"),
    Family("deeplabv3_mobilenet_v3_large", lambda: _Segmenter(_deeplab_full()),
           (1, 3, 224, 224), "dilated conv + bilinear resize + SE/hard-swish"),
    Family("efficientnet_b0", lambda: _tv().efficientnet_b0(), (1, 3, 224, 224), "SE + SiLU"),
]

TINY = [
    Family("regnet_tiny", _regnet_tiny, (1, 3, 64, 64), "grouped conv"),
    Family("shufflenet_tiny",
           lambda: _tv().ShuffleNetV2([2, 1, 1], [8, 16, 32, 64, 128], num_classes=10),
           (1, 3, 64, 64), "channel shuffle"),
    Family("densenet_tiny",
           lambda: _tv().DenseNet(growth_rate=8, block_config=(2, 2, 2), num_init_features=16,
                                  bn_size=2, num_classes=10), (1, 3, 64, 64), "dense concat"),
    Family("deeplab_tiny", lambda: _Segmenter(_deeplab_tiny()), (1, 3, 64, 64),
           "dilated conv + bilinear resize"),
    Family("efficientnet_tiny", _effnet_tiny, (1, 3, 64, 64), "SE + SiLU"),
    Family("mobilenet_v2_tiny", lambda: _tv().mobilenet_v2(width_mult=0.25, num_classes=10),
           (1, 3, 64, 64), "depthwise"),
]


def _randomize_bn(model, gen) -> None:
    import torch

    for m in model.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) + 0.5)


def export(fam: Family, out_dir: Path, exporters: list[str], seed: int = 0) -> list[str]:
    """Export one family with each exporter; returns the lines to print."""
    import torch

    torch.manual_seed(seed)
    model = fam.build().eval()
    _randomize_bn(model, torch.Generator().manual_seed(seed))
    x = torch.randn(fam.shape, generator=torch.Generator().manual_seed(seed + 1))
    lines = []
    for exp in exporters:
        path = out_dir / (f"{fam.name}.onnx" if exp == "torchscript" else f"{fam.name}.dynamo.onnx")
        t0 = time.perf_counter()
        try:
            with torch.no_grad():
                kw = {"dynamo": exp == "dynamo", "verbose": False,
                      "opset_version": DYNAMO_OPSET if exp == "dynamo" else OPSET,
                      "input_names": ["input"], "output_names": ["output"]}
                if exp == "dynamo":
                    kw["external_data"] = False
                torch.onnx.export(model, (x,), str(path), **kw)
        except Exception as exc:  # an exporter that cannot take this model: report, go on
            lines.append(f"{fam.name:32s} {exp:11s} FAILED {type(exc).__name__}: "
                         f"{str(exc).splitlines()[0][:120] if str(exc) else ''}")
            continue
        size = path.stat().st_size
        lines.append(f"{fam.name:32s} {exp:11s} {size / 2**20:7.2f} MB "
                     f"{time.perf_counter() - t0:6.1f} s  {path}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="the reduced test models (committed)")
    ap.add_argument("--only", default="", help="comma list of family names")
    ap.add_argument("--exporter", default="torchscript,dynamo",
                    help="torchscript, dynamo or both (comma list)")
    ap.add_argument("--out", default="", help="output directory (default: see module doc)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    fams = TINY if args.tiny else FULL
    if args.only:
        want = set(args.only.split(","))
        fams = [f for f in fams if f.name in want]
    out = Path(args.out) if args.out else (TINY_DIR if args.tiny else CACHE)
    out.mkdir(parents=True, exist_ok=True)
    import warnings

    warnings.filterwarnings("ignore")
    for fam in fams:
        for line in export(fam, out, args.exporter.split(","), args.seed):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
