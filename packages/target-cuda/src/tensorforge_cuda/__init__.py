"""NVIDIA GPUs: CUDA C code generation, NVRTC compilation (the `nvrtc` extra) and a runtime."""

from tensorforge_cuda._version import __version__

__all__ = ["__version__"]
