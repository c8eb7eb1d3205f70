"""Apple GPUs: Metal Shading Language code generation; a runtime on macOS (the `runtime` extra)."""

from tensorforge_metal._version import __version__

__all__ = ["__version__"]
