"""First-party plugins core knows by name, so errors can say what to ``pip install``."""

from __future__ import annotations

# target kind -> distribution that provides it (and the core extra that pulls it in)
TARGET_DISTRIBUTIONS = {
    "llvm": ("tensorforge-target-llvm", "llvm"),
    "cuda": ("tensorforge-target-cuda", "cuda"),
    "opencl": ("tensorforge-target-opencl", "opencl"),
    "metal": ("tensorforge-target-metal", "metal"),
    "vdla": ("tensorforge-target-vdla", "vdla"),
}
# first word of a tag -> target kind whose plugin registers such tags
TAG_VENDORS = {"amd": "llvm", "intel": "llvm", "arm": "llvm", "nvidia": "cuda", "apple": "metal",
               "vdla": "vdla"}
FRONTEND_DISTRIBUTIONS = {"onnx": ("tensorforge-frontend-onnx", "onnx")}
COST_MODEL_DISTRIBUTIONS = {"xgboost": ("tensorforge-costmodel-xgboost", "xgboost")}

#: every first-party plugin distribution; these load before third-party ones
FIRST_PARTY = frozenset(
    dist
    for table in (TARGET_DISTRIBUTIONS, FRONTEND_DISTRIBUTIONS, COST_MODEL_DISTRIBUTIONS)
    for dist, _ in table.values()
)


def install_hint(dist_and_extra: tuple[str, str]) -> str:
    dist, extra = dist_and_extra
    return f"pip install {dist}  (or: pip install 'tensorforge[{extra}]')"
