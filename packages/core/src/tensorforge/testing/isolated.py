"""Run an exported package in a fresh interpreter where the compiler cannot be imported: what
`tensorforge.load` needs must be the runtime alone (numpy, ctypes, the target's runtime)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

#: the compiler's modules and heavy dependencies an exported model must not need
COMPILER_MODULES = ("tensorforge.te", "tensorforge.schedule", "tensorforge.tir",
                    "tensorforge.codegen", "tensorforge.graph", "tensorforge.compiler",
                    "tensorforge.autotune", "tensorforge_llvm", "llvmlite", "onnx",
                    "tensorforge_onnx")

_SCRIPT = textwrap.dedent("""
    import json, sys
    BLOCKED = json.loads(sys.argv[4])

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if any(name == b or name.startswith(b + ".") for b in BLOCKED):
                raise ImportError("blocked in this run: " + name)
            return None

    sys.meta_path.insert(0, Blocker())
    import numpy as np
    import tensorforge
    model = tensorforge.load(sys.argv[1])
    with np.load(sys.argv[2]) as z:
        inputs = {k: z[k] for k in z.files}
    np.savez(sys.argv[3], *model.run(inputs))
""")


def run_without_compiler(package: str | os.PathLike[str], inputs: Mapping[str, np.ndarray],
                         blocked: Sequence[str] = COMPILER_MODULES,
                         timeout: float = 300) -> list[np.ndarray]:
    """Outputs of `tensorforge.load(package).run(inputs)` in a subprocess that cannot import
    `blocked`; raises `AssertionError` with its stderr if it fails."""
    with tempfile.TemporaryDirectory(prefix="tf-isolated-") as d:
        script, ins, outs = Path(d, "run.py"), Path(d, "in.npz"), Path(d, "out.npz")
        script.write_text(_SCRIPT, encoding="utf-8")
        np.savez(ins, **dict(inputs))
        env = {**os.environ, "TENSORFORGE_PLUGINS": "none"}
        proc = subprocess.run([sys.executable, str(script), os.fspath(package), str(ins),
                               str(outs), json.dumps(list(blocked))], capture_output=True,
                              text=True, env=env, timeout=timeout)
        assert proc.returncode == 0, f"loading {package} without the compiler failed:\n" \
                                     f"{proc.stderr}"
        with np.load(outs) as z:
            return [z[f"arr_{i}"] for i in range(len(z.files))]
