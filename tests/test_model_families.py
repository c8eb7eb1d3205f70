"""The torchvision model families of issue 15, at reduced width, against ONNX Runtime.

`tests/data/families/` holds small exports (`benchmarks/export_torchvision.py --tiny`, random
seeded weights; `<name>.onnx` from the TorchScript exporter, `<name>.dynamo.onnx` from the
dynamo one) with the op patterns of the full models: grouped convolutions (RegNet), channel
shuffle with split/slice (ShuffleNetV2), dense concatenation (DenseNet), dilated convolutions
with bilinear resizing and hard-swish SE blocks (DeepLabV3 on MobileNetV3), SE + SiLU
(EfficientNet), depthwise (MobileNetV2). torch is not needed to run these tests.

- No cliffs: every fused group of every model whose master op is a convolution, a dense
  product or a pool gets a strategy of the llvm target, not the generic schedule (checked on
  the graph plan for both exporters, and on the compiled kernels' schedules).
- Layout: the blocked NCHW[x]c form is carried through the families' patterns: only the
  network input and the classifier's flatten change layout, except where a channel count
  has no block (EfficientNet's SE reductions to 2-10 channels).
- Correctness: compiled (1 and 2 threads; the dynamo exports at 1) == ONNX Runtime within
  rtol 1e-4, atol 1e-5.
- Zero-copy concat: DenseNet's, ShuffleNet's and DeepLab's concats copy no bytes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")

DATA = Path(__file__).resolve().parent / "data" / "families"
MODELS = sorted(p.name for p in DATA.glob("*.onnx"))
BASE = sorted(m for m in MODELS if not m.endswith(".dynamo.onnx"))
RTOL, ATOL = 1e-4, 1e-5
# value-level layout transforms each model may keep (network input + flatten = 2; a
# segmentation head of 5 classes and SE reductions to 2-10 channels have no block)
MAX_TRANSFORMS = {"efficientnet_tiny": 12, "deeplab_tiny": 3,
                  "regnet_tiny": 3}  # groups of 8 channels re-block their input (16 lanes)


def _heavy(op: str) -> bool:
    """A convolution, dense product or pool (the ops that must never run generic)."""
    return "conv" in op or "dense" in op or "pool" in op or op == "matmul"


def test_every_family_is_there() -> None:
    names = {m.split(".")[0] for m in MODELS}
    assert {"regnet_tiny", "shufflenet_tiny", "densenet_tiny", "deeplab_tiny",
            "efficientnet_tiny", "mobilenet_v2_tiny"} <= names
    for m in MODELS:
        assert (DATA / m).stat().st_size < 2 * 2**20, m


@pytest.mark.parametrize("model", MODELS)
def test_no_generic_schedule_in_plan(model: str, llvm_target, plugins) -> None:
    """Every conv / dense / pool group has an llvm strategy (no generic cliff)."""
    from tensorforge.compiler.compile import plan
    from tensorforge.graph.passes.layout_nchwc import count_layout_transforms
    from tensorforge.plugins import get_registry

    plugins.register("tensorforge_onnx.plugin")
    p = plan(str(DATA / model), llvm_target)
    strategies = get_registry().strategies(llvm_target)
    heavy = [g for g in p.groups if _heavy(g.master.op)]
    assert len(heavy) >= 5
    generic = [f"{g.name} ({g.master.op})" for g in heavy if g.master.op not in strategies]
    assert not generic, f"generic schedule for {generic}"
    allowed = MAX_TRANSFORMS.get(model.split(".")[0], 2)
    assert count_layout_transforms(p.graph) <= allowed


def _reference(path: Path) -> tuple[dict[str, np.ndarray], np.ndarray]:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    x = np.random.default_rng(0).standard_normal(inp.shape).astype(np.float32)
    return {inp.name: x}, sess.run(None, {inp.name: x})[0]


# TorchScript exports at 1 and 2 threads, the dynamo exporter's at 1
CASES = [(m, t) for m in BASE for t in (1, 2)] + [(m, 1) for m in MODELS if m not in BASE]


@pytest.mark.slow
@pytest.mark.parametrize("model,threads", CASES)
def test_family_matches_onnxruntime(model: str, threads: int, llvm_target, plugins) -> None:
    """Compiled == ONNX Runtime, and the compiled heavy kernels use their strategies."""
    import warnings

    import tensorforge

    plugins.register("tensorforge_onnx.plugin")
    inputs, ref = _reference(DATA / model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a schedule that fails falls back with a warning
        compiled = tensorforge.compile(str(DATA / model),
                                       f"{llvm_target} -num-threads={threads}")
    bad = [(k["group"], k["schedule"]) for k in compiled.desc["kernels"]
           if _heavy(k["master"]) and not k["schedule"].startswith("strategy")]
    assert not bad
    if model.startswith(("densenet", "shufflenet", "deeplab")):  # zero-copy concats
        assert compiled.desc["memory"]["concat_copy_bytes"] == 0
    out = np.asarray(compiled.run(inputs)[0])
    assert out.shape == ref.shape
    np.testing.assert_allclose(out, ref, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("threads", [1, 2])
def test_split_after_a_channel_shuffle_takes_the_shuffle_schedule(threads: int, llvm_target,
                                                                   plugins) -> None:
    """The Dynamo exporter splits ShuffleNetV2's shuffled tensor (`split(shuffle(x))`) where
    TorchScript slices it; the fused shuffle + split group is scheduled as the shuffle
    (`split/lanes`: blocks unrolled, lanes a vector), not by the generic schedule's per-lane
    index arithmetic (5.6x slower on the full model's 28x28 layers), and its parts match
    ONNX Runtime."""
    import tensorforge

    plugins.register("tensorforge_onnx.plugin")
    path = DATA / "shufflenet_tiny.dynamo.onnx"
    inputs, ref = _reference(path)
    compiled = tensorforge.compile(str(path), f"{llvm_target} -num-threads={threads}")
    split = [k for k in compiled.desc["kernels"] if k["ops"][:2] == ["channel_shuffle", "split"]]
    assert split  # the tiny model has one such group (the full model 13)
    assert all(k["schedule"] == "strategy split/lanes" for k in split), split
    np.testing.assert_allclose(np.asarray(compiled.run(inputs)[0]), ref, rtol=RTOL, atol=ATOL)
