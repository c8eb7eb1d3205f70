"""Import TensorFlow and Keras models into the tensorforge graph IR.

Importing this package is cheap: TensorFlow (seconds to import) loads when a model does."""

from typing import Any

from tensorforge_tensorflow._version import __version__


def load(model: Any, input_shapes: Any = None, **options: Any) -> Any:
    """Import a Keras model, .keras/.h5 file, SavedModel directory or frozen .pb as a
    static-shaped graph (see `tensorforge_tensorflow.frontend.load`)."""
    from .frontend import load as _load

    return _load(model, input_shapes, **options)


def unsupported_ops(model: Any, signature: str | None = None) -> list[str]:
    """The ops of `model` the frontend cannot convert, with their nodes."""
    from .frontend import unsupported_ops as _u

    return _u(model, signature)


def supported_ops() -> list[str]:
    """The TensorFlow op types the frontend converts."""
    from .dispatch import supported_ops as _s

    return _s()


__all__ = ["__version__", "load", "supported_ops", "unsupported_ops"]
