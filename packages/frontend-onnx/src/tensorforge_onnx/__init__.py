"""Import ONNX models into the tensorforge graph IR."""

from tensorforge_onnx._version import __version__

__all__ = ["__version__"]
