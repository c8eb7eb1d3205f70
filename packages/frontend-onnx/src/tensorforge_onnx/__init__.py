"""Import ONNX models into the tensorforge graph IR."""

from tensorforge_onnx._version import __version__


def load(model, input_shapes=None, **options):  # type: ignore[no-untyped-def]
    """Import an ONNX model (path, bytes or ModelProto) as a static-shaped graph."""
    from .frontend import load as _load

    return _load(model, input_shapes, **options)


def supported_ops() -> dict[str, tuple[int, int]]:
    """ONNX op_type -> (min, max) op version the frontend converts."""
    from .dispatch import supported_ops as _s

    return _s()


__all__ = ["__version__", "load", "supported_ops"]
