"""PyTorch transformers exported with `torch.onnx.export`, compiled for llvm, against ONNX
Runtime (and the PyTorch outputs saved with them).

`tests/data/transformers/` holds reduced-size exports made by
`benchmarks/export_transformers.py --tiny` (random seeded weights; `<name>.onnx` from the
TorchScript exporter at opset 17, `<name>.dynamo.onnx` from the dynamo exporter at opset 18;
`<name>.npz` the inputs and PyTorch's output), so CI tests them without torch:

- `transformer_encoder_tiny`: `nn.TransformerEncoder` (2 layers, d 64, 4 heads, GELU,
  batch_first, a bool key padding mask as an input), sequence 32;
- `vit_tiny`: torchvision's `VisionTransformer` class at image 32, patch 8, 2 layers, d 64;
- `gpt2_lm_tiny`: a GPT-2-like causal LM (2 layers, d 64, 4 heads, vocabulary 256,
  sequence 32) with `F.scaled_dot_product_attention(is_causal=True)` and a tied head.

Tolerance: the issue's rtol 1e-4, atol 1e-5 x max |output| against ONNX Runtime (one
thread); against PyTorch rtol 1e-4, atol 1e-4 x max |output| (PyTorch's own kernels sum in
another order than both). Every layer's attention must be one fused `attention` kernel.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")

DATA = Path(__file__).resolve().parent / "data" / "transformers"
MODELS = sorted(p.name for p in DATA.glob("*.onnx"))
LAYERS = 2  # every tiny export has 2 layers
RTOL, ATOL_REL, TORCH_ATOL_REL = 1e-4, 1e-5, 1e-4


def _stem(model: str) -> str:
    return model.split(".")[0]


def test_every_export_is_there() -> None:
    for stem in ("transformer_encoder_tiny", "vit_tiny", "gpt2_lm_tiny"):
        for suffix in (".onnx", ".dynamo.onnx", ".npz"):
            path = DATA / f"{stem}{suffix}"
            assert path.exists(), f"{path.name}: run benchmarks/export_transformers.py --tiny"
            assert path.stat().st_size < 2 * 2**20, path.name


def _inputs_and_reference(model: str) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    saved = np.load(DATA / f"{_stem(model)}.npz")
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(DATA / model), so, providers=["CPUExecutionProvider"])
    inputs = {i.name: saved[i.name] for i in sess.get_inputs()}
    return inputs, sess.run(None, inputs)[0], saved["output"]


@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS)
def test_torch_export_matches_onnxruntime(model: str, llvm_target, plugins) -> None:
    import tensorforge

    plugins.register("tensorforge_onnx.plugin")
    inputs, ref, torch_out = _inputs_and_reference(model)
    compiled = tensorforge.compile(str(DATA / model), llvm_target)
    masters = [k["master"] for k in compiled.desc["kernels"]]
    assert masters.count("attention") == LAYERS, masters
    assert "softmax" not in masters and "matmul" not in masters
    out = np.asarray(compiled.run(inputs)[0])
    assert out.shape == ref.shape and out.dtype == ref.dtype
    scale = float(np.abs(ref).max())
    np.testing.assert_allclose(out, ref, rtol=RTOL, atol=ATOL_REL * scale)
    np.testing.assert_allclose(out, torch_out, rtol=RTOL, atol=TORCH_ATOL_REL * scale)
