"""The one-shot check for an NVIDIA GPU machine (driven by `gpu_check.sh`, which see).

Steps, each recorded in `$OUT/gpu_check.json` and `$OUT/gpu_check.md`:
1. imports: what is present and what is missing (nothing is installed from a registry);
2. the CUDA conformance suite on the device (`pytest -m cuda packages/target-cuda`);
3. the five paper models and SqueezeNet 1.1 compiled for `cuda -arch=<the device's>`,
   checked against ONNX Runtime CPU (max abs err / max abs ref < 1e-4) at batch 1 and 16
   (fresh samples along each model's batch axis, the LSTM's second; ONNX Runtime gets a copy
   of the model that declares the batch), timed (tensorforge: medians of
   `CompiledModel.benchmark`, arrays on the device between kernels; PyTorch CUDA eager and
   `torch.compile` where a PyTorch definition exists (torchvision's ResNet-18, MobileNetV2,
   SqueezeNet 1.1, random weights: timing only), timed with CUDA events).

`--dry` (no GPU, e.g. CI): the same steps up to the launch: the models compile and NVRTC
builds their cubins for the target arch; running stops at the device with the reason, and
the script exits 0 with the rows marked "stopped before the launch".
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

MODULES = ("numpy", "onnx", "onnxruntime", "tensorforge", "tensorforge_cuda",
           "tensorforge_onnx", "cuda.bindings.driver", "cuda.bindings.nvrtc", "torch",
           "torchvision")
TORCHVISION = {"resnet18": "resnet18", "mobilenet_v2": "mobilenet_v2",
               "squeezenet1_1": "squeezenet1_1"}


def check_imports() -> dict[str, str]:
    found = {}
    for name in MODULES:
        try:
            mod = importlib.import_module(name)
            found[name] = str(getattr(mod, "__version__", "ok"))
        except Exception as e:  # noqa: BLE001 - report whatever stops the import
            found[name] = f"MISSING ({type(e).__name__}: {str(e)[:120]})"
    return found


def conformance(limit_s: int) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "pytest", "-q", "-m", "cuda", "-p", "no:cacheprovider",
           "packages/target-cuda/tests", "tests/test_cuda_models.py"]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=limit_s)
        tail = proc.stdout.strip().splitlines()[-1:] or [""]
        return {"rc": proc.returncode, "summary": tail[0], "seconds": time.perf_counter() - t0}
    except subprocess.TimeoutExpired:
        return {"rc": None, "summary": f"stopped after {limit_s} s", "seconds": limit_s}


#: the batch axis of a model's inputs and outputs where it is not the first (the LSTM's
#: tokens are (steps, batch))
BATCH_AXIS = {"lstm_lm": 1}


def _batched(name: str, inputs: dict[str, np.ndarray], batch: int) -> dict[str, np.ndarray]:
    """Fresh fixed-seed inputs of `batch` samples along the model's batch axis (distinct
    samples, so a kernel that mixes up the samples of a batch cannot match the reference);
    token ids below 10000 like `models.example_inputs`."""
    axis, rng = BATCH_AXIS.get(name, 0), np.random.default_rng(batch)
    out = {}
    for key, v in inputs.items():
        shape = list(v.shape)
        shape[axis] = batch
        out[key] = (rng.integers(0, 10000, shape, dtype=v.dtype) if v.dtype.kind in "iu"
                    else rng.standard_normal(shape).astype(v.dtype))
    return out


def _reference_model(path: str, name: str, batch: int) -> str:
    """A copy of the ONNX model whose inputs declare `batch` on the batch axis and whose
    outputs leave it open: ONNX Runtime refuses a batch the model's shapes do not declare."""
    import onnx

    model, axis = onnx.load(path), BATCH_AXIS.get(name, 0)
    for value in model.graph.input:
        value.type.tensor_type.shape.dim[axis].dim_value = batch
    for value in model.graph.output:
        value.type.tensor_type.shape.dim[axis].dim_param = "batch"
    del model.graph.value_info[:]  # shapes at the declared batch: inferred again
    out = path.replace(".onnx", f".batch{batch}.onnx")
    onnx.save(model, out)
    return out


def _torch_row(name: str, x: np.ndarray, repeat: int) -> dict[str, Any]:
    try:
        import torch
        import torchvision
    except ImportError as e:
        return {"torch": f"n/a ({e})"}
    if name not in TORCHVISION or not torch.cuda.is_available():
        return {"torch": "n/a (no PyTorch definition)" if name not in TORCHVISION
                else "n/a (no CUDA in torch)"}
    model = getattr(torchvision.models, TORCHVISION[name])().cuda().eval()
    inp = torch.from_numpy(x).cuda()
    out: dict[str, Any] = {}
    for label, fn in (("torch_eager_ms", model), ("torch_compile_ms", None)):
        try:
            if fn is None:
                fn = torch.compile(model)
            with torch.no_grad():
                for _ in range(3):
                    fn(inp)
                times = []
                for _ in range(repeat):
                    start, end = torch.cuda.Event(True), torch.cuda.Event(True)
                    start.record()
                    fn(inp)
                    end.record()
                    end.synchronize()
                    times.append(start.elapsed_time(end))
            out[label] = float(np.median(times))
        except Exception as e:  # noqa: BLE001 - torch.compile may not work there
            out[label] = f"n/a ({type(e).__name__})"
    return out


