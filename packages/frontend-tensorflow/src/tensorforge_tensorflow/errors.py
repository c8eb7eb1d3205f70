"""The errors the TensorFlow frontend raises on purpose; each says what to do about it."""

from __future__ import annotations

from tensorforge.errors import TensorforgeError


class TensorFlowImportError(TensorforgeError):
    """Base class: the model could not be imported."""


class TensorFlowMissingError(TensorFlowImportError, ImportError):
    """TensorFlow is not installed (it reads the model files and traces Keras models)."""


class ModelFileError(TensorFlowImportError, ValueError):
    """The file or directory is missing, truncated, corrupt, incomplete (a SavedModel without
    its variables) or not a TensorFlow model."""


class UnsupportedOpError(TensorFlowImportError, NotImplementedError):
    """The graph uses ops the frontend does not convert (all of them are listed)."""


class UnsupportedAttributeError(TensorFlowImportError, NotImplementedError):
    """An op uses an attribute value or an input form the frontend does not handle."""


class DynamicShapeError(TensorFlowImportError, ValueError):
    """A shape or value is not known at import (an unknown input dim without `input_shapes`,
    a loop whose trip count depends on data). `value_name` names the TensorFlow tensor."""

    def __init__(self, message: str, value_name: str | None = None):
        super().__init__(message)
        self.value_name = value_name
