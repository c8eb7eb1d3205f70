"""The `metal` target's build: the shared GPU build with the Metal dialect. The module holds
MSL; on macOS `runtime.py` compiles and runs it through PyObjC's Metal bindings, elsewhere
`check.py` checks every source with clang against `include/metal_stdlib`."""

from __future__ import annotations

from typing import Any

from tensorforge.codegen.build import build_gpu

from .dialect import METAL

RUNTIME = "tensorforge_metal.runtime:MetalDevice"


def build(funcs: Any, target: Any) -> Any:
    return build_gpu(funcs, target, METAL, RUNTIME)