def model_rows(names: list[str], batches: list[int], target: str, dry: bool,
               repeat: int) -> list[dict[str, Any]]:
    import onnxruntime as ort

    import tensorforge
    from tensorforge.runtime.device import DeviceUnavailable
    from tensorforge_cuda import nvrtc
    from tensorforge_onnx import models

    arch = target.split("-arch=")[1].split()[0] if "-arch=" in target else "sm_80"
    rows = []
    d = tempfile.mkdtemp()
    for name in names:
        path = str(models.save(name, os.path.join(d, name + ".onnx")))
        base = models.example_inputs(name)
        for batch in batches:
            row: dict[str, Any] = {"model": name, "batch": batch}
            rows.append(row)
            inputs = _batched(name, base, batch)
            shapes = {k: v.shape for k, v in inputs.items()}
            try:
                t0 = time.perf_counter()
                cm = tensorforge.compile(path, target=target, input_shapes=shapes)
                row["compile_s"] = round(time.perf_counter() - t0, 1)
                mods = getattr(cm.module, "modules", {"": cm.module}).values()
                row["kernels"] = len(cm.desc["kernels"])
                row["cubin_bytes"] = sum(len(nvrtc.compile_cuda(m.get_source(), arch).cubin)
                                         for m in mods
                                         if getattr(m, "desc", {}).get("target_kind") == "cuda")
            except Exception as e:  # noqa: BLE001 - record and go on to the next model
                row["status"] = f"compile failed: {type(e).__name__}: {str(e)[:200]}"
                continue
            try:
                (got,) = cm.run(inputs)[:1]
            except DeviceUnavailable as e:
                row["status"] = "stopped before the launch" + ("" if dry else f": {e}")
                continue
            except Exception as e:  # noqa: BLE001 - record and go on to the next model
                row["status"] = f"run failed: {type(e).__name__}: {str(e)[:200]}"
                continue
            try:
                sess = ort.InferenceSession(_reference_model(path, name, batch),
                                            providers=["CPUExecutionProvider"])
                ref = sess.run(None, inputs)[0]
            except Exception as e:  # noqa: BLE001 - record and go on to the next model
                row["status"] = f"reference failed: {type(e).__name__}: {str(e)[:200]}"
                continue
            if got.shape != ref.shape:
                row["status"] = f"MISMATCH: shape {got.shape}, ONNX Runtime's {ref.shape}"
                continue
            rel = float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))
            row["max_rel_err"] = rel
            row["status"] = "ok" if rel < 1e-4 else "MISMATCH"
            row["tensorforge_ms"] = cm.benchmark(inputs, repeat=repeat).median * 1e3
            x = next(iter(inputs.values()))
            row.update(_torch_row(name, x, repeat))
    return rows


def markdown(report: dict[str, Any]) -> str:
    lines = [f"# GPU check ({report['device']})", "",
             f"conformance: {report['conformance'].get('summary', '')}", "",
             "| model | batch | status | max rel err | tensorforge ms | torch eager ms | "
             "torch.compile ms |", "|---|---|---|---|---|---|---|"]
    def cell(r: dict[str, Any], k: str, fmt: str = "{:.3f}") -> str:
        v = r.get(k, "")
        return fmt.format(v) if isinstance(v, float) else str(v)

    for r in report["models"]:
        lines.append(f"| {r['model']} | {r['batch']} | {r.get('status', '')} | "
                     f"{cell(r, 'max_rel_err', '{:.1e}')} | {cell(r, 'tensorforge_ms')} | "
                     f"{cell(r, 'torch_eager_ms')} | {cell(r, 'torch_compile_ms')} |")
    missing = [k for k, v in report["imports"].items() if v.startswith("MISSING")]
    lines += ["", f"missing imports: {', '.join(missing) or 'none'}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "gpu_check_out"))
    ap.add_argument("--dry", action="store_true", help="no GPU: stop at the launch")
    ap.add_argument("--models", default="resnet18,mobilenet_v2,lstm_lm,dqn,dcgan,squeezenet1_1")
    ap.add_argument("--batches", default="1,16")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--conformance-s", type=int, default=150)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    imports = check_imports()
    print("imports:", json.dumps(imports, indent=1), flush=True)
    need = ("numpy", "onnx", "onnxruntime", "tensorforge", "tensorforge_cuda",
            "tensorforge_onnx", "cuda.bindings.nvrtc")
    if any(imports[n].startswith("MISSING") for n in need):
        print("gpu_check: cannot go on without: " + ", ".join(
            n for n in need if imports[n].startswith("MISSING")), file=sys.stderr)
        return 2
    from tensorforge_cuda.runtime import CUDADevice, cuda_status

    why = cuda_status()
    if why and not args.dry:
        print(f"gpu_check: {why}; use --dry on a machine without a GPU", file=sys.stderr)
        return 3
    device, target = "no device (dry run)", "cuda -arch=sm_90"
    if not why:
        dev = CUDADevice()
        device, target = dev.name, f"cuda -arch={dev.arch}"
    conf = {"summary": "skipped (dry run)"} if args.dry else conformance(args.conformance_s)
    print("conformance:", conf, flush=True)
    rows = model_rows(args.models.split(","), [int(b) for b in args.batches.split(",")],
                      target, args.dry, args.repeat)
    report = {"device": device, "target": target, "dry": args.dry, "imports": imports,
              "conformance": conf, "models": rows}
    (out / "gpu_check.json").write_text(json.dumps(report, indent=1, default=str))
    (out / "gpu_check.md").write_text(markdown(report))
    print(markdown(report))
    fine = ("ok", "stopped before the launch") if args.dry else ("ok",)
    bad = [r for r in rows if r.get("status") not in fine]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
